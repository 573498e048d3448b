import Foundation
import GNSS
import Spool
import StateDirectory
import StateView
import TestSupport
import Testing

/// The readers of the state directory (status, the cab view) open every database read-only: a look
/// never changes, migrates or moves aside the daemon's files.
@Suite("Reading the state directory read-only")
struct ReadOnlyStateTests {
    func paths(_ directory: String) -> StatusSnapshot.Paths {
        StatusSnapshot.Paths(
            stateDirectory: directory, spool: directory + "/spool.sqlite", others: directory + "/others.sqlite",
            heartbeat: directory + "/heartbeat.json")
    }

    @Test("a damaged spool is reported, not quarantined, and left byte for byte as it was")
    func damagedSpoolUntouched() async throws {
        let temporary = TemporaryDirectory("stateview")
        let directory = temporary.path
        let garbage = Data(repeating: 0x5A, count: 8192)
        try garbage.write(to: URL(fileURLWithPath: directory + "/spool.sqlite"))
        let snapshot = await StatusSnapshot.gather(paths(directory))
        #expect(snapshot.spool == nil)
        let problem = try #require(snapshot.spoolProblem)
        #expect(problem.contains("spool.sqlite"), "\(problem)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/spool.sqlite")) == garbage)
        let left = try FileManager.default.contentsOfDirectory(atPath: directory)
        let movedAside = left.filter { $0.contains("corrupt") }
        #expect(movedAside.isEmpty, "\(left)")
    }

    @Test(
        "a look again when only the spool moved: its counts and the time read anew, everything else kept; none without a spool before"
    )
    func respooling() async throws {
        let temporary = TemporaryDirectory("stateview")
        let directory = temporary.path
        let fix = PositionSample(
            sampledAt: Date(), state: .fix(.threeD, .autonomous),
            report: PositionReport(time: Date(), gpsdMode: 3, gpsdStatus: 1, latitude: 52, longitude: 8))
        var heartbeat = Heartbeat(pid: getpid(), startedAt: Date(), onboarded: true)
        heartbeat.environment = "qa"
        try heartbeat.write(to: directory + "/heartbeat.json")
        let empty = await StatusSnapshot.gather(paths(directory))
        let reader = SpoolReader(path: directory + "/spool.sqlite")
        #expect(
            empty.respooling(now: Date(), heartbeatLimit: 120) == nil,
            "no spool at the whole look: only a whole look says why")
        let spool = Spool(path: directory + "/spool.sqlite")

        _ = await spool.append(fix)
        let before = await StatusSnapshot.gather(paths(directory))
        #expect(before.spool?.pending == 1)
        _ = await spool.append(fix)
        _ = await spool.append(fix)
        let later = Date().addingTimeInterval(3)
        var after = try #require(before.respooling(now: later, heartbeatLimit: 120))
        let (rows, _, counts) = try await reader.newestWithVersion(after: 0, limit: 10, statusAt: after.spoolTime)
        after.takeSpool(try #require(counts))
        #expect(rows.count == 3)
        #expect(after.spool?.pending == 3)
        #expect(after.takenAt == later)
        #expect(
            after.heartbeat?.environment == "qa" && after.stateDirectory == before.stateDirectory
                && after.diskFree == before.diskFree)
        #expect(after.verdict(StatusThresholds()).reasons == before.verdict(StatusThresholds()).reasons)
    }

    @Test(
        "with the system clock 2 h fast, status reads a 30 s old unsent sample as 30 s old, not 7,230: both sides on the true clock"
    )
    func fastClockAges() async throws {
        let temporary = TemporaryDirectory("stateview")
        let directory = temporary.path
        let gnss = Date().addingTimeInterval(-30)
        let fast = gnss.addingTimeInterval(7200)
        // Taken under a clock 2 h fast: system time ahead of the receiver's, the skew recorded.
        let sample = PositionSample(
            sampledAt: fast, state: .fix(.threeD, .autonomous),
            report: PositionReport(time: gnss, gpsdMode: 3, gpsdStatus: 1, latitude: 52, longitude: 8), clockSkew: 7200)
        _ = await Spool(path: directory + "/spool.sqlite").append(sample)
        var heartbeat = Heartbeat(pid: getpid(), startedAt: fast, onboarded: true)
        heartbeat.lastSample = Heartbeat.Sample(sample)
        try heartbeat.write(to: directory + "/heartbeat.json")
        let now = fast.addingTimeInterval(30)
        let snapshot = await StatusSnapshot.gather(paths(directory), now: now)
        let age = try #require(snapshot.spool?.oldestPendingAge)
        #expect(abs(age - 30) < 5, "read as \(age) s")
        // The daemon's own reading: its best known UTC against the sample's GNSS time.
        let own = await Spool(path: directory + "/spool.sqlite").status(now: gnss.addingTimeInterval(30))
            .oldestPendingAge
        #expect(own.map { abs($0 - 30) < 5 } == true, "the daemon read \(String(describing: own)) s")
        // No fix now (the last sample has no skew), but the daemon still knows its clock's error, from
        // an earlier fix or agrirouter's clock: status corrects by that.
        heartbeat.lastSample = Heartbeat.Sample(PositionSample(sampledAt: now, state: .noFix))
        heartbeat.systemClockError = 7200
        try heartbeat.write(to: directory + "/heartbeat.json")
        let later = await StatusSnapshot.gather(paths(directory), now: now)
        #expect(
            later.spool?.oldestPendingAge.map { abs($0 - 30) < 5 } == true,
            "read as \(String(describing: later.spool?.oldestPendingAge)) s")
    }

    @Test(
        "a spool the daemon wrote is read as it stands: counts, newest first, and a change counter that moves on a commit"
    )
    func readsLiveSpool() async throws {
        let temporary = TemporaryDirectory("stateview")
        let directory = temporary.path
        let spool = Spool(path: directory + "/spool.sqlite")
        let start = Date().addingTimeInterval(-60)
        for second in 0..<3 {
            let time = start.addingTimeInterval(Double(second))
            _ = await spool.append(
                PositionSample(
                    sampledAt: time, state: .fix(.threeD, .autonomous),
                    report: PositionReport(
                        time: time, gpsdMode: 3, gpsdStatus: 1,
                        latitude: 52 + Double(second) / 1000, longitude: 8)))
        }
        let reader = SpoolReader(path: directory + "/spool.sqlite")
        let status = try await reader.status(now: start.addingTimeInterval(10))
        #expect(status.pending == 3)
        let newest = try await reader.newest(limit: 2)
        #expect(newest.map { $0.sample.report?.latitude } == [52.002, 52.001])
        let before = try await reader.changeCounter()
        #expect(try await reader.changeCounter() == before, "nothing committed, nothing changed")
        try await spool.setSharing(paused: true)
        let after = try await reader.changeCounter()
        #expect(after != before, "a commit by the daemon's connection moves the counter")
        #expect(try await reader.status().sharingPaused)
    }

    @Test("an absent other-machines store is not created by a look")
    func othersNotCreated() async throws {
        let temporary = TemporaryDirectory("stateview")
        let directory = temporary.path
        let snapshot = await StatusSnapshot.gather(paths(directory))
        #expect(snapshot.others.machines.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: directory + "/others.sqlite"))
    }
}
