import Bounds
import GRDB

/// Batches, one row each: agrirouter's message id, the output that sent it, the range of sample ids
/// it was taken from, when it was sent, and when it was acknowledged. A sample holds only its batch's
/// number, so a take writes one small row here and a few bytes into each sample it takes, a batch's
/// samples are found by their range of row ids, which needs no index to keep up at every take, and
/// an acknowledgement writes only here (see `DeliverySQL`).
///
/// The sample table's batch columns were declared TEXT when they held ids, so SQLite stores the
/// numbers as text ('42'). Comparisons with a number convert it back, so every query here compares
/// with numbers and never looks at the stored type.
enum SpoolBatches {
    static let table = """
        CREATE TABLE batch (
            number INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            output TEXT NOT NULL,
            first_id INTEGER NOT NULL,
            last_id INTEGER NOT NULL,
            sent_at REAL
        )
        """
    /// How many of the newest batches are remembered. An acknowledgement of an older one finds no rows
    /// (its samples are sent again, never lost). When a batch is forgotten its rows still in flight
    /// go back to pending, or are written acknowledged if it was. Far more than the in-flight timeout
    /// lets a publisher keep.
    static let kept = 1024
    /// Old batches are forgotten once per this many takes, so that a take usually writes only its own row.
    static let forgetEvery = 128

    /// One batch as its row holds it, every number checked: the file may be damaged.
    struct Range {
        var number: Int
        var output: SpoolOutput
        var first: Int
        var last: Int
        /// Its answer came: its rows still in flight are acknowledged.
        var acknowledged: Bool

        /// Selects the batch's rows: in its range of ids and still holding its number (a row taken
        /// again since holds the newer batch's).
        var rows: String { "id BETWEEN \(first) AND \(last) AND \(output.batchID) = \(number)" }

        init?(_ row: Row) {
            guard let number = row.int("number", in: 1...Int.max),
                let output = row.text("output", limit: 32).flatMap(SpoolOutput.init(name:)),
                let first = row.int("first_id", in: 0...Int.max), let last = row.int("last_id", in: first...Int.max)
            else { return nil }
            (self.number, self.output, self.first, self.last) = (number, output, first, last)
            // Anything but NULL counts, as in `DeliverySQL`: the two must agree on a damaged value.
            acknowledged = !row.hasNull("acknowledged_at")
        }

        /// Its rows still in flight go back to pending, with no failure counted; returns how many. An
        /// acknowledged batch's stay: they are done.
        func release(in db: Database) throws -> Int {
            guard !acknowledged else { return 0 }
            try db.execute(
                sql:
                    "UPDATE sample SET \(output.delivery) = 'pending' WHERE \(rows) AND \(output.delivery) = 'in_flight'"
            )
            return db.changesCount
        }
    }

    private static let columns = "number, output, first_id, last_id, acknowledged_at"

    /// The batches sent under message id `id`: one, unless a caller reused an id.
    static func ranges(of id: String, in db: Database) throws -> [Range] {
        try Row.fetchAll(db.cachedStatement(sql: "SELECT \(columns) FROM batch WHERE id = ?"), arguments: [id])
            .compactMap(Range.init)
    }

    /// Notes a new batch and returns its number. Numbers only grow (the newest batch is never
    /// forgotten), so a row still holding an old number can never be taken for a newer batch's.
    static func record(id: String, output: SpoolOutput, first: Int64, last: Int64, sentAt: Double, in db: Database)
        throws -> Int
    {
        let highest =
            try Row.fetchOne(db, sql: "SELECT MAX(number) AS number FROM batch")?.int("number", in: 0...(Int.max - 1))
            ?? 0
        let number = highest + 1
        try db.cachedStatement(
            sql: "INSERT INTO batch (number, id, output, first_id, last_id, sent_at) VALUES (?, ?, ?, ?, ?, ?)"
        )
        .execute(arguments: [number, id, output.name, first, last, sentAt])
        if number % forgetEvery == 0 { try forget(upTo: number - kept, in: db) }
        return number
    }

    /// Marks `batch` acknowledged. Its rows that went back to pending or failed before the answer
    /// came (they still hold its number) are acknowledged in the row: the batch's mark covers only
    /// rows in flight.
    static func acknowledge(_ batch: Range, at now: Double, in db: Database) throws {
        try db.execute(sql: "UPDATE batch SET acknowledged_at = ? WHERE number = ?", arguments: [now, batch.number])
        let delivery = batch.output.delivery
        try db.execute(
            sql:
                "UPDATE sample SET \(delivery) = 'acknowledged' WHERE \(batch.rows) AND \(delivery) NOT IN \(DeliveryState.done) AND \(delivery) != 'in_flight'"
        )
    }

    /// Forgets batches up to `number`. Their rows still in flight go back to pending first, or, if
    /// the batch was acknowledged, are written acknowledged: without its row nothing else says so.
    private static func forget(upTo number: Int, in db: Database) throws {
        guard number > 0 else { return }
        for range in try Row.fetchAll(db, sql: "SELECT \(columns) FROM batch WHERE number <= ?", arguments: [number])
            .compactMap(Range.init)
        {
            if range.acknowledged {
                let delivery = range.output.delivery
                try db.execute(
                    sql:
                        "UPDATE sample SET \(delivery) = 'acknowledged' WHERE \(range.rows) AND \(delivery) = 'in_flight'"
                )
            } else {
                _ = try range.release(in: db)
            }
        }
        try db.execute(sql: "DELETE FROM batch WHERE number <= ?", arguments: [number])
    }

    /// Rows in flight in no batch this table knows (a damaged file, or one edited by hand) could
    /// never be acknowledged or reclaimed: they go back to pending. Run when the spool opens.
    static func releaseOrphans(in db: Database) throws {
        for output in SpoolOutput.all {
            try db.execute(
                sql: """
                    UPDATE sample SET \(output.delivery) = 'pending' WHERE \(output.delivery) = 'in_flight'
                    AND (\(output.batchID) IS NULL OR \(output.batchID) NOT IN (SELECT number FROM batch WHERE output = ?))
                    """, arguments: [output.name])
        }
    }

    /// Batches with rows still in flight: their message id, output and send time (nil if damaged).
    static func inFlight(in db: Database) throws -> [(id: String, output: SpoolOutput, sentAt: Double?)] {
        try Row.fetchAll(
            db, sql: "SELECT \(columns), id, sent_at FROM batch WHERE acknowledged_at IS NULL ORDER BY number"
        ).compactMap { row in
            guard let range = Range(row), let id = row.text("id", limit: 200),
                try Bool.fetchOne(
                    db,
                    sql:
                        "SELECT EXISTS (SELECT 1 FROM sample WHERE \(range.rows) AND \(range.output.delivery) = 'in_flight')"
                ) == true
            else { return nil }
            return (id, range.output, row.double("sent_at", in: Bounds.epochSeconds))
        }
    }

    /// Batches not acknowledged and sent before `cutoff`, or whose send time is damaged (as good as expired).
    static func sent(before cutoff: Double, in db: Database) throws -> [Range] {
        try Row.fetchAll(
            db,
            sql:
                "SELECT \(columns) FROM batch WHERE acknowledged_at IS NULL AND (sent_at < ? OR typeof(sent_at) != 'real')",
            arguments: [cutoff]
        )
        .compactMap(Range.init)
    }
}
