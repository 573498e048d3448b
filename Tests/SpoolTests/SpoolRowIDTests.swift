import Foundation
import GRDB
import TestSupport
import Testing

@testable import Spool

/// Row ids are never given out twice: the heartbeat's loss check and the cab view's trail take a
/// higher id for a newer sample. The spool keeps that without AUTOINCREMENT's counter page.
@Suite struct SpoolRowIDTests {
    static func database(_ path: String) throws -> DatabaseQueue { try DatabaseQueue(path: path) }

    static func sql(_ path: String, _ statement: String) throws {
        try database(path).write { db in try db.execute(sql: statement) }
    }

    static func ids(_ path: String) throws -> [Int64] {
        try database(path).read { db in try Int64.fetchAll(db, sql: "SELECT id FROM sample ORDER BY id") }
    }

    static func schema(_ path: String) throws -> (table: String, indexes: [String]) {
        try database(path).read { db in
            (
                try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'sample'")
                    ?? "",
                try String.fetchAll(
                    db,
                    sql:
                        "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sample' AND sql IS NOT NULL ORDER BY name"
                )
            )
        }
    }

    @Test("after the newest samples leave, the next one still gets a higher id, in this run and the next")
    func idsAreNotReusedAfterTheNewestLeave() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        for seq in 0..<5 { #expect(await spool.append(sample(seq)) == .stored(rowID: Int64(seq + 1))) }
        let batch = try #require(try await spool.takeBatch(id: "all"))
        #expect(batch.samples.count == 5)
        #expect(try await spool.acknowledge(batch: "all") == 5)
        // Acknowledged rows are cleared a few hundred at a time, and when the spool opens again.
        let cleared = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo] })
        #expect(try Self.ids(scratch.spoolPath).isEmpty)
        #expect(await cleared.highestRowID() == 5)
        #expect(await cleared.append(sample(5)) == .stored(rowID: 6))
        // A spool opened again (the daemon restarted) goes on from there too.
        _ = try await cleared.takeBatch(id: "one")
        _ = try await cleared.acknowledge(batch: "one")
        let reopened = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo] })
        #expect(try Self.ids(scratch.spoolPath).isEmpty)
        #expect(await reopened.highestRowID() == 6)
        #expect(await reopened.append(sample(6)) == .stored(rowID: 7))
    }

    @Test("a damaged note of the highest id is no id: the table's own highest counts")
    func damagedNoteIsIgnored() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        for seq in 0..<3 { _ = await spool.append(sample(seq)) }
        for note in ["'x'", "-5", "1e300", "9.5e15"] {
            try Self.sql(
                scratch.spoolPath,
                "INSERT INTO spool_state (name, number) VALUES ('highest_id', \(note)) ON CONFLICT(name) DO UPDATE SET number = excluded.number"
            )
            let highest = await spool.highestRowID()
            #expect(highest == 3, "note \(note)")
        }
        #expect(await spool.append(sample(3)) == .stored(rowID: 4))
    }

    /// The schema as the previous version left it, with 8 samples taken and the newest 3 gone; its
    /// connection closed again. Returns the names of its indexes.
    static func makeOldSpool(_ path: String) throws -> [String] {
        let old = try database(path)
        var migrator = SpoolSchema.migrator
        migrator.eraseDatabaseOnSchemaChange = false
        try migrator.migrate(old, upTo: SpoolSchema.lighterAppendVersion)
        try old.write { db in
            for seq in 0..<8 {
                try db.execute(
                    sql:
                        "INSERT INTO sample (sampled_at, state, gpsd_mode, gpsd_status, wire_size, detail) VALUES (?, 'no_fix', 1, 0, 10, ?)",
                    arguments: [Date().timeIntervalSince1970 - 60 + Double(seq), "seq \(seq)"])
            }
            try db.execute(sql: "DELETE FROM sample WHERE id > 5")
            #expect(try Int.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'sample'") == 8)
        }
        return try schema(path).indexes
    }

    @Test(
        "a spool made with AUTOINCREMENT (agrigps before this version) is made again without it, rows, indexes and counter kept"
    )
    func autoincrementSpoolIsRebuilt() async throws {
        let scratch = TemporaryDirectory("spool")
        let indexesBefore = try Self.makeOldSpool(scratch.spoolPath)
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        #expect(await spool.highestRowID() == 8)
        #expect(await spool.append(sample(8)) == .stored(rowID: 9))
        let (table, indexes) = try Self.schema(scratch.spoolPath)
        #expect(!table.contains("AUTOINCREMENT"))
        // The batch indexes went with the batch table (v7); the delivery indexes were made again.
        #expect(indexes == indexesBefore.filter { !$0.hasSuffix("_batch") } && indexes.count == 2, "\(indexes)")
        #expect(try Self.ids(scratch.spoolPath) == [1, 2, 3, 4, 5, 9])
        let details = try await spool.allSamples().map(\.0.sample.detail)
        #expect(details.prefix(5) == ["seq 0", "seq 1", "seq 2", "seq 3", "seq 4"])
    }
}
