import Foundation
import GRDB

/// The spool's schema, built by migrations that only ever add: an upgrade keeps the queue.
enum SpoolSchema {
    static let queueVersion = "v1-queue"
    static let retriesVersion = "v2-retries-and-counters"
    static let uptimeVersion = "v3-sampled-uptime"
    static let efdiVersion = "v4-efdi-output"
    static let lighterAppendVersion = "v5-lighter-append"
    static let ownRowIDsVersion = "v6-own-row-ids"
    static let batchTableVersion = "v7-batch-table"
    static let acknowledgedBatchesVersion = "v8-acknowledged-batches"
    static let machineVersion = "v9-machine"
    static let machineTotalsVersion = "v10-machine-totals"
    static let engineTotalVersion = "v11-engine-total"
    static let totalsOnDeleteVersion = "v12-totals-on-delete"

    /// Schema steps the file has applied that this version does not know, as they are named there;
    /// nil for a file that has never been migrated.
    static func unknownSteps(_ db: Database) throws -> [String]? {
        guard try db.tableExists("grdb_migrations") else { return nil }
        let known = Set(migrator.migrations)
        return try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations WHERE typeof(identifier) = 'text'")
            .filter { !known.contains($0) }.map { String($0.prefix(40)) }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration(queueVersion) { db in
            try db.execute(
                sql: """
                    CREATE TABLE sample (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        sampled_at REAL NOT NULL,
                        receiver_time REAL,
                        state TEXT NOT NULL,
                        state_reason TEXT,
                        gpsd_mode INTEGER NOT NULL,
                        gpsd_status INTEGER NOT NULL,
                        latitude REAL, longitude REAL, altitude_hae REAL, altitude_msl REAL,
                        speed REAL, track REAL, hdop REAL, pdop REAL, satellites_used INTEGER,
                        device TEXT, clock_skew REAL, detail TEXT,
                        wire_size INTEGER NOT NULL,
                        delivery TEXT NOT NULL DEFAULT 'pending',
                        batch_id TEXT,
                        sent_at REAL
                    );
                    CREATE INDEX sample_by_delivery ON sample(delivery, id);
                    """)
        }
        migrator.registerMigration(retriesVersion) { db in
            try db.execute(
                sql: """
                    ALTER TABLE sample ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE sample ADD COLUMN last_error TEXT;
                    ALTER TABLE sample ADD COLUMN retry_after REAL;
                    ALTER TABLE sample ADD COLUMN acknowledged_at REAL;
                    CREATE INDEX sample_by_batch ON sample(batch_id);
                    CREATE TABLE spool_state (
                        name TEXT PRIMARY KEY NOT NULL,
                        number REAL,
                        text TEXT
                    );
                    """)
        }
        migrator.registerMigration(uptimeVersion) { db in
            try db.execute(sql: "ALTER TABLE sample ADD COLUMN sampled_uptime REAL")
        }
        // EFDI beside gps:info: its own delivery state per sample. Rows already there are off for it
        // until the spool opens with EFDI enabled (`applyOutputs`).
        migrator.registerMigration(efdiVersion) { db in
            let efdi = SpoolOutput.efdi
            try db.execute(
                sql: """
                    ALTER TABLE sample ADD COLUMN \(efdi.delivery) TEXT NOT NULL DEFAULT 'off';
                    ALTER TABLE sample ADD COLUMN \(efdi.batchID) TEXT;
                    ALTER TABLE sample ADD COLUMN \(efdi.sentAt) REAL;
                    ALTER TABLE sample ADD COLUMN \(efdi.attempts) INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE sample ADD COLUMN \(efdi.lastError) TEXT;
                    ALTER TABLE sample ADD COLUMN \(efdi.retryAfter) REAL;
                    CREATE INDEX sample_by_efdi_delivery ON sample(\(efdi.delivery), id);
                    CREATE INDEX sample_by_efdi_batch ON sample(\(efdi.batchID));
                    """)
        }
        // Every append is a durable commit, and every page it touches goes to the WAL again. So a new
        // row, pending for each output and in no batch yet, enters no index at all: the delivery
        // indexes keep only the few rows in a state looked up by (in flight, failed, parked), and
        // the batch indexes only rows that were sent. Pending rows are found in id order, oldest
        // first, which a table scan gives without sorting. No state row is updated beside the
        // append either: the newest row's time is the last append.
        migrator.registerMigration(lighterAppendVersion) { db in
            for output in SpoolOutput.all {
                let prefix = output == .gpsInfo ? "sample_by" : "sample_by_\(output.name)"
                let states = ["in_flight", "failed", "parked"].map { "\(output.delivery) = '\($0)'" }.joined(
                    separator: " OR ")
                try db.execute(
                    sql: """
                        DROP INDEX IF EXISTS \(prefix)_delivery;
                        CREATE INDEX \(prefix)_delivery ON sample(\(output.delivery), id) WHERE \(states);
                        DROP INDEX IF EXISTS \(prefix)_batch;
                        CREATE INDEX \(prefix)_batch ON sample(\(output.batchID)) WHERE \(output.batchID) IS NOT NULL;
                        """)
            }
            try db.execute(sql: "DELETE FROM spool_state WHERE name = 'last_append'")
        }
        // Without AUTOINCREMENT an append writes one page, not two: see `RowIDs`. SQLite cannot drop
        // it in place, so the table is made again, rows, indexes and the counter's value kept.
        migrator.registerMigration(ownRowIDsVersion) { db in
            let table =
                try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'sample'")
                ?? ""
            if table.contains(" AUTOINCREMENT") {
                let counted = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'sample'") ?? 0
                let indexes = try String.fetchAll(
                    db,
                    sql:
                        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sample' AND sql IS NOT NULL"
                )
                let rebuilt = table.replacingOccurrences(of: " AUTOINCREMENT", with: "")
                guard let name = rebuilt.range(of: "sample") else { return }
                try db.execute(sql: rebuilt.replacingCharacters(in: name, with: "sample_rebuilt"))
                try db.execute(sql: "INSERT INTO sample_rebuilt SELECT * FROM sample")
                try db.execute(sql: "DROP TABLE sample")
                try db.execute(sql: "ALTER TABLE sample_rebuilt RENAME TO sample")
                for index in indexes { try db.execute(sql: index) }
                if counted > 0 {
                    try db.execute(
                        sql: """
                            INSERT INTO spool_state (name, number) VALUES ('highest_id', ?)
                            ON CONFLICT(name) DO UPDATE SET number = MAX(IFNULL(number, 0), excluded.number)
                            """, arguments: [counted])
                }
            }
            try db.execute(sql: RowIDs.trigger)
        }
        migrator.registerMigration(batchTableVersion, migrate: moveBatchesToTheirTable)
        // An acknowledgement writes its batch's row, not the samples': see `DeliverySQL`.
        migrator.registerMigration(acknowledgedBatchesVersion) { db in
            try db.execute(sql: "ALTER TABLE batch ADD COLUMN acknowledged_at REAL")
        }
        // What the machine's controllers said at each sample (`MachineReading`): NULL where none
        // listened, a byte of the row's header each.
        migrator.registerMigration(machineVersion) { db in
            try db.execute(
                sql: """
                    ALTER TABLE sample ADD COLUMN machine_work TEXT;
                    ALTER TABLE sample ADD COLUMN machine_speed REAL;
                    ALTER TABLE sample ADD COLUMN machine_speed_source TEXT;
                    ALTER TABLE sample ADD COLUMN engine_speed REAL;
                    ALTER TABLE sample ADD COLUMN engine_hours REAL;
                    ALTER TABLE sample ADD COLUMN fuel_rate REAL;
                    ALTER TABLE sample ADD COLUMN fuel_used REAL;
                    """)
        }
        // The running totals at each sample (`MachineTotals`), for the TimeLogs' total DDIs.
        migrator.registerMigration(machineTotalsVersion) { db in
            try db.execute(
                sql: """
                    ALTER TABLE sample ADD COLUMN machine_effective_s REAL;
                    ALTER TABLE sample ADD COLUMN machine_ineffective_s REAL;
                    ALTER TABLE sample ADD COLUMN machine_fuel_ml REAL;
                    """)
        }
        // The engine's running seconds beside them (DDI 492); rows from before hold NULL, read as 0.
        migrator.registerMigration(engineTotalVersion) { db in
            try db.execute(sql: "ALTER TABLE sample ADD COLUMN machine_engine_s REAL")
        }
        // The running totals were written beside the queue at every append, a page more in each
        // sample's commit. Each row carries them: they are kept beside the queue only when a row
        // that has them leaves, so that a restart with no row left still goes on from them.
        migrator.registerMigration(totalsOnDeleteVersion) { db in
            try db.execute(sql: MachineTotalsState.keptOnDelete)
        }
        return migrator
    }

