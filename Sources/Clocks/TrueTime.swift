import Foundation
import Synchronization

/// The best known UTC, for every timestamp that goes on the wire. A box on a tractor often has no
/// battery-backed clock: it boots at 1970 or at its last shutdown, and NTP comes only with the
/// modem. The receiver knows the time, so:
///
/// - after a fix, the fix's GNSS time carried forward on the monotonic clock, which the system
///   clock being set or stepped cannot move;
/// - before any fix, agrirouter's clock from the `Date` of its last answer, carried forward alike;
/// - before either, the system clock, if it is plausible (not before `plausibleFrom`);
/// - otherwise unknown: the caller holds what it would have stamped rather than send a wrong time.
public final class TrueTime: Sendable {
    /// No correct clock reads earlier than this: the start of the year this version was made.
    public static let plausibleFrom = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    /// A true time and the monotonic reading it was true at.
    private struct Anchor {
        var time: Double
        var uptime: Double

        func at(uptime reading: Double) -> Double { time + (reading - uptime) }
    }

    /// From the last fix, and from agrirouter's answers: a fix wins, as it is exact; a server's
    /// `Date` is a second-resolution lower bound, good enough to keep stamps out of the future.
    private let anchors = Mutex<(gnss: Anchor?, server: Anchor?)>((nil, nil))
    private let follows: Bool
    private let plausibleFrom: Date
    /// The system clock this one corrects.
    public let wall: WallClock
    /// What the anchors are carried forward on: the samples' `sampledUptime` and the readings
    /// handed to `observe` are of this clock.
    public let monotonic: MonotonicClock

    /// `followsGNSS` false uses the system clock alone: for replays, whose GNSS time is the recording's.
    /// `plausibleFrom` is for tests, which cannot set the system clock back to 1970.
    public init(
        followsGNSS: Bool = true, plausibleFrom: Date = TrueTime.plausibleFrom, wall: WallClock = .system,
        monotonic: MonotonicClock = .system
    ) {
        self.follows = followsGNSS
        self.plausibleFrom = plausibleFrom
        self.wall = wall
        self.monotonic = monotonic
    }

    /// Takes a GNSS time, true at the monotonic reading `known`, as the truth. A time before
    /// `plausibleFrom` is no fix's true time: a receiver with the GPS week-rollover fault reports
    /// 19.6 years back, and it must not override a correct system clock.
    public func observe(gnssTime time: Date, atUptime known: Double) {
        guard follows, time >= Self.plausibleFrom else { return }
        anchors.withLock { $0.gnss = Anchor(time: time.timeIntervalSince1970, uptime: known) }
    }

    /// Takes a server's clock (an HTTP `Date`, read when its answer came) as a lower bound of the
    /// truth, until a fix gives the exact time. The latest bound wins, so stamps never step back.
    public func observe(serverTime: Date, uptimeNow: Double? = nil) {
        let uptimeNow = uptimeNow ?? monotonic.now()
        guard serverTime >= plausibleFrom, serverTime.timeIntervalSince1970 < 7_258_118_400 else { return }
        let new = Anchor(time: serverTime.timeIntervalSince1970, uptime: uptimeNow)
        anchors.withLock { anchors in
            if let old = anchors.server, old.at(uptime: uptimeNow) >= new.time { return }
            anchors.server = new
        }
    }

    /// Whether the time comes from a fix or from agrirouter, rather than the system clock alone.
    public var isVerified: Bool {
        anchors.withLock { $0.gnss != nil || $0.server != nil }
    }

    /// The true time at a monotonic reading of this boot, when a fix or agrirouter has told it: for
    /// samples taken while the system clock was wrong and that have no receiver time of their own.
    public func time(atUptime reading: Double) -> Date? {
        anchors.withLock { $0.gnss ?? $0.server }.map { Date(timeIntervalSince1970: $0.at(uptime: reading)) }
    }

    /// The best known UTC now, or nil when it cannot be known yet.
    public func now() -> Date? {
        now(systemNow: wall.now(), uptimeNow: monotonic.now())
    }

    public func now(systemNow: Date, uptimeNow: Double) -> Date? {
        if let anchor = anchors.withLock({ $0.gnss ?? $0.server }) {
            return Date(timeIntervalSince1970: anchor.at(uptime: uptimeNow))
        }
        return systemNow >= plausibleFrom ? systemNow : nil
    }

    /// The best known UTC, or the system clock when the truth is unknown: for the times the daemon
    /// keeps for itself (when a batch went out, when to retry), never for what goes on the wire.
    public func bestGuess() -> Date {
        let system = wall.now()
        return now(systemNow: system, uptimeNow: monotonic.now()) ?? system
    }

    /// `clock`'s best guess, or the system clock where the caller was given no clock (tests, tools).
    public static func bestGuess(_ clock: TrueTime?) -> Date {
        clock?.bestGuess() ?? Date()
    }

    /// System clock minus the best known UTC, in seconds; nil when unknown.
    public func systemClockError() -> Double? {
        systemClockError(systemNow: wall.now(), uptimeNow: monotonic.now())
    }

    public func systemClockError(systemNow: Date, uptimeNow: Double) -> Double? {
        now(systemNow: systemNow, uptimeNow: uptimeNow).map { systemNow.timeIntervalSince($0) }
    }

    /// A system time corrected to the best known UTC: the same instant on the true clock. Unchanged
    /// when the truth is unknown.
    public func corrected(_ systemTime: Date) -> Date {
        corrected(systemTime, systemNow: wall.now(), uptimeNow: monotonic.now())
    }

    public func corrected(_ systemTime: Date, systemNow: Date, uptimeNow: Double) -> Date {
        guard let error = systemClockError(systemNow: systemNow, uptimeNow: uptimeNow) else { return systemTime }
        return systemTime.addingTimeInterval(-error)
    }
}
