import Foundation

/// The monotonic clock as a dependency: seconds from an arbitrary start, and sleeping until a
/// reading. In production it is the system's (`uptime()`); a test hands in a manual one and moves
/// it on, so waits of minutes (spacing, backoff, staleness) pass in no real time at all.
public struct MonotonicClock: Sendable {
    private let reading: @Sendable () -> Double
    private let sleeping: @Sendable (Double) async throws -> Void

    /// `now` reads the clock; `sleepUntil` returns once the clock reads its argument or later, and
    /// throws `CancellationError` when its task is cancelled first.
    public init(
        now: @escaping @Sendable () -> Double, sleepUntil: @escaping @Sendable (Double) async throws -> Void
    ) {
        (reading, sleeping) = (now, sleepUntil)
    }

    /// CLOCK_MONOTONIC, which the system clock being set or stepped cannot move. Slept a day at a
    /// time at most: a `Duration` of a deadline far off (or infinite) would trap.
    public static let system = MonotonicClock(now: uptime) { deadline in
        try Task.checkCancellation()
        var left = deadline - uptime()
        while left > 0 {
            try await Task.sleep(for: .seconds(min(left, 86_400)))
            left = deadline - uptime()
        }
    }

    public func now() -> Double { reading() }

    /// Throws `CancellationError` when cancelled before the clock reads `deadline`.
    public func sleep(until deadline: Double) async throws { try await sleeping(deadline) }

    public func sleep(for seconds: Double) async throws { try await sleeping(reading() + max(0, seconds)) }
}