    /// A take used to write each batch's 36-character id and its send time into every row it took,
    /// for each output, and index them: rows grew, pages split, and indexes changed at every take and
    /// again at every acknowledgement. Now a batch is one row of its own (see `SpoolBatches`) and a
    /// sample holds only its small number. Batches in the file keep their ids and rows; rows already
    /// acknowledged and kept as history hold 0 (sent, in a batch no longer known). The delivery
    /// indexes keep only failed and parked rows: in-flight ones are found through their batch.
    private static func moveBatchesToTheirTable(_ db: Database) throws {
        try db.execute(sql: SpoolBatches.table)
        for output in SpoolOutput.all {
            let (batchID, name) = (output.batchID, output.name)
            try db.execute(
                sql: """
                    INSERT INTO batch (id, output, first_id, last_id, sent_at)
                    SELECT \(batchID), '\(name)', MIN(id), MAX(id), MIN(\(output.sentAt)) FROM sample
                    WHERE typeof(\(batchID)) = 'text' AND acknowledged_at IS NULL GROUP BY \(batchID) ORDER BY MIN(id)
                    """)
            try db.execute(
                sql: """
                    UPDATE sample SET \(batchID) = IFNULL((SELECT number FROM batch WHERE batch.output = '\(name)' AND batch.id = sample.\(batchID)), 0)
                    WHERE \(batchID) IS NOT NULL
                    """)
            let prefix = output == .gpsInfo ? "sample_by" : "sample_by_\(name)"
            let states = DeliveryState.lookedUp.map { "\(output.delivery) = '\($0)'" }.joined(separator: " OR ")
            try db.execute(
                sql: """
                    DROP INDEX IF EXISTS \(prefix)_batch;
                    DROP INDEX IF EXISTS \(prefix)_delivery;
                    CREATE INDEX \(prefix)_delivery ON sample(\(output.delivery), id) WHERE \(states);
                    """)
        }
    }

