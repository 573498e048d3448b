import ChildProcesses
import Foundation
import GPSDReplay
import GRDB
import TestSupport
import Testing

@testable import Spool

/// The spool in another process, killed or confined as real life would.
@Suite(.serialized, .timeLimit(.minutes(60)))
struct SpoolCrashTests {
    /// CI runs 50; `script/crash-test 1000` runs more.
    static let kills = Int(ProcessInfo.processInfo.environment["AGRIGPS_CRASH_KILLS"] ?? "") ?? 50

    static let exerciser: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("spool-exerciser").path
    }()

    /// Complete journal lines only: a line cut short by the kill says nothing.
    private func journal(_ path: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        lines.removeLast()  // after the last newline: empty, or a torn line
        return lines.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Runs the exerciser in `mode` until a SIGKILL at a random moment, and returns the journal's lines.
    /// Odd rounds kill 20 to 150 ms after the start, which on a busy machine may be before the spool
    /// is open; even rounds wait (up to 10 s) for the round's first journaled step, then kill within
    /// 100 ms, so that every other kill lands while samples are appended and batches move.
    private func killRound(_ round: Int, mode: String, scratch: TemporaryDirectory, journalPath: String) async throws
        -> [String]
    {
        let before = journal(journalPath).count
        let child = try ChildProcess(
            executable: Self.exerciser, arguments: [mode, scratch.spoolPath, journalPath],
            environment: ProcessInfo.processInfo.environment,
            outputPath: scratch.path + "/exerciser.log")
        if round.isMultiple(of: 2) {
            let deadline = ContinuousClock.now + .seconds(10)
            while journal(journalPath).count == before, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...100)))
        } else {
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...150)))
        }
        kill(child.pid, SIGKILL)
        let code = await child.wait(timeout: 10)
        try #require(
            code == 128 + SIGKILL,
            "round \(round): the exerciser ended with \(String(describing: code)) before the kill")
        return journal(journalPath)
    }

    @Test func sigkillAtRandomMomentsLosesNothing() async throws {
        let scratch = TemporaryDirectory("spool")
        let journalPath = scratch.path + "/journal"
        var acknowledgedEarlier: Set<Int> = []
        var killedMidRun = 0
        for round in 1...Self.kills {
            let lines = try await killRound(round, mode: "crash-loop", scratch: scratch, journalPath: journalPath)
            let appended = lines.filter { $0.hasPrefix("a ") }.compactMap { Int($0.dropFirst(2)) }
            // Every sample of every batch whose acknowledgement returned.
            let acknowledgedInBatches = Set(
                lines.filter { $0.hasPrefix("k ") }.flatMap { line in
                    line.split(separator: " ").dropFirst(2).first.map {
                        $0.split(separator: ",").compactMap { Int($0) }
                    } ?? []
                })
            let database = try DatabaseQueue(path: scratch.spoolPath)
            let (integrity, rows) = try database.read { db in
                // A kill before the schema was made leaves no table: then nothing may have been appended.
                (
                    try String.fetchAll(db, sql: "PRAGMA integrity_check"),
                    try db.tableExists("sample") ? try Row.fetchAll(db, sql: "SELECT detail, delivery FROM sample") : []
                )
            }
            try #require(integrity == ["ok"], "round \(round): integrity_check said \(integrity)")
            var copies: [Int: Int] = [:]
            var acknowledgedNow: Set<Int> = []
            for row in rows {
                guard let seq = (row["detail"] as String?).flatMap({ Int($0.dropFirst(4)) }) else { continue }
                copies[seq, default: 0] += 1
                let delivery: String = row["delivery"]
                if delivery == "acknowledged" { acknowledgedNow.insert(seq) }
            }
            let missing = appended.filter { copies[$0] == nil }
            let doubled = copies.filter { $0.value > 1 }.map(\.key)
            try #require(missing.isEmpty, "round \(round): appended but gone: \(missing.prefix(10))")
            try #require(doubled.isEmpty, "round \(round): stored twice: \(doubled.prefix(10))")
            let unsettled = acknowledgedInBatches.subtracting(acknowledgedNow)
            try #require(
                unsettled.isEmpty,
                "round \(round): samples of acknowledged batches not acknowledged: \(unsettled.sorted().prefix(5))")
            let reverted = acknowledgedEarlier.subtracting(acknowledgedNow)
            try #require(reverted.isEmpty, "round \(round): acknowledged samples came back: \(reverted.prefix(10))")
            acknowledgedEarlier = acknowledgedNow
            if rows.count > 0 { killedMidRun += 1 }
        }
        let lines = journal(journalPath)
        let appended = lines.filter { $0.hasPrefix("a ") }.count
        print(
            "spool crash test: \(Self.kills) SIGKILLs, \(appended) journaled appends, \(acknowledgedEarlier.count) acknowledged samples; every check held after every kill"
        )
        #expect(appended >= Self.kills / 2)  // the exerciser really ran: at least once in each even round
        #expect(!acknowledgedEarlier.isEmpty)
    }

    /// The same with both outputs and no history, as the daemon runs: acknowledged rows are cleared
    /// together, and until then an acknowledgement is written in its batch's row only.
    @Test func sigkillWhileAcknowledgedRowsAreClearedLosesNothing() async throws {
        let scratch = TemporaryDirectory("spool")
        let journalPath = scratch.path + "/journal"
        var acknowledgedEarlier: [String: Set<Int>] = [:]
        var cleared = 0
        for round in 1...Self.kills {
            let lines = try await killRound(
                round, mode: "crash-loop-cleared", scratch: scratch, journalPath: journalPath)
            let appended = lines.filter { $0.hasPrefix("a ") }.compactMap { Int($0.dropFirst(2)) }
            // Samples of each output's batches, by the journal's tag: "s" before the acknowledgement, "k" after.
            func seqs(_ tag: String, _ output: SpoolOutput) -> Set<Int> {
                Set(
                    lines.filter { $0.hasPrefix("\(tag) \(output.name) ") }.flatMap { line in
                        line.split(separator: " ").dropFirst(2).first.map {
                            $0.split(separator: ",").compactMap { Int($0) }
                        } ?? []
                    })
            }
            let (integrity, rows) = try DatabaseQueue(path: scratch.spoolPath).read { db in
                // Killed before the migrations were through: no sample can have been appended yet.
                guard try db.tableExists("sample"),
                    try db.columns(in: "sample").contains(where: { $0.name == "efdi_delivery" })
                else {
                    return (try String.fetchAll(db, sql: "PRAGMA integrity_check"), [Row]())
                }
                let delivery = DeliverySQL(readingAsItIs: db)
                return (
                    try String.fetchAll(db, sql: "PRAGMA integrity_check"),
                    try Row.fetchAll(
                        db,
                        sql:
                            "SELECT detail, \(delivery.delivery(.gpsInfo)) AS gps, \(delivery.delivery(.efdi)) AS efdi FROM sample"
                    )
                )
            }
            try #require(integrity == ["ok"], "round \(round): integrity_check said \(integrity)")
            var states: [Int: [String: String]] = [:]
            var doubled: [Int] = []
            for row in rows {
                guard let seq = (row["detail"] as String?).flatMap({ Int($0.dropFirst(4)) }) else { continue }
                if states[seq] != nil { doubled.append(seq) }
                states[seq] = ["gps_info": row["gps"], "efdi": row["efdi"]]
            }
            try #require(doubled.isEmpty, "round \(round): stored twice: \(doubled.prefix(10))")
            // A row may be gone only once both outputs' acknowledgements of it were under way.
            let mayBeGone = seqs("s", .gpsInfo).intersection(seqs("s", .efdi))
            let missing = appended.filter { states[$0] == nil && !mayBeGone.contains($0) }
            try #require(missing.isEmpty, "round \(round): appended but gone: \(missing.prefix(10))")
            cleared = appended.filter { states[$0] == nil }.count
            for output in SpoolOutput.all {
                let acknowledgedNow = Set(states.filter { $0.value[output.name] == "acknowledged" }.keys)
                let unsettled = seqs("k", output).filter { states[$0] != nil && !acknowledgedNow.contains($0) }
                try #require(
                    unsettled.isEmpty,
                    "round \(round): \(output) acknowledged these, the spool does not: \(unsettled.sorted().prefix(5))")
                let reverted = (acknowledgedEarlier[output.name] ?? []).filter {
                    states[$0] != nil && !acknowledgedNow.contains($0)
                }
                try #require(
                    reverted.isEmpty,
                    "round \(round): \(output)'s acknowledged samples came back: \(reverted.sorted().prefix(10))")
                acknowledgedEarlier[output.name] = acknowledgedNow
            }
        }
        let appended = journal(journalPath).filter { $0.hasPrefix("a ") }.count
        print(
            "spool crash test, rows cleared: \(Self.kills) SIGKILLs, \(appended) journaled appends, \(cleared) cleared; every check held after every kill"
        )
        #expect(appended >= Self.kills / 2)
        #expect(cleared > 0, "no acknowledged rows were cleared: the run did not reach a clearing")
    }

    @Test func readOnlyDirectoryHoldsSamplesUntilItIsWritable() async throws {
        let scratch = TemporaryDirectory("spool")
        let confined = scratch.path + "/readonly"
        try FileManager.default.createDirectory(atPath: confined, withIntermediateDirectories: false)
        chmod(confined, 0o555)
        chmod(scratch.path, 0o755)
        let gate = scratch.path + "/gate"
        // Root writes anywhere; run the spool as an unprivileged user so the directory really refuses.
        var executable = Self.exerciser
        var arguments = ["hold-then-flush", confined + "/spool.sqlite", gate]
        if geteuid() == 0 {
            let nobody = try #require(getpwnam("nobody"))
            arguments =
                [
                    "--reuid=\(nobody.pointee.pw_uid)", "--regid=\(nobody.pointee.pw_gid)", "--clear-groups", "--",
                    Self.exerciser,
                ] + arguments
            executable = "/usr/bin/setpriv"
        }
        let output = scratch.path + "/output"
        let child = try ChildProcess(
            executable: executable, arguments: arguments,
            environment: ProcessInfo.processInfo.environment, outputPath: output,
            errorPath: scratch.path + "/log")
        defer { child.terminate(grace: 1) }
        func lines() -> [String] { (try? Fixtures.lines(of: output)) ?? [] }
        _ = await eventually(within: 20) { lines().contains(where: { $0.hasPrefix("fault") }) }
        #expect(
            Array(lines().prefix(4)) == [
                "held 1 read_only", "held 2 read_only", "held 3 read_only", "fault read_only held 3",
            ])

        chmod(confined, 0o777)
        _ = FileManager.default.createFile(atPath: gate, contents: nil)
        #expect(await child.wait(timeout: 20) == 0)
        #expect(Array(lines().suffix(3)) == ["stored 4", "stored 5", "order 1 2 3 4 5"])
    }
}
