import Foundation
import GRDB

/// The spool's schema, built by migrations that only ever add: an upgrade keeps the queue.
enum SpoolSchema {
    static let queueVersion = "v1-queue"
    static let retriesVersion = "v2-retries-and-counters"
    static let uptimeVersion = "v3-sampled-uptime"

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration(queueVersion) { db in
            try db.execute(sql: """
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
            try db.execute(sql: """
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
        return migrator
    }

    /// The monotonic clock starts again at every boot: stamps from an earlier boot are cleared at
    /// open, so they can never be taken for this boot's.
    static func forgetOtherBoots(_ db: Database) throws {
        guard let boot = try? String(contentsOfFile: "/proc/sys/kernel/random/boot_id", encoding: .ascii)
            .trimmingCharacters(in: .whitespacesAndNewlines), !boot.isEmpty else {
            try db.execute(sql: "UPDATE sample SET sampled_uptime = NULL WHERE sampled_uptime IS NOT NULL")
            return
        }
        guard try String.fetchOne(db, sql: "SELECT text FROM spool_state WHERE name = 'boot_id'") != boot else { return }
        try db.execute(sql: "UPDATE sample SET sampled_uptime = NULL WHERE sampled_uptime IS NOT NULL")
        try db.execute(sql: "INSERT INTO spool_state (name, text) VALUES ('boot_id', ?) ON CONFLICT(name) DO UPDATE SET text = excluded.text",
                       arguments: [boot])
    }
}
