import Foundation
import GRDB

/// The sharing switch and the mark of the pause in force, kept in `spool_state` beside the queue.
///
/// A pause is counted by row id, not by time: the highest id given out when it began is noted as
/// `paused_after_id`, and the samples kept since are the withheld rows above it. Ids only grow (see
/// `RowIDs`), where the system clock can be wrong or be stepped while paused.
enum SharingState {
    /// Rows some output holds back because sharing was paused when they were taken.
    static let withheld = "(" + SpoolOutput.all.map { "\($0.delivery) = 'withheld'" }.joined(separator: " OR ") + ")"
    /// Withheld rows after the pause's mark. Rows above an id are read by rowid range, so the count
    /// costs what the pause has added, not the size of the spool.
    static let keptSQL = "SELECT COUNT(*) FROM sample WHERE id > ? AND \(withheld)"

    /// Pausing again while paused keeps the pause's start and mark: "paused since" and the count
    /// stay those of the pause the user began. Resuming forgets the mark, so that a later pause by an
    /// agrigps that writes none is not counted from an old one.
    static func set(paused: Bool, at now: Double, in db: Database) throws {
        let current = try String.fetchOne(db, sql: "SELECT text FROM spool_state WHERE name = 'sharing'")
        if paused, current == "paused" { return }
        try SpoolState.set("sharing", number: now, text: paused ? "paused" : "active", in: db)
        if paused {
            try db.execute(
                sql: """
                    INSERT INTO spool_state (name, number) VALUES ('paused_after_id', (SELECT \(RowIDs.highestSQL)))
                    ON CONFLICT(name) DO UPDATE SET number = excluded.number
                    """)
        } else {
            try db.execute(sql: "DELETE FROM spool_state WHERE name = 'paused_after_id'")
        }
    }

    /// Samples withheld since the pause began: those above `mark`. Without a readable mark (a pause
    /// written by an older agrigps, a damaged row) every withheld sample still here is counted,
    /// which is at most what this pause kept plus what earlier ones left.
    static func kept(after mark: Int?, withheldInAll: Int, in db: Database) throws -> Int {
        guard let mark else { return withheldInAll }
        let count = try Row.fetchOne(db.cachedStatement(sql: keptSQL), arguments: [mark])
        return count?.int(at: 0, in: 0...Int.max) ?? 0
    }
}
