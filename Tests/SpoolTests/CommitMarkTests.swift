import Foundation
import GRDB
import TestSupport
import Testing

@testable import Spool

/// A write-ahead log deleted, cut short or damaged takes its commits with it, and SQLite opens what
/// is left without a word. The spool counts what went against its commit mark: exactly, when the
/// rows were still waiting to be sent.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct CommitMarkTests {
    /// A spool as the daemon opens it: keeping the mark.
    static func marking() -> SpoolConfiguration {
        var configuration = SpoolConfiguration()
        configuration.keepsCommitMark = true
        return configuration
    }

    enum Damage: String, CaseIterable {
        case deleted, truncatedToHalf, bitsFlippedInAMiddleFrame
    }

    /// The files as a process killed at this moment leaves them: the spool still open, its last
    /// commits in the log, no checkpoint at close.
    static func crashImage(rows: Int, into copy: String) async throws -> Spool {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: Self.marking())
        for seq in 0..<rows { #expect(isStored(await spool.append(sample(seq)))) }
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        for suffix in ["", "-wal", "-mark"] {
            try FileManager.default.copyItem(
                atPath: scratch.spoolPath + suffix, toPath: copy + "/spool.sqlite" + suffix)
        }
        return spool
    }

    static func damage(_ wal: String, _ damage: Damage) throws {
        let size = try #require((try FileManager.default.attributesOfItem(atPath: wal)[.size] as? NSNumber)?.intValue)
        let handle = try #require(FileHandle(forUpdatingAtPath: wal))
        defer { try? handle.close() }
        switch damage {
        case .deleted: try FileManager.default.removeItem(atPath: wal)
        case .truncatedToHalf: try handle.truncate(atOffset: UInt64(size / 2))
        case .bitsFlippedInAMiddleFrame:
            // A 32-byte header, then frames of a 24-byte header and a page.
            let frame = 24 + SpoolFile.pageSize
            let middle = 32 + (size - 32) / frame / 2 * frame + 24 + 100
            try handle.seek(toOffset: UInt64(middle))
            let byte = try #require(try handle.read(upToCount: 1)?.first)
            try handle.seek(toOffset: UInt64(middle))
            try handle.write(contentsOf: [byte ^ 0xFF])
        }
    }

    static func rows(_ path: String) throws -> Int {
        try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sample") ?? 0 }
    }

    @Test(
        "a log deleted, cut to half, or with bits flipped in a frame: the loss reported is the real loss",
        arguments: Damage.allCases)
    func theLossIsCountedExactly(_ damage: Damage) async throws {
        let scratch = TemporaryDirectory("spool")
        let (intact, damaged) = (scratch.path + "/intact", scratch.path + "/damaged")
        let running = try await Self.crashImage(rows: 60, into: intact)
        try FileManager.default.copyItem(atPath: intact, toPath: damaged)
        _ = running  // open until both copies are taken
        #expect(FileManager.default.fileExists(atPath: intact + "/spool.sqlite-wal"), "nothing was left in the log")
        try Self.damage(damaged + "/spool.sqlite-wal", damage)

        let reopened = Spool(path: damaged + "/spool.sqlite", configuration: Self.marking())
        let reported = await reopened.takeLostRows()
        let left = try await reopened.allSamples().count
        let committed = try Self.rows(intact + "/spool.sqlite")
        print(
            "write-ahead log \(damage.rawValue): \(committed) committed, \(left) left, \(committed - left) lost, "
                + "\(reported?.count ?? 0) reported: \(reported?.reason ?? "nothing")")
        #expect(committed == 60)
        #expect(committed - left > 0, "the damage cost nothing: the test proves nothing")
        #expect(reported?.count == committed - left)
        #expect(reported?.reason.contains("never sent") == true)
        #expect(await reopened.takeLostRows() == nil, "taken once")
        // Ids are never given out twice: the next sample comes after the last one committed.
        guard case .stored(let next) = await reopened.append(sample(100)) else {
            Issue.record("not stored")
            return
        }
        #expect(next == 61)
    }

    @Test("a spool opened by another process (pause, the cab view) compares with the mark but never writes it")
    func onlyTheDaemonWritesTheMark() async throws {
        let scratch = TemporaryDirectory("spool")
        let plain = Spool(path: scratch.spoolPath)
        _ = await plain.append(sample(0))
        #expect(
            !FileManager.default.fileExists(atPath: scratch.spoolPath + "-mark"),
            "made by a spool that does not keep it")
        let daemon = Spool(path: scratch.spoolPath, configuration: Self.marking())
        for seq in 1...3 { _ = await daemon.append(sample(seq)) }
        #expect(CommitMark.read(scratch.spoolPath + "-mark") == CommitMark.Note(highestID: 4, owed: 4))
        // A late opener's view (3 rows owed when it looked) never overwrites the daemon's newer note.
        let other = Spool(path: scratch.spoolPath)
        _ = await daemon.append(sample(4))
        try await other.setSharing(paused: true)
        #expect(CommitMark.read(scratch.spoolPath + "-mark") == CommitMark.Note(highestID: 5, owed: 5))
    }

    @Test("a garbled mark reads as none, never as a loss")
    func aGarbledMarkIsNone() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: Self.marking())
        for seq in 0..<5 { _ = await spool.append(sample(seq)) }
        let mark = scratch.spoolPath + "-mark"
        #expect(CommitMark.read(mark) == CommitMark.Note(highestID: 5, owed: 5))
        var bytes = try Data(contentsOf: URL(fileURLWithPath: mark))
        bytes[0] ^= 0x40  // the id says 69, the check word disagrees
        try bytes.write(to: URL(fileURLWithPath: mark))
        #expect(CommitMark.read(mark) == nil)
        try Data(count: 24).write(to: URL(fileURLWithPath: mark))
        #expect(CommitMark.read(mark) == nil)
        let reopened = Spool(path: scratch.spoolPath, configuration: Self.marking())
        #expect(await reopened.takeLostRows() == nil)
    }

    @Test("a spool deleted outright after most of its rows were acknowledged: only those still owed count as lost")
    func onlyTheOwedCount() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: Self.marking())
        for seq in 0..<20 { _ = await spool.append(sample(seq)) }
        let batch = try #require(try await spool.takeBatch(maximumEntries: 15, now: epoch))
        _ = try await spool.acknowledge(batch: batch.id, now: epoch)
        #expect(CommitMark.read(scratch.spoolPath + "-mark") == CommitMark.Note(highestID: 20, owed: 5))
        for suffix in ["", "-wal", "-shm"] { unlink(scratch.spoolPath + suffix) }
        let reopened = Spool(path: scratch.spoolPath, configuration: Self.marking())
        let reported = try #require(await reopened.takeLostRows())
        #expect(reported.count == 5, "\(reported.reason)")
        #expect(
            reported.reason.contains("up to 5 samples not acknowledged by every output, of 20 committed"),
            "\(reported.reason)")
    }
}
