import BlockingWork
import Foundation
import GRDB
import StateFiles

/// The spool seen from another process (`agrigps status`, the cab view): opened read-only, never
/// migrated, checked or moved aside, so that a reader can neither change nor quarantine the daemon's file.
public actor SpoolReader {
    /// Its calls block on the disk (fsync, SQLite's busy timeout), so they run on a thread of its own,
    /// which ends with it, never on Swift's cooperative pool.
    private nonisolated let executor: DedicatedThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public let path: String
    private var database: DatabaseQueue?
    /// The file's inode when it was opened: a spool moved aside and made anew is opened again.
    private var inode: UInt64 = 0

    /// `executor`: a thread shared with other readers of the same look (the cab view's), so that
    /// going from one to the next switches no thread; by default one of its own.
    public init(path: String, executor: DedicatedThreadExecutor = DedicatedThreadExecutor(name: "agrigps-spool-r")) {
        self.path = path
        self.executor = executor
    }

    /// The same counts and notes as the daemon's `Spool.status`, minus what only the daemon holds in memory.
    public func status(now: Date = Date()) throws(SpoolError) -> SpoolStatus {
        try read { db in
            var status = SpoolStatus()
            try Spool.readStatus(db, now: now, into: &status)
            return status
        }
    }

    /// The working width the driver gave in the cab view (`Spool.setWorkingWidth`); nil when none.
    /// One row, where `status` would count the whole queue.
    public func workingWidth() throws(SpoolError) -> Double? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT number FROM spool_state WHERE name = 'working_width'").flatMap(
                Spool.workingWidth)
        }
    }

    /// The newest samples still in the spool, newest first, whatever their delivery state.
    public func newest(limit: Int) throws(SpoolError) -> [SpooledSample] {
        let limit = max(0, min(limit, 100_000))
        return try read { db in
            try Row.fetchAll(db.cachedStatement(sql: Self.select(db) + " ORDER BY id DESC LIMIT ?"), arguments: [limit])
                .map(SampleColumns.spooled)
        }
    }

    /// The samples stored after row `rowID`, newest first, at most `limit`, and the spool's
    /// `changeCounter()`, as one read: what a reader that has seen up to `rowID` has not seen yet,
    /// and the version it saw it at. With `statusAt`, the same read also gives `status(now:)` at
    /// that time: the cab view's look at each sample is then one transaction, not two.
    public func newestWithVersion(after rowID: Int64, limit: Int, statusAt: Date? = nil)
        throws(SpoolError) -> (rows: [SpooledSample], version: Int64, status: SpoolStatus?)
    {
        let limit = max(0, min(limit, 100_000))
        return try read { db in
            let version = try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) ?? 0
            let rows = try Row.fetchAll(
                db.cachedStatement(sql: Self.select(db) + " WHERE id > ? ORDER BY id DESC LIMIT ?"),
                arguments: [rowID, limit]
            )
            .map(SampleColumns.spooled)
            guard let statusAt else { return (rows, version, nil) }
            var status = SpoolStatus()
            try Spool.readStatus(db, now: statusAt, into: &status)
            return (rows, version, status)
        }
    }

    /// The samples' select for the file as it is: one the daemon has not migrated yet has no machine columns.
    private static func select(_ db: Database) throws -> String {
        SampleColumns.select(present: Set(try db.columns(in: "sample").map(\.name)))
    }

    /// A number that changes whenever another connection commits to the file (SQLite's data_version),
    /// so a reader can tell cheaply whether anything is new.
    public func changeCounter() throws(SpoolError) -> Int64 {
        try read { db in try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) ?? 0 }
    }

    private func opened() throws(SpoolError) -> DatabaseQueue {
        var info = stat()
        guard stat(path, &info) == 0 else {
            database = nil
            throw SpoolError(
                kind: .readOnly, sqliteCode: 14, message: "no spool yet: the daemon has not run here", path: path)
        }
        if let database, UInt64(info.st_ino) == inode { return database }
        do {
            try StateFile.checkDatabase(path)
        } catch {
            database = nil
            throw SpoolError(checking: error, path: path)
        }
        inode = UInt64(info.st_ino)
        var settings = Configuration()
        settings.readonly = true
        settings.busyMode = .timeout(2)
        do {
            let database = try DatabaseQueue(path: path, configuration: settings)
            self.database = database
            return database
        } catch let error as DatabaseError {
            throw SpoolError(error, path: path)
        } catch {
            throw SpoolError(kind: .database, sqliteCode: 0, message: "\(error)", path: path)
        }
    }

    /// One read transaction, as `DatabaseQueue.read` makes it, but with BEGIN and COMMIT prepared
    /// once: `read` parses both anew at every call, a third of the cab view's read at each sample.
    private static func inTransaction<T>(_ db: Database, _ body: (Database) throws -> T) throws -> T {
        try db.cachedStatement(sql: "BEGIN DEFERRED TRANSACTION").execute()
        do {
            let value = try body(db)
            try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return value
        } catch {
            if db.isInsideTransaction { try? db.cachedStatement(sql: "ROLLBACK TRANSACTION").execute() }
            throw error
        }
    }

    private func read<T>(_ body: (Database) throws -> T) throws(SpoolError) -> T {
        let database = try opened()
        do {
            // One connection kept open: data_version compares commits with this connection's last look.
            return try database.unsafeRead { db in try Self.inTransaction(db, body) }
        } catch let error as DatabaseError {
            throw SpoolError(error, path: path)
        } catch {
            throw SpoolError(kind: .database, sqliteCode: 0, message: "\(error)", path: path)
        }
    }
}
