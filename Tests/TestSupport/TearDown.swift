/// Runs `body`, then `tearDown`, awaited, whether `body` returned or threw: a test's local agrirouter,
/// broker, rig or gpsd stream ends before the test does (an unstructured `Task` in a `defer` could
/// outlive it).
///
///     let rig = try await Rig.make()
///     try await tearingDown({ await rig.close() }) {
///         ...
///     }
///
/// Both closures run in the caller's isolation, so they may use what the caller may use.
public func tearingDown<T>(
    isolation: isolated (any Actor)? = #isolation,
    _ tearDown: () async -> Void,
    _ body: () async throws -> T
) async rethrows -> T {
    let result: T
    do {
        result = try await body()
    } catch {
        await tearDown()
        throw error
    }
    await tearDown()
    return result
}
