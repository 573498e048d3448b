import Foundation
import GRDB

/// A send cycle's take written in the commit of the next sample's append: one disk sync for both
/// instead of one each, and the batch carries that newest sample. Each sync costs at least a page of
/// the kernel's cache, so at 1 Hz with a batch every 10 s this is a tenth of a page per sample less
/// written. The take is still durable before its batch goes out.
struct RidingTake {
    let requests: [Spool.BatchRequest]
    let byteBudget: Int
    let now: Double
    let token: UInt64
    private let continuation: CheckedContinuation<Result<[SpoolBatch], SpoolError>?, Never>

    init(
        requests: [Spool.BatchRequest], byteBudget: Int, now: Double, token: UInt64,
        continuation: CheckedContinuation<Result<[SpoolBatch], SpoolError>?, Never>
    ) {
        (self.requests, self.byteBudget, self.now, self.token, self.continuation) = (
            requests, byteBudget, now, token, continuation
        )
    }

    /// The committed take, or nil to take alone.
    func finish(_ result: Result<[SpoolBatch], SpoolError>?) {
        continuation.resume(returning: result)
    }
}

extension Spool {
    /// `takeBatches`, written in the commit of the next append if one comes within `seconds` (see
    /// `RidingTake`); alone, as `takeBatches` does, when none does or the append fails. `sleep` waits
    /// the given seconds or until cancelled (a test's clock can stand in).
    public func takeBatches(
        _ requests: [BatchRequest], byteBudget: Int, now: Date? = nil, ridingNextAppendWithin seconds: Double,
        sleep: @escaping @Sendable (Double) async -> Void = { try? await Task.sleep(for: .seconds($0)) }
    )
        async throws(SpoolError) -> [SpoolBatch]
    {
        let wanted = requests.filter { enabledOutputs.contains($0.output) }
        guard !wanted.isEmpty, seconds > 0, seconds.isFinite, database != nil else {
            return try takeBatches(requests, byteBudget: byteBudget, now: now)
        }
        let moment = (now ?? configuration.clock()).timeIntervalSince1970
        ridingTakes &+= 1
        let token = ridingTakes
        let rode = await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await sleep(seconds)
                await self.stopRiding(token)
            }
            let result = await withCheckedContinuation { continuation in
                // One publisher takes at a time; an earlier take still waiting goes alone.
                ridingTake?.finish(nil)
                ridingTake = RidingTake(
                    requests: wanted, byteBudget: byteBudget, now: moment, token: token, continuation: continuation)
            }
            group.cancelAll()
            return result
        }
        switch rode {
        case .success(let batches): return batches
        case .failure(let error): throw error
        case nil: return try takeBatches(requests, byteBudget: byteBudget, now: now)
        }
    }

    /// Whether a take waits for the next append (for tests that must append after it is waiting).
    public var takeWaitsForAppend: Bool { ridingTake != nil }

    /// The wait for an append is over: the take, if still waiting, goes alone.
    private func stopRiding(_ token: UInt64) {
        guard let riding = ridingTake, riding.token == token else { return }
        ridingTake = nil
        riding.finish(nil)
    }

    /// Runs `riding` inside the append's transaction, in a savepoint of its own: a take that fails
    /// leaves the append as it was and fails alone.
    func ride(_ riding: RidingTake, in db: Database) -> Result<[SpoolBatch], SpoolError> {
        let counted = uncommitted
        var batches: [SpoolBatch] = []
        do {
            try db.inSavepoint {
                batches = try take(riding.requests, byteBudget: riding.byteBudget, now: riding.now, in: db)
                return .commit
            }
            return .success(batches)
        } catch {
            uncommitted = counted
            return .failure(storageError(error))
        }
    }
}
