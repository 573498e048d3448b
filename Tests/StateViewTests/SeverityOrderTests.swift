import Foundation
import GNSS
import Spool
import StateDirectory
import Testing

@testable import StateView

/// The label says the most severe thing first, and `agrigps status` never says less than the label:
/// a receiver unplugged in a field without mobile signal is as red as one unplugged online.
@Suite("The most severe state first, on the label and in status")
struct SeverityOrderTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21T14:13:20Z

    /// What sharing is doing apart from the receiver: each of the label's other states.
    enum Sharing: String, CaseIterable, CustomStringConvertible {
        case sharing, notOnboarded, paused, offlineFailing, offlineLate
        var description: String { rawValue }
    }

    /// A running, onboarded daemon whose last fix was 2 s ago; `sharing` sets the rest, as a field
    /// without mobile signal, a box not connected yet or a pause leaves it.
    func snapshot(_ sharing: Sharing, daemon: StatusSnapshot.Daemon? = nil) -> StatusSnapshot {
        var heartbeat = Heartbeat(pid: 42, startedAt: now.addingTimeInterval(-3600), onboarded: true)
        heartbeat.updatedAt = now.addingTimeInterval(-1)
        heartbeat.sendInterval = 10
        heartbeat.quietSeconds = 5
        var fix = Heartbeat.Sample(
            PositionSample(
                sampledAt: now.addingTimeInterval(-2), state: .fix(.threeD, .rtkFixed),
                report: PositionReport(time: now, gpsdMode: 3, gpsdStatus: 3, latitude: 52, longitude: 8)))
        fix.sampledAt = now.addingTimeInterval(-2)
        heartbeat.lastFix = fix
        heartbeat.lastSample = fix
        var spool = SpoolStatus()
        var environment: String? = "production"
        switch sharing {
        case .sharing: break
        case .notOnboarded: environment = nil
        case .paused:
            spool.sharingPaused = true
            spool.pausedSince = now.addingTimeInterval(-600)
            spool.withheld = 165
            spool.keptWhilePaused = 165
        case .offlineFailing:
            spool.pending = 165
            spool.oldestPendingAge = 165
            heartbeat.lastError = "the connection to agrirouter failed: Couldn't resolve host name"
            heartbeat.lastErrorAt = now.addingTimeInterval(-4)
            heartbeat.transportFailures = 3
            heartbeat.nextAttemptAt = now.addingTimeInterval(20)
        case .offlineLate:
            spool.pending = 165
            spool.oldestPendingAge = 165
            heartbeat.quietSeconds = 170
        }
        var snapshot = StatusSnapshot(
            takenAt: now, daemon: daemon ?? .running(pid: 42, heartbeatAge: 1), heartbeat: heartbeat,
            environment: environment, spool: spool, others: OthersView())
        snapshot.stateDirectory = "/var/lib/agrigps"
        return snapshot
    }

    /// The heartbeat's last sample as the daemon wrote it when the receiver went: what status reads.
    func losing(_ state: FixState, _ snapshot: StatusSnapshot) -> StatusSnapshot {
        var lost = snapshot
        lost.heartbeat?.lastSample = Heartbeat.Sample(
            PositionSample(sampledAt: now.addingTimeInterval(-1), state: state, report: nil))
        return lost
    }

    static let receiverGone: [FixState] = [.noReceiver(.removed), .noReceiver(.noDevice), .gpsdUnreachable]

    @Test(
        "the receiver unplugged or gpsd stopped is red whatever sharing does: offline, not connected or paused as online",
        arguments: Sharing.allCases)
    func receiverGoneWins(_ sharing: Sharing) {
        let before = SharingIndicator(
            snapshot(sharing), lastState: .fix(.threeD, .rtkFixed), thresholds: StatusThresholds())
        #expect(before.state.health < .critical, "\(sharing): \(before.state)")
        for state in Self.receiverGone {
            let label = SharingIndicator(
                losing(state, snapshot(sharing)), lastState: state, thresholds: StatusThresholds())
            let expected: SharingIndicator.State = state == .gpsdUnreachable ? .gpsdUnreachable : .noReceiver
            #expect(label.state == expected, "\(sharing), \(state): \(label.state) \"\(label.text)\"")
            #expect(label.state.health == .critical)
        }
    }

    @Test("a stopped or stalled daemon outranks everything, a missing receiver too", arguments: Sharing.allCases)
    func daemonFirst(_ sharing: Sharing) {
        for daemon: StatusSnapshot.Daemon in [
            .notRunning(lastHeartbeat: now.addingTimeInterval(-90)), .stalled(pid: 42, heartbeatAge: 130),
        ] {
            for state in Self.receiverGone + [.noFix, .fix(.threeD, .rtkFixed)] {
                let label = SharingIndicator(
                    losing(state, snapshot(sharing, daemon: daemon)), lastState: state, thresholds: StatusThresholds())
                #expect(label.state == .daemonStopped, "\(sharing), \(daemon), \(state): \(label.state)")
            }
        }
    }

    @Test(
        "nothing amber says positions are kept or waiting while none are taken: without a fix the label says no fix",
        arguments: Sharing.allCases)
    func noPositionNoPromise(_ sharing: Sharing) {
        for state in Self.receiverGone + [.noFix, nil] as [FixState?] {
            let label = SharingIndicator(snapshot(sharing), lastState: state, thresholds: StatusThresholds())
            #expect(
                ![.paused, .offline, .notOnboarded, .sharing].contains(label.state),
                "\(sharing), \(String(describing: state)): \(label.state)")
            for promise in ["waiting", "kept", "stay on this", "Sharing"] {
                #expect(!label.text.contains(promise), "\(sharing), \(String(describing: state)): \"\(label.text)\"")
            }
        }
        // With a fix the state in force shows, its count with it.
        let fixed = SharingIndicator(snapshot(sharing), lastState: .fix(.threeD, .dgps), thresholds: StatusThresholds())
        let expected: [Sharing: SharingIndicator.State] = [
            .sharing: .sharing, .notOnboarded: .notOnboarded, .paused: .paused,
            .offlineFailing: .offline, .offlineLate: .offline,
        ]
        #expect(fixed.state == expected[sharing], "\(sharing): \(fixed.state)")
    }

    @Test(
        "status is never calmer than the label: the label's red is CRITICAL at once, with what to do",
        arguments: Sharing.allCases)
    func statusAtLeastTheLabel(_ sharing: Sharing) {
        let thresholds = StatusThresholds()
        for state in Self.receiverGone + [.noFix, .fix(.threeD, .rtkFixed)] {
            let look = losing(state, snapshot(sharing))
            let label = SharingIndicator(look, lastState: state, thresholds: thresholds)
            let verdict = look.verdict(thresholds)
            #expect(
                verdict.health >= label.state.health, "\(sharing), \(state): label \(label.state), status \(verdict)")
            // The page's own verdict, from the spool's newest sample, agrees with the label it draws.
            #expect(snapshot(sharing).verdict(thresholds, lastState: state).health >= label.state.health)
        }
        let unplugged = losing(.noReceiver(.removed), snapshot(sharing)).verdict(thresholds)
        #expect(unplugged.health == .critical)
        #expect(
            unplugged.reasons.first
                == "no receiver: gpsd sees none, so no position is taken; check the receiver's cable and power",
            "\(unplugged.reasons)")
        let stopped = losing(.gpsdUnreachable, snapshot(sharing)).verdict(thresholds)
        #expect(stopped.health == .critical)
        #expect(
            stopped.reasons.first
                == "gpsd unreachable, so no position is taken; check that gpsd runs: systemctl status gpsd",
            "\(stopped.reasons)")
    }

    @Test("the label's red and status's CRITICAL are the same three states; a pause is a choice, OK in status")
    func healthTable() {
        #expect(
            SharingIndicator.State.allCases.filter { $0.health == .critical } == [
                .daemonStopped, .gpsdUnreachable, .noReceiver,
            ])
        #expect(SharingIndicator.State.paused.health == .ok && SharingIndicator.State.sharing.health == .ok)
        #expect(
            SharingIndicator.State.offline.health == .warning && SharingIndicator.State.notOnboarded.health == .warning)
        // Offline by the label's own rule is a WARNING in status even when no request has failed and nothing is late.
        var refused = snapshot(.sharing)
        refused.spool?.pending = 3
        refused.heartbeat?.lastError = "agrirouter answered 500"
        refused.heartbeat?.lastErrorAt = now.addingTimeInterval(-3)
        let label = SharingIndicator(refused, lastState: .fix(.threeD, .rtkFixed), thresholds: StatusThresholds())
        #expect(label.state == .offline)
        #expect(
            refused.verdict(StatusThresholds()) == (
                .warning, ["offline: 3 samples wait to be sent; the last request failed: agrirouter answered 500"]
            ))
    }

    @Test(
        "onboarded after the daemon started, and not taken by it (a replay never takes it): the label says not connected, status says restart it"
    )
    func credentialsNotTakenAreSaid() {
        var snapshot = snapshot(.sharing)
        snapshot.heartbeat?.onboarded = false  // the daemon started before the onboarding
        #expect(snapshot.credentialsNotTaken)
        let label = SharingIndicator(snapshot, lastState: .fix(.threeD, .rtkFixed), thresholds: StatusThresholds())
        #expect(label.state == .notOnboarded, "\(label.state)")
        let verdict = snapshot.verdict(StatusThresholds())
        #expect(
            verdict.health == .warning
                && verdict.reasons.contains { $0.contains("has not taken the credentials; restart it") }, "\(verdict)")

        var disconnected = self.snapshot(.notOnboarded)
        disconnected.heartbeat?.onboarded = true  // a disconnect not yet taken: "not onboarded" says enough
        #expect(!disconnected.credentialsNotTaken)

        var stopped = snapshot
        stopped.daemon = .notRunning(lastHeartbeat: now)
        #expect(!stopped.credentialsNotTaken, "a stopped daemon takes them at its next start")
        #expect(!self.snapshot(.sharing).credentialsNotTaken)
    }
}
