import Foundation
import GRDB
import TestSupport
import Testing

@testable import Spool

/// An acknowledgement writes its batch's row, not the samples': a sample in flight in an
/// acknowledged batch is acknowledged everywhere the spool looks, and nothing sends it again.
@Suite struct AcknowledgedBatchTests {
    /// gps:info's delivery column as the row holds it, by sequence number.
    func rawRows(_ path: String) throws -> [Int: String] {
        try DatabaseQueue(path: path).read { db in
            var rows: [Int: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT detail, delivery FROM sample") {
                if let seq = (row["detail"] as String?).flatMap({ Int($0.dropFirst(4)) }) {
                    rows[seq] = row["delivery"]
                }
            }
            return rows
        }
    }

    @Test("the acknowledgement leaves the rows as they were: acknowledged through their batch")
    func acknowledgementWritesOnlyTheBatch() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both())
        for seq in 1...4 { await spool.append(sample(seq)) }
        _ = try #require(try await spool.takeBatch(for: .gpsInfo, id: "g1", now: epoch))
        #expect(try await spool.acknowledge(batch: "g1", now: epoch) == 0)
        #expect(try rawRows(scratch.spoolPath) == [1: "in_flight", 2: "in_flight", 3: "in_flight", 4: "in_flight"])
        #expect(await spool.status().byOutput == ["gps_info": ["acknowledged": 4], "efdi": ["pending": 4]])
        #expect(try await spool.allSamples().map(\.delivery) == Array(repeating: "acknowledged", count: 4))
        #expect(try await spool.inFlightBatches().isEmpty)
        // A second answer to the same batch counts nothing.
        #expect(try await spool.acknowledge(batch: "g1", now: epoch) == 0)
    }

    @Test("an acknowledged batch is never released, reclaimed or failed: its samples are not sent again")
    func acknowledgedBatchesStayAcknowledged() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both())
        for seq in 1...4 { await spool.append(sample(seq)) }
        _ = try #require(try await spool.takeBatch(for: .gpsInfo, id: "g1", now: epoch))
        try await spool.acknowledge(batch: "g1", now: epoch)
        try await spool.release(batch: "g1")
        try await spool.fail(batch: "g1", reason: "late refusal", now: epoch)
        #expect(try await spool.reclaimExpiredBatches(now: epoch.addingTimeInterval(86_400)) == 0)
        // A restart: the daemon opens the spool again.
        let reopened = Spool(path: scratch.spoolPath, configuration: both())
        #expect(try await reopened.reclaimExpiredBatches(now: epoch.addingTimeInterval(86_400)) == 0)
        #expect(try await reopened.takeBatch(for: .gpsInfo, now: epoch) == nil)
        #expect(await reopened.status().byOutput["gps_info"] == ["acknowledged": 4])
        let efdi = try #require(try await reopened.takeBatch(for: .efdi, id: "e1", now: epoch))
        #expect(seqs(efdi.samples) == [1, 2, 3, 4])
        #expect(try await reopened.acknowledge(batch: "e1", now: epoch) == 4)
        #expect(try await reopened.allSamples().isEmpty)
        #expect(await reopened.status().waiting == 0)
    }

    @Test("rows that went back to pending before the late answer came are acknowledged in the row")
    func aLateAnswerWritesTheRowsThatLeftTheFlight() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        for seq in 1...3 { await spool.append(sample(seq)) }
        _ = try #require(try await spool.takeBatch(id: "b1", now: epoch))
        try await spool.release(batch: "b1")
        #expect(try rawRows(scratch.spoolPath) == [1: "pending", 2: "pending", 3: "pending"])
        #expect(try await spool.acknowledge(batch: "b1", now: epoch) == 3)
        #expect(try rawRows(scratch.spoolPath) == [1: "acknowledged", 2: "acknowledged", 3: "acknowledged"])
        #expect(try await spool.takeBatch(now: epoch) == nil)
        #expect(await spool.status().waiting == 0)
    }

    @Test("a cap evicts rows one output has acknowledged and the other still owes, never rows both are done with")
    func evictionSeesAcknowledgedBatches() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both { $0.maximumRows = 6 })
        for seq in 1...4 { await spool.append(sample(seq)) }
        _ = try #require(try await spool.takeBatch(for: .gpsInfo, id: "g1", now: epoch))
        _ = try #require(try await spool.takeBatch(for: .efdi, id: "e1", maximumEntries: 2, now: epoch))
        #expect(try await spool.acknowledge(batches: ["g1", "e1"], now: epoch) == 2)
        // Rows 1 and 2 are finished and wait to be cleared: they are not in the queue the cap counts.
        let status = await spool.status()
        #expect(status.waiting == 2 && status.acknowledgedKept == 2)
        for seq in 5...10 { await spool.append(sample(seq)) }
        // Eight owed, cap six: the two oldest go, 3 and 4, which only EFDI still owed.
        #expect(seqs(try await spool.allSamples().map(\.0)) == [5, 6, 7, 8, 9, 10])
        #expect(await spool.status().dropped["rows"] == 2)
        #expect(try rawRows(scratch.spoolPath).keys.sorted() == [1, 2, 5, 6, 7, 8, 9, 10])
    }

    @Test("a forgotten acknowledged batch writes its rows still in flight as acknowledged")
    func forgettingAnAcknowledgedBatchWritesItsRows() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both())
        await spool.append(sample(0))
        _ = try #require(try await spool.takeBatch(for: .gpsInfo, id: "first", now: epoch))
        try await spool.acknowledge(batch: "first", now: epoch)
        // EFDI never sends row 0. Batch 1 is forgotten with the take of batch 1152, the first
        // forgetting (every 128th) that passes 1024 newer ones.
        let newer = SpoolBatches.kept + SpoolBatches.forgetEvery - 1
        _ = await spool.append((1...newer).map { sample($0) })
        for _ in 1..<newer { _ = try await spool.takeBatch(for: .gpsInfo, maximumEntries: 1, now: epoch) }
        #expect(try rawRows(scratch.spoolPath)[0] == "in_flight")
        _ = try await spool.takeBatch(for: .gpsInfo, maximumEntries: 1, now: epoch)
        #expect(try rawRows(scratch.spoolPath)[0] == "acknowledged")
        #expect(try await spool.allSamples().first?.delivery == "acknowledged")
        #expect(await spool.status().byOutput["efdi"]?["pending"] == newer + 1)
    }

    @Test("switching from gps:info alone to EFDI alone hands EFDI the whole backlog")
    func switchingOutputsKeepsTheBacklog() async throws {
        let scratch = TemporaryDirectory("spool")
        do {
            let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo] })
            for seq in 1...3 { await spool.append(sample(seq)) }
        }
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.efdi] })
        #expect(seqs(try await spool.allSamples().map(\.0)) == [1, 2, 3])
        #expect(await spool.status().byOutput == ["efdi": ["pending": 3]])
        #expect(seqs(try #require(try await spool.takeBatch(for: .efdi, now: epoch)).samples) == [1, 2, 3])
    }

    @Test("an output turned off and on again does not send what its acknowledged batches held")
    func turningAnOutputOffAndOnKeepsItsAcknowledgements() async throws {
        let scratch = TemporaryDirectory("spool")
        do {
            let spool = Spool(path: scratch.spoolPath, configuration: both())
            for seq in 1...4 { await spool.append(sample(seq)) }
            _ = try #require(try await spool.takeBatch(for: .gpsInfo, id: "g1", maximumEntries: 2, now: epoch))
            try await spool.acknowledge(batch: "g1", now: epoch)
        }
        // gps:info off: EFDI still owes all four.
        do {
            let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.efdi] })
            #expect(await spool.status().byOutput["efdi"] == ["pending": 4])
        }
        // On again: it owes only the two it never had acknowledged.
        let spool = Spool(path: scratch.spoolPath, configuration: both())
        #expect(await spool.status().byOutput["gps_info"] == ["acknowledged": 2, "pending": 2])
        #expect(seqs(try #require(try await spool.takeBatch(for: .gpsInfo, now: epoch)).samples) == [3, 4])
    }

    @Test("a reader of a spool the daemon has not migrated yet reads each row's own state")
    func aReaderOfAnOlderFileReadsTheRows() async throws {
        let scratch = TemporaryDirectory("spool")
        do {
            let spool = Spool(path: scratch.spoolPath, configuration: configuration())
            for seq in 1...3 { await spool.append(sample(seq)) }
            _ = try #require(try await spool.takeBatch(id: "b1", maximumEntries: 1, now: epoch))
        }
        // As agrigps before this version left it: no acknowledgements in the batch table.
        try await DatabaseQueue(path: scratch.spoolPath).write { db in
            try db.execute(sql: "ALTER TABLE batch DROP COLUMN acknowledged_at")
            try db.execute(
                sql: "DELETE FROM grdb_migrations WHERE identifier = ?",
                arguments: [SpoolSchema.acknowledgedBatchesVersion])
        }
        let status = try await SpoolReader(path: scratch.spoolPath).status(now: epoch)
        #expect(
            status.pending == 2 && status.inFlight == 1
                && status.byOutput == ["gps_info": ["pending": 2, "in_flight": 1]])
    }
}
