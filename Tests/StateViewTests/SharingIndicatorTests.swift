import Foundation
import GNSS
import Spool
import StateDirectory
import Testing

@testable import StateView

@Suite("Sharing indicator")
struct SharingIndicatorTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21T14:13:20Z

    func indicator(_ change: (inout SpoolStatus) -> Void) -> SharingIndicator {
        var spool = SpoolStatus()
        change(&spool)
        let snapshot = StatusSnapshot(
            takenAt: now, daemon: .running(pid: 42, heartbeatAge: 2),
            heartbeat: Heartbeat(pid: 42, startedAt: now.addingTimeInterval(-3600), onboarded: true),
            environment: "production", spool: spool, others: OthersView())
        return SharingIndicator(snapshot, lastState: .fix(.threeD, .rtkFixed), thresholds: StatusThresholds())
    }

    @Test("paused: since when, in UTC, and how many positions the pause kept")
    func pausedReceipt() throws {
        let paused = indicator {
            $0.sharingPaused = true
            $0.pausedSince = now.addingTimeInterval(-1280)  // 13:52:00Z
            $0.keptWhilePaused = 12
        }
        #expect(paused.state == .paused)
        #expect(paused.pausedSince == "2026-09-21T13:52:00.000Z" && paused.kept == 12)
        #expect(paused.text == "Paused since 13:52 UTC · 12 positions kept on this box, not sent")
        let one = indicator {
            $0.sharingPaused = true
            $0.pausedSince = now
            $0.keptWhilePaused = 1
        }
        #expect(one.text == "Paused since 14:13 UTC · 1 position kept on this box, not sent")
        let unknownStart = indicator { $0.sharingPaused = true }
        #expect(unknownStart.pausedSince == nil && unknownStart.kept == 0)
        #expect(unknownStart.text == "Paused · 0 positions kept on this box, not sent")
    }

    @Test("not paused: no receipt fields, in the model or its JSON")
    func notPausedHasNoReceipt() throws {
        let sharing = indicator {
            $0.pausedSince = now
            $0.keptWhilePaused = 5
        }
        #expect(sharing.state == .sharing && sharing.pausedSince == nil && sharing.kept == nil)
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(sharing)) as? [String: Any])
        #expect(json["pausedSince"] == nil && json["kept"] == nil && json["text"] as? String == "Sharing")
    }

    @Test(
        "trouble says since when: the last heartbeat of a stopped daemon, the last fix without one; all well says nothing"
    )
    func since() {
        var heartbeat = Heartbeat(pid: 42, startedAt: now.addingTimeInterval(-3600), onboarded: true)
        heartbeat.lastFix = Heartbeat.Sample(
            PositionSample(sampledAt: now.addingTimeInterval(-125), state: .fix(.threeD, .rtkFixed), report: nil))
        let stopped = StatusSnapshot(
            takenAt: now, daemon: .notRunning(lastHeartbeat: now.addingTimeInterval(-750)), heartbeat: heartbeat,
            environment: "production", spool: SpoolStatus(), others: OthersView())
        let seen = SharingIndicator(stopped, lastState: .fix(.threeD, .rtkFixed), thresholds: StatusThresholds())
        #expect(seen.state == .daemonStopped && seen.since == "2026-09-21T14:00:50.000Z", "\(seen)")
        let lost = StatusSnapshot(
            takenAt: now, daemon: .running(pid: 42, heartbeatAge: 2), heartbeat: heartbeat,
            environment: "production", spool: SpoolStatus(), others: OthersView())
        let noFix = SharingIndicator(lost, lastState: .noFix, thresholds: StatusThresholds())
        #expect(noFix.state == .noFix && noFix.since == "2026-09-21T14:11:15.000Z", "\(noFix)")
        #expect(indicator { _ in }.since == nil, "sharing: nothing to time")
    }

    @Test("known only from the heartbeat, a pause counts every withheld sample and has no start")
    func pauseFromHeartbeat() {
        var status = SpoolStatus()
        status.withheld = 4
        status.sharingPaused = true
        #expect(SpoolStatus(Heartbeat.SpoolCounts(status)).keptWhilePaused == 4)
        status.sharingPaused = false
        #expect(SpoolStatus(Heartbeat.SpoolCounts(status)).keptWhilePaused == 0)
    }

    @Test("bearings as agrigps others and the cab view write them")
    func bearingText() {
        #expect(BearingText.format(degrees: 52.4) == "NE 52°")
        #expect(BearingText.format(degrees: 359.6) == "N 0°")
        #expect(BearingText.format(degrees: 180) == "S 180°")
        #expect(BearingText.format(degrees: .nan) == "unknown")
        #expect(BearingText.wholeDegrees(-0.6) == 359 && BearingText.wholeDegrees(720.2) == 0)
        #expect(BearingText.wholeDegrees(.infinity) == nil)
    }

    @Test(
        "offline without a failure: a position waited three send cycles (30 s at least) and nothing was acknowledged meanwhile"
    )
    func lateIsOffline() {
        func look(oldest: Double, quiet: Double, sendInterval: Double? = 10) -> SharingIndicator.State {
            var heartbeat = Heartbeat(pid: 42, startedAt: now.addingTimeInterval(-3600), onboarded: true)
            heartbeat.updatedAt = now
            heartbeat.quietSeconds = quiet
            heartbeat.sendInterval = sendInterval
            var spool = SpoolStatus()
            spool.pending = 7
            spool.oldestPendingAge = oldest
            let snapshot = StatusSnapshot(
                takenAt: now, daemon: .running(pid: 42, heartbeatAge: 2), heartbeat: heartbeat,
                environment: "production", spool: spool, others: OthersView())
            return SharingIndicator(snapshot, lastState: .fix(.threeD, .rtkFixed), thresholds: StatusThresholds()).state
        }
        #expect(look(oldest: 31, quiet: 31) == .offline)
        // and after the old five minutes without an answer, whatever waits
        #expect(look(oldest: 29, quiet: 400) == .offline)
        #expect(look(oldest: 29, quiet: 120) == .sharing)
        #expect(look(oldest: 3600, quiet: 5) == .sharing, "a backlog draining, oldest first, is not offline")
        #expect(look(oldest: 100, quiet: 100, sendInterval: 60) == .sharing)
        #expect(look(oldest: 181, quiet: 181, sendInterval: 60) == .offline)
        #expect(
            look(oldest: 31, quiet: 31, sendInterval: nil) == .offline, "an older heartbeat: the default cycle of 10 s")
        #expect(
            StatusSnapshot.lateAfter(sendInterval: 1) == 30 && StatusSnapshot.lateAfter(sendInterval: 3600) == 10_800)
        for broken in [Double.infinity, -.infinity, .nan, -5] {
            #expect(StatusSnapshot.lateAfter(sendInterval: broken) == 30)
        }
    }
}
