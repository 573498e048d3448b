import Clocks
import Foundation
import GNSS
import Spool
import StateDirectory
import TestSupport
import Testing

@testable import StateView

/// A box without a battery-backed clock boots at 1970 and is set right later, by NTP or a fix. For
/// a few seconds after the step the daemon's files still hold stamps of the old clock, and of its
/// error. No age a look computes may come out longer than the system has run: these tests look in
/// virtual time, with the time since boot given, as the monotonic clock would read it.
@Suite("Ages no longer than the system has run")
struct UptimeClampTests {
    /// The true time at the look (today's: the spool keeps no sample from far off); the box booted
    /// `sinceBoot` seconds before it, at 1970 by its clock.
    let now = Date()
    let sinceBoot = 100.0
    /// The system clock before the step: 1970, 5 s after its boot.
    func early(_ seconds: Double) -> Date { Date(timeIntervalSince1970: 5 + seconds) }

    func paths(_ directory: String) -> StatusSnapshot.Paths {
        StatusSnapshot.Paths(
            stateDirectory: directory, spool: directory + "/spool.sqlite", others: directory + "/others.sqlite",
            heartbeat: directory + "/heartbeat.json")
    }

    /// Every whole number in `text`.
    func numbers(_ text: String) -> [Double] {
        text.split(whereSeparator: { !$0.isNumber }).compactMap { Double($0) }
    }

    /// The daemon's state directory just after the step: its last fix stamped at 1970, a sample
    /// waiting in the spool stamped on the right clock, and the heartbeat still saying the clock is
    /// 56 years slow (so that the spool is read 56 years ahead).
    func steppedBox(heartbeatAt written: Date) async throws -> TemporaryDirectory {
        let temporary = TemporaryDirectory("uptime")
        let directory = temporary.path
        let fix = PositionSample(
            sampledAt: early(90), state: .fix(.threeD, .rtkFixed),
            report: PositionReport(
                time: now.addingTimeInterval(-4), gpsdMode: 3, gpsdStatus: 3, latitude: 52, longitude: 8))
        let waiting = PositionSample(sampledAt: now.addingTimeInterval(-3), state: .noFix, report: nil)
        _ = await Spool(path: directory + "/spool.sqlite").append(waiting)
        // onboarded, as the credentials beside it say
        var heartbeat = Heartbeat(pid: getpid(), startedAt: early(0), onboarded: true)
        heartbeat.updatedAt = written
        heartbeat.lastFix = Heartbeat.Sample(fix)
        heartbeat.lastSample = Heartbeat.Sample(PositionSample(sampledAt: early(91), state: .noFix, report: nil))
        heartbeat.systemClockError = early(91).timeIntervalSince(now.addingTimeInterval(-3))
        heartbeat.quietSeconds = 86
        heartbeat.lastAcknowledgedAt = early(60)
        try heartbeat.write(to: directory + "/heartbeat.json")
        return temporary
    }

    @Test(
        "after the step from 1970, status's ages and reasons are no longer than the time since boot",
        arguments: [true, false])
    func statusAfterStep(_ heartbeatAfterStep: Bool) async throws {
        // The heartbeat written just after the step (on the right clock) or just before it (at 1970).
        let box = try await steppedBox(heartbeatAt: heartbeatAfterStep ? now.addingTimeInterval(-2) : early(92))
        let directory = box.path
        let snapshot = await StatusSnapshot.gather(paths(directory), now: now, sinceBoot: sinceBoot)
        let verdict = snapshot.verdict(StatusThresholds())
        #expect(verdict.reasons.flatMap(numbers).allSatisfy { $0 <= sinceBoot }, "\(verdict.reasons)")
        // The daemon is running (its process is this test's): a heartbeat stamped before the step is
        // at most as old as the boot, not 56 years: no stall.
        guard case .running(_, let age) = snapshot.daemon else {
            Issue.record("\(snapshot.daemon)")
            return
        }
        #expect(age <= sinceBoot)
        let oldest = try #require(snapshot.spool?.oldestPendingAge)
        #expect(oldest <= sinceBoot)
        #expect(snapshot.age(since: early(0)) == sinceBoot)
        let json = StatusDocument(snapshot, verdict: verdict).json()
        for key in ["heartbeat_age_s", "oldest_pending_age_s"] {
            let value = try #require(
                json.range(of: "\"\(key)\":").map { json[$0.upperBound...].prefix { $0.isNumber || $0 == "." } })
            #expect(Double(value).map { $0 <= sinceBoot } == true, "\(key): \(value) in \(json)")
        }
        // The page's "Offline · 1 position waiting · 3 min" counts from the last acknowledgement, stamped at 1970.
        var onboarded = snapshot
        onboarded.environment = "production"
        let label = SharingIndicator(onboarded, lastState: .fix(.threeD, .rtkFixed), thresholds: StatusThresholds())
        #expect(label.state == .offline)
        let since = try #require(label.since.flatMap { ISO8601UTC.date(from: $0) })
        #expect(
            now.timeIntervalSince(since) <= sinceBoot + 0.001,
            "to the millisecond the page sends; the page's label counts from \(since)")
    }

    @Test("without a step, ages are as they were; the clamp only bounds")
    func noStep() {
        var heartbeat = Heartbeat(pid: 42, startedAt: now.addingTimeInterval(-50), onboarded: true)
        heartbeat.updatedAt = now.addingTimeInterval(-1)
        var fix = Heartbeat.Sample(
            PositionSample(sampledAt: now.addingTimeInterval(-75), state: .fix(.threeD, .dgps), report: nil))
        fix.sampledAt = now.addingTimeInterval(-75)
        heartbeat.lastFix = fix
        heartbeat.lastSample = fix
        var snapshot = StatusSnapshot(
            takenAt: now, daemon: .running(pid: 42, heartbeatAge: 1), heartbeat: heartbeat, environment: "qa",
            spool: SpoolStatus(), others: OthersView())
        snapshot.sinceBoot = 3600
        #expect(snapshot.verdict(StatusThresholds()) == (.warning, ["no fix for 75 s"]))
        snapshot.sinceBoot = 70
        #expect(
            snapshot.verdict(StatusThresholds()) == (.warning, ["no fix for 70 s"]),
            "the fix was before this boot, or on a clock since set")
        snapshot.sinceBoot = nil
        #expect(snapshot.age(since: now.addingTimeInterval(-1e9)) == 1e9, "unknown uptime: no bound")
    }
}
