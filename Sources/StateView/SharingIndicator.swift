import Bounds
import Clocks
import Foundation
import GNSS
import StateDirectory

/// The one line that says whether positions are being shared, and if not, why. The cab view shows it
/// at all times. It says the most severe thing first, in the order of the cases below:
///
/// - the daemon stopped (or stuck): nothing is sampled at all;
/// - gpsd unreachable, no receiver: nothing is recorded, and the driver can act (a cable, a restart);
///   the same red whether or not agrirouter is reached, which in a field it often is not;
/// - no fix: positions are taken no more, and the driver can act (drive into the open). It comes
///   before the three below because each of them speaks of positions kept or waiting on the box,
///   which is untrue while none is taken: with the receiver silent, "Offline · 165 waiting" counted
///   up by one a second with no position at all;
/// - not connected to agrirouter, paused, offline: positions are taken and kept, and go later or never;
/// - sharing.
public struct SharingIndicator: Sendable, Equatable, Codable {
    public enum State: String, Sendable, Codable, CaseIterable {
        case daemonStopped = "daemon_stopped"
        case gpsdUnreachable = "gpsd_unreachable"
        case noReceiver = "no_receiver"
        case noFix = "no_fix"
        case notOnboarded = "not_onboarded"
        case paused
        case offline
        case sharing

        /// The least `agrigps status` says while the label shows this state: its verdict and the
        /// label go by this one table, so that what the cab's label calls act now (red) is CRITICAL
        /// at once. No fix is amber on the label, for the driver can act on it at once, and OK here
        /// until `fix_age_warning`: a monitor that polls every few minutes is not to be woken by a
        /// bridge. A pause is the driver's choice, not a fault.
        public var health: Health {
            switch self {
            case .daemonStopped, .gpsdUnreachable, .noReceiver: return .critical
            case .notOnboarded, .offline: return .warning
            case .noFix, .paused, .sharing: return .ok
            }
        }
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
    /// is none; never before the system started (see `StatusSnapshot.sinceBoot`). Nil while all is
    /// well, while paused (see `pausedSince`), or when unknown.
    public var since: String?

    /// `lastState` is the newest sample's fix state, from the spool or the heartbeat.
    public init(_ snapshot: StatusSnapshot, lastState: FixState?, thresholds: StatusThresholds) {
        let spool = snapshot.spool
        waiting = spool?.waiting ?? 0
        let heartbeat = snapshot.heartbeat
        let now = snapshot.takenAt
        // Offline: samples wait and the last request failed after the last acknowledgement, or
        // agrirouter has taken nothing for longer than status allows.
        let failedLast =
            both(heartbeat?.lastErrorAt, heartbeat?.lastAcknowledgedAt).map { $0 > $1 }
            ?? (heartbeat?.lastErrorAt != nil)
        let quiet = snapshot.secondsWithoutAcknowledgement().map { $0 > thresholds.ackAgeWarning } ?? false
        let backingOff = heartbeat?.nextAttemptAt.map { $0 > now } ?? false
        let late = snapshot.positionsLate() != nil
        switch (snapshot.daemon, lastState) {
        case (.notRunning, _), (.stalled, _):
            // A stuck daemon (a heartbeat older than status allows: stalled) samples nothing either.
            state = .daemonStopped
        case (_, .gpsdUnreachable?):
            state = .gpsdUnreachable
        case (_, .noReceiver?):
            state = .noReceiver
        case (_, .noFix?), (_, nil):
            state = .noFix
        case (_, .fix?):
            if snapshot.environment == nil || snapshot.credentialsNotTaken {
                // Onboarded after the daemon started, and not taken by it: nothing goes yet.
                state = .notOnboarded
            } else if spool?.sharingPaused == true {
                state = .paused
            } else if waiting > 0, failedLast || backingOff || quiet || late {
                state = .offline
            } else {
                state = .sharing
            }
        }
        if state == .paused {
            pausedSince = spool?.pausedSince.map { ISO8601UTC.string(from: $0) }
            kept = spool?.keptWhilePaused ?? 0
        }
        since = Self.since(state, snapshot).map { ISO8601UTC.string(from: snapshot.sinceBootAtMost($0)) }
        text = Self.text(state, waiting: waiting, pausedSince: pausedSince, kept: kept ?? 0)
    }

    static func since(_ state: State, _ snapshot: StatusSnapshot) -> Date? {
        switch state {
        case .daemonStopped:
            if case .notRunning(let last) = snapshot.daemon { return last }
            return snapshot.heartbeat?.updatedAt
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
