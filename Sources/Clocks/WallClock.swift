import Foundation
import Synchronization

/// The system clock as the daemon reads it, taken as a dependency. In production it is the real
/// one. Tests shift it, because a test machine's clock cannot be set to 1970 and libfaketime stalls
/// Swift's timed sleeps; the monotonic clock (`uptime()`) is never shifted.
public struct WallClock: Sendable {
    private let shift: @Sendable () -> Double

    /// `shift` gives the seconds to add to the real system time at each reading.
    public init(shift: @escaping @Sendable () -> Double) {
        self.shift = shift
    }

    public static let system = WallClock { 0 }

    public static func shifted(by seconds: Double) -> WallClock {
        WallClock { seconds }
    }

    /// A clock shifted by the number in the file at `path`, read again at most once a second, so a
    /// test can step the clock of a running daemon by rewriting the file. An unreadable file or
    /// anything but a number within ±200 years keeps the last shift. "A second" is on `monotonic`.
    public static func shifted(byFile path: String, monotonic: MonotonicClock = .system) -> WallClock {
        let state = Mutex<(shift: Double, readAt: Double?)>((0, nil))
        return WallClock {
            let now = monotonic.now()
            return state.withLock { state in
                if let readAt = state.readAt, now - readAt < 1 { return state.shift }
                state.readAt = now
                if let text = try? String(contentsOfFile: path, encoding: .utf8),
                    let value = Double(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                    abs(value) <= 200 * 365.25 * 86_400
                {
                    state.shift = value
                }
                return state.shift
            }
        }
    }

    public func now() -> Date {
        Date().addingTimeInterval(shift())
    }

    /// Both clocks at once.
    public func reading() -> ClockReading {
        ClockReading(uptime: uptime(), wall: now())
    }
}

/// A reading of both clocks: monotonic seconds for measuring intervals, wall time for stamping.
public struct ClockReading: Sendable, Equatable {
    public var uptime: Double
    public var wall: Date

    public init(uptime: Double, wall: Date) {
        self.uptime = uptime
        self.wall = wall
    }
}
