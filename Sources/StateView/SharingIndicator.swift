import Bounds
import Clocks
import Foundation
import GNSS
import StateDirectory

/// The one line that says whether positions are being shared, and if not, why. The cab view shows it
/// at all times; the order below is the order of what matters to the person in the cab.
public struct SharingIndicator: Sendable, Equatable, Codable {
    public enum State: String, Sendable, Codable, CaseIterable {
        case daemonStopped = "daemon_stopped"
        case notOnboarded = "not_onboarded"
        case paused
        case offline
        case gpsdUnreachable = "gpsd_unreachable"
        case noReceiver = "no_receiver"
        case noFix = "no_fix"
        case sharing
    }

    public var state: State
    /// Samples waiting in the spool to be sent.
    public var waiting: Int
    public var text: String
    /// When the pause in force began, ISO 8601 UTC; only while paused, and nil when unknown.
    public var pausedSince: String?
    /// Positions taken since the pause began, kept on this box and never sent; only while paused.
    public var kept: Int?
    /// Since when the trouble has lasted, as best the files tell, ISO 8601 UTC: the daemon's last
    /// heartbeat once it stopped, the last acknowledgement while offline, the last fix while there
    /// is none. Nil while all is well, while paused (see `pausedSince`), or when unknown.
    public var since: String?

    /// `lastState` is the newest sample's fix state, from the spool or the heartbeat.
    public init(_ snapshot: StatusSnapshot, lastState: FixState?, thresholds: StatusThresholds) {
        let spool = snapshot.spool
        waiting = spool?.waiting ?? 0
        let heartbeat = snapshot.heartbeat
        let now = snapshot.takenAt
        // Offline: samples wait and the last request failed after the last acknowledgement, or
        // agrirouter has taken nothing for longer than status allows.
        let failedLast = both(heartbeat?.lastErrorAt, heartbeat?.lastAcknowledgedAt).map { $0 > $1 }
            ?? (heartbeat?.lastErrorAt != nil)
        let quiet = heartbeat.map { $0.secondsWithoutAcknowledgement(at: now) > thresholds.ackAgeWarning } ?? false
        let backingOff = heartbeat?.nextAttemptAt.map { $0 > now } ?? false
        let late = snapshot.positionsLate() != nil
        if case .notRunning = snapshot.daemon {
            state = .daemonStopped
        } else if snapshot.environment == nil {
            state = .notOnboarded
        } else if spool?.sharingPaused == true {
            state = .paused
        } else if waiting > 0, failedLast || backingOff || quiet || late {
            state = .offline
        } else {
            switch lastState {
            case .gpsdUnreachable?: state = .gpsdUnreachable
            case .noReceiver?: state = .noReceiver
            case .noFix?, nil: state = .noFix
            case .fix?: state = .sharing
            }
        }
        if state == .paused {
            pausedSince = spool?.pausedSince.map { ISO8601UTC.string(from: $0) }
            kept = spool?.keptWhilePaused ?? 0
        }
        since = Self.since(state, snapshot).map { ISO8601UTC.string(from: $0) }
        text = Self.text(state, waiting: waiting, pausedSince: pausedSince, kept: kept ?? 0)
    }


    static func since(_ state: State, _ snapshot: StatusSnapshot) -> Date? {
        switch state {
        case .daemonStopped:
            if case .notRunning(let last) = snapshot.daemon { return last }
            return nil
        case .offline: return snapshot.heartbeat?.lastAcknowledgedAt
        case .noFix, .noReceiver, .gpsdUnreachable: return snapshot.heartbeat?.lastFix?.time
        case .paused, .sharing, .notOnboarded: return nil  // a pause's start is `pausedSince`
        }
    }

    static func text(_ state: State, waiting: Int, pausedSince: String? = nil, kept: Int = 0) -> String {
        switch state {
        case .daemonStopped: return "Gateway stopped: nothing is sampled or shared"
        case .notOnboarded: return "Not onboarded: positions stay on this machine"
        case .paused: return pausedText(since: pausedSince, kept: kept)
        case .offline: return "Offline: \(waiting) position\(waiting == 1 ? "" : "s") waiting"
        case .gpsdUnreachable: return "gpsd unreachable: no positions"
        case .noReceiver: return "No receiver"
        case .noFix: return "No fix"
        case .sharing: return "Sharing"
        }
    }

    /// "Paused since 14:05 UTC · 12 positions kept on this box, not sent": the person in the cab sees
    /// that the pause holds and that nothing taken during it is lost. The time is cut from the ISO
    /// form (no formatter, no time-zone data); without a readable start the time is left out.
    static func pausedText(since: String?, kept: Int) -> String {
        let positions = "\(kept) position\(kept == 1 ? "" : "s") kept on this box, not sent"
        guard let since, since.count >= 16 else { return "Paused · " + positions }
        let clock = since.dropFirst(11).prefix(5)
        return "Paused since \(clock) UTC · " + positions
    }
}
