import Foundation
import Synchronization

/// The best known UTC, for every timestamp that goes on the wire. A box on a tractor often has no
/// battery-backed clock: it boots at 1970 or at its last shutdown, and NTP comes only with the
/// modem. The receiver knows the time, so:
///
/// - after a fix, the fix's GNSS time carried forward on the monotonic clock, which the system
///   clock being set or stepped cannot move;
/// - before any fix, the system clock, if it is plausible (not before `plausibleFrom`);
/// - otherwise unknown: the caller holds what it would have stamped rather than send a wrong time.
public final class TrueTime: Sendable {
    /// No correct clock reads earlier than this: the start of the year this version was made.
    public static let plausibleFrom = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    private struct Anchor {
        var gnss: Double
        var uptime: Double
    }

    private let anchor = Mutex<Anchor?>(nil)
    private let follows: Bool
    private let plausibleFrom: Date

    /// `followsGNSS` false uses the system clock alone: for replays, whose GNSS time is the recording's.
    /// `plausibleFrom` is for tests, which cannot set the system clock back to 1970.
    public init(followsGNSS: Bool = true, plausibleFrom: Date = TrueTime.plausibleFrom) {
        self.follows = followsGNSS
        self.plausibleFrom = plausibleFrom
    }

    /// Takes a sample's GNSS time as the truth, if it has a position and a time. The sample was
    /// known at `sampledAt` by the system clock; the monotonic reading is worked back from that.
    public func observe(_ sample: PositionSample, systemNow: Date = Date(), uptimeNow: Double = uptime()) {
        // A time before 2026 is no fix's true time: a receiver with the GPS week-rollover fault reports
        // 19.6 years back, and it must not override a correct system clock.
        guard follows, sample.state.hasPosition, let time = sample.receiverTime, time >= Self.plausibleFrom else { return }
        // How long ago the sample was known; bounded, so a clock step in between cannot skew it far.
        let age = min(max(systemNow.timeIntervalSince(sample.sampledAt), 0), 60)
        anchor.withLock { $0 = Anchor(gnss: time.timeIntervalSince1970, uptime: uptimeNow - age) }
    }

    /// The best known UTC now, or nil when it cannot be known yet.
    public func now(systemNow: Date = Date(), uptimeNow: Double = uptime()) -> Date? {
        if let anchor = anchor.withLock({ $0 }) {
            return Date(timeIntervalSince1970: anchor.gnss + (uptimeNow - anchor.uptime))
        }
        return systemNow >= plausibleFrom ? systemNow : nil
    }

    /// System clock minus the best known UTC, in seconds; nil when unknown.
    public func systemClockError(systemNow: Date = Date(), uptimeNow: Double = uptime()) -> Double? {
        now(systemNow: systemNow, uptimeNow: uptimeNow).map { systemNow.timeIntervalSince($0) }
    }

    /// A system time corrected to the best known UTC: the same instant on the true clock. Unchanged
    /// when the truth is unknown.
    public func corrected(_ systemTime: Date, systemNow: Date = Date(), uptimeNow: Double = uptime()) -> Date {
        guard let error = systemClockError(systemNow: systemNow, uptimeNow: uptimeNow) else { return systemTime }
        return systemTime.addingTimeInterval(-error)
    }
}