    /// Brings every unfinished sample in line with the outputs enabled now: an output turned off
    /// stops owing anything (its in-flight batches too: their answers no longer matter), and one
    /// turned on owes every sample still in the spool, withheld if the sample was. Samples no output
    /// waits for any more are finished: deleted, or stamped as history.
    /// Remembers them, for processes that open the spool without a configuration of their own.
    static func applyOutputs(_ enabled: [SpoolOutput], history: Bool, now: Double, in db: Database) throws {
        let withheld = "'withheld' IN (\(SpoolOutput.all.map(\.delivery).joined(separator: ", ")))"
        // Outputs turned on first: a row still owed only to one turned off would otherwise look
        // finished (off for every output) to the next statement, and be dropped unsent.
        for output in SpoolOutput.all where enabled.contains(output) {
            try db.execute(
                sql: """
                    UPDATE sample SET \(output.delivery) = CASE WHEN \(withheld) THEN 'withheld' ELSE 'pending' END
                    WHERE \(output.delivery) = 'off' AND \(Spool.queued)
                    """)
        }
        for output in SpoolOutput.all where !enabled.contains(output) {
            // As the queries read the state: a row in an acknowledged batch stays acknowledged, and is
            // not sent again should the output be turned on later.
            let state = DeliverySQL.migrated.delivery(output)
            try db.execute(
                sql:
                    "UPDATE sample SET \(output.delivery) = 'off' WHERE \(state) NOT IN \(DeliveryState.done) AND \(Spool.queued)"
            )
        }
        try SpoolState.set("outputs", number: now, text: enabled.map(\.name).joined(separator: ","), in: db)
        if history {
            try db.execute(
                sql: "UPDATE sample SET acknowledged_at = ? WHERE acknowledged_at IS NULL AND \(Spool.finished)",
                arguments: [now])
        } else {
            // With the rows acknowledged before and not yet cleared (see `Spool.acknowledge`).
            try db.execute(sql: Spool.clearAcknowledged)
        }
    }

    /// The outputs the spool was last opened with; gps:info for a spool that never was (or a
    /// damaged note).
    static func storedOutputs(_ db: Database) throws -> [SpoolOutput] {
        let text = try String.fetchOne(db, sql: "SELECT text FROM spool_state WHERE name = 'outputs'") ?? ""
        return SpoolConfiguration.enabled(
            text.prefix(200).split(separator: ",").compactMap { SpoolOutput(name: String($0)) })
    }

    /// The monotonic clock starts again at every boot: stamps from an earlier boot are cleared at
    /// open, so they can never be taken for this boot's.
    static func forgetOtherBoots(_ db: Database) throws {
        guard
            let boot = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .ascii)
                .trimmingCharacters(in: .whitespacesAndNewlines), !boot.isEmpty
        else {
            try db.execute(sql: "UPDATE sample SET sampled_uptime = NULL WHERE sampled_uptime IS NOT NULL")
            return
        }
        guard try String.fetchOne(db, sql: "SELECT text FROM spool_state WHERE name = 'boot_id'") != boot else {
            return
        }
        try db.execute(sql: "UPDATE sample SET sampled_uptime = NULL WHERE sampled_uptime IS NOT NULL")
        try db.execute(
            sql:
                "INSERT INTO spool_state (name, text) VALUES ('boot_id', ?) ON CONFLICT(name) DO UPDATE SET text = excluded.text",
            arguments: [boot])
    }
}
