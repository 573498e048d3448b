import Foundation
import GPSDReplay
import TestSupport
import Testing

/// Every recorded log through a real gpsd: our reports against gpsd's own regression output, and
/// our samples against the expected files and against the transitions each log is known for.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct FixtureReplayTests {
    @Test func thereAreEnoughFixtures() {
        #expect(Fixtures.logNames.count >= 12)
    }

    @Test("reports agree with gpsd's .chk: count, time, mode, status, position", arguments: Fixtures.logNames)
    func reportsMatchGPSDCheckFile(name: String) async throws {
        let expected = try TPVFields.fromCheckFile(Fixtures.log(name) + ".chk")
        let replay = try await ReplayRun.reports(log: name)
        #expect(replay.ending == .endOfLog)
        // Through the same JSON line the command prints, so the printed form is what is checked.
        let ours = try replay.reports.map { try TPVFields(json: $0.jsonLine) }
        #expect(ours.count == expected.count, "\(name): \(ours.count) reports, gpsd's .chk has \(expected.count)")
        for (index, (mine, theirs)) in zip(ours, expected).enumerated() where mine != theirs {
            Issue.record("\(name) report \(index + 1): ours \(mine), gpsd \(theirs)")
            break
        }
        #expect(replay.processes.count == 1)
        #expect(replay.processes.allSatisfy(Processes.isGone), "gpsd outlived the replay")
    }

    @Test("samples equal the expected sample file", arguments: Fixtures.logNames)
    func samplesMatchExpectedFile(name: String) async throws {
        let expected = try Fixtures.lines(
            of: Fixtures.nmeaDirectory.appendingPathComponent("\(name).samples.jsonl").path)
        let replay = try await ReplayRun.samples(log: name)
        #expect(replay.ending == .endOfLog)
        let ours = replay.samples.map { $0.jsonLine(includeSampledAt: false) }
        #expect(ours.count == expected.count, "\(name): \(ours.count) samples, expected \(expected.count)")
        for (index, (mine, theirs)) in zip(ours, expected).enumerated() where mine != theirs {
            Issue.record("\(name) sample \(index + 1):\n ours     \(mine)\n expected \(theirs)")
            break
        }
    }

    /// Each log's sample states with repeats folded: what the log is known for, written out by hand
    /// from the capture notes (fix lost/regained counts, GGA quality), not from our own output.
    @Test(
        "state transitions",
        arguments: [
            ("ublox-lea-4h", ["no_fix", "fix_3d_autonomous", "no_fix", "fix_3d_autonomous"]),
            ("garmin-10x", ["fix_3d_autonomous", "no_fix", "fix_3d_autonomous"]),
            ("bu353-glonass", ["no_fix", "fix_3d_autonomous", "no_fix"]),  // mode 3 from GSA before any position
            ("gp-320fw-2019-04-07-coldboot", ["fix_3d_autonomous", "no_fix"]),
            ("haicom-305N", ["no_fix", "fix_3d_autonomous"]),
            ("telit-he910", ["no_fix", "fix_3d_autonomous"]),
            ("sirfstarv-nmea", ["fix_3d_autonomous", "no_fix", "fix_3d_autonomous"]),
            ("magellan-ec10", ["no_fix", "fix_2d_autonomous", "no_fix"]),
            ("skytraq", ["no_fix"]),
            ("nmea-rtk", ["fix_3d_dgps", "fix_3d_rtk_fixed"]),
            ("skytraq-dgps", ["fix_3d_dgps"]),
            ("skytraq-PX1172RH_DS", ["fix_3d_rtk_float"]),
            ("firefly-II", ["fix_2d_autonomous"]),
        ])
    func transitions(name: String, expected: [String]) async throws {
        let samples = try await ReplayRun.samples(log: name).samples
        var folded: [String] = []
        for state in samples.map(\.state.name) where folded.last != state { folded.append(state) }
        #expect(folded == expected)
        #expect(samples.allSatisfy { $0.state.hasPosition == ($0.report?.latitude != nil) })
    }

    @Test func receiverTimeIntervalsAreHonoured() async throws {
        // telit-he910 reports at 1 Hz with a fix for about three minutes.
        let five = try await ReplayRun.samples(log: "telit-he910", interval: 5).samples.filter(\.state.hasPosition)
        let times = five.compactMap(\.receiverTime).map(\.timeIntervalSince1970)
        #expect(times.count > 30)
        let buckets = times.map { Int(($0 / 5).rounded(.down)) }
        #expect(Set(buckets).count == buckets.count, "two samples fell into one 5 s interval")
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 1 && $1 - $0 <= 10 })
    }
}
