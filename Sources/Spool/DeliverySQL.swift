import GRDB

/// A sample's delivery state as the queries read it.
///
/// An acknowledgement writes only its batch's row (`batch.acknowledged_at`), not the samples: a row
/// that grew at every acknowledgement no longer fit the page the appends had packed, and SQLite
/// spread it over a new one. So a sample still `in_flight` in an acknowledged batch is acknowledged,
/// and stays so until it is cleared with others (see `Spool.acknowledge`) or its batch is forgotten,
/// which writes the state into the row. Every query that reads a delivery state reads it through
/// these fragments.
struct DeliverySQL {
    /// Whether the file's batches carry acknowledgements. A reader in another process may open a spool
    /// the daemon has not migrated yet: there a state is what the row says.
    let batchesAcknowledged: Bool

    /// The fragments for the daemon's own spool, which is always migrated.
    static let migrated = DeliverySQL(batchesAcknowledged: true)

    /// The fragments for a file read as it is, with or without the batch table's acknowledgements.
    init(readingAsItIs db: Database) {
        batchesAcknowledged = (try? db.columns(in: "batch").contains { $0.name == "acknowledged_at" }) ?? false
    }

    init(batchesAcknowledged: Bool) {
        self.batchesAcknowledged = batchesAcknowledged
    }

    /// Numbers of `output`'s acknowledged batches (a subquery SQLite runs once per statement).
    static func acknowledgedBatches(_ output: SpoolOutput) -> String {
        "(SELECT number FROM batch WHERE output = '\(output.name)' AND acknowledged_at IS NOT NULL)"
    }

    /// `output`'s state of the row.
    func delivery(_ output: SpoolOutput) -> String {
        guard batchesAcknowledged else { return output.delivery }
        return
            "(CASE WHEN \(output.delivery) = 'in_flight' AND \(output.batchID) IN \(Self.acknowledgedBatches(output)) "
            + "THEN 'acknowledged' ELSE \(output.delivery) END)"
    }

    /// Rows every output is done with (acknowledged, or not wanted).
    var finished: String {
        "(" + SpoolOutput.all.map { "\(delivery($0)) IN \(DeliveryState.done)" }.joined(separator: " AND ") + ")"
    }

    /// Rows some output still owes: neither stamped as history nor finished.
    var queued: String { "(acknowledged_at IS NULL AND NOT \(finished))" }

    /// Rows still owed and in flight in no output: eviction takes the oldest of these.
    var unsent: String {
        "(\(queued) AND " + SpoolOutput.all.map { "\(delivery($0)) != 'in_flight'" }.joined(separator: " AND ") + ")"
    }

    /// Deletes the acknowledged rows waiting to be cleared when no history is kept.
    var clearAcknowledged: String { "DELETE FROM sample WHERE NOT \(queued)" }
}
