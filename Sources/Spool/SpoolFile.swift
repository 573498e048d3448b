import Bounds
import Clocks
import Foundation
import GRDB
import Logging
import StateFiles

/// Opening the spool's file: pragmas, the start-up check, quarantine of a corrupt file, migrations.
enum SpoolFile {
    /// The page size of a spool. Every page an append touches is written again to the WAL at each
    /// commit, so smaller pages write less per sample: 1 KiB pages wrote about a third of what the
    /// default 4 KiB pages do, and 512 bytes another tenth or so (8.6 → 8.1 KiB per sample
    /// publishing, 7.0 → 6.6 sampling only, `make bench`). A page then holds two or three rows.
    static let pageSize = 512
    /// Frames of the write-ahead log after which a commit copies them into the file.
    static let checkpointFrames = 4_000
    /// A spool made with other pages is rebuilt with `pageSize` when it opens, if it is no larger than
    /// this: the rebuild writes the whole file again, once.
    static let rebuildLimit = 16 * 1024 * 1024

    /// The open spool; `quarantined` names where a corrupt file was moved on the way.
    typealias Opened = (
        database: DatabaseQueue, queued: (rows: Int, bytes: Int), outputs: [SpoolOutput], quarantined: String?
    )

    static func open(path: String, configuration: SpoolConfiguration, logger: Logger) -> Result<Opened, SpoolError> {
        do {
            return .success(try openChecked(path: path, configuration: configuration))
        } catch let error where error.kind == .corrupt {
            let aside = quarantine(path: path)
            logger.error(
                "spool \(path) is corrupt (\(error.message)); moved it to \(aside ?? "nowhere: rename failed") and started a new spool"
            )
            guard let aside else { return .failure(error) }
            do {
                var opened = try openChecked(path: path, configuration: configuration)
                try opened.database.write { db in
                    try SpoolState.set(
                        "quarantined_file", number: configuration.clock().timeIntervalSince1970, text: aside, in: db)
                }
                opened.quarantined = aside
                return .success(opened)
            } catch let error as SpoolError {
                return .failure(error)
            } catch {
                return .failure(SpoolError(kind: .database, sqliteCode: 0, message: "\(error)", path: path))
            }
        } catch {
            return .failure(error)
        }
    }

    private static func openChecked(path: String, configuration: SpoolConfiguration) throws(SpoolError) -> Opened {
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                throw SpoolError(
                    kind: .readOnly, sqliteCode: 0, message: "cannot create directory \(directory)", path: path)
            }
        }
        do {
            try StateFile.checkDatabase(path)
        } catch {
            throw SpoolError(checking: error, path: path)
        }
        var settings = Configuration()
        settings.busyMode = .timeout(configuration.busyTimeout)
        let pageLimit = configuration.maximumPageCount
        settings.prepareDatabase { db in
            // Takes effect only on a file still empty: a new spool.
            try db.execute(sql: "PRAGMA page_size = \(Self.pageSize)")
            // WAL is set here, not with GRDB's `journalMode = .wal`: that set-up runs after this closure
            // and lowers synchronous to NORMAL, which loses the last commits on a power cut.
            guard try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") == "wal" else {
                throw SpoolError(kind: .database, sqliteCode: 0, message: "could not switch to WAL mode", path: path)
            }
            // FULL: a commit survives power loss, not just a crash of this process.
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // Debian builds SQLite to overwrite deleted rows and freed pages with zeros, which writes
            // every page a deletion frees: clearing 256 acknowledged rows wrote 56 pages of the log,
            // against 30 with FAST, which zeroes only what is written anyway. Nothing is hidden by the
            // zeros: the track keeps the same positions for 90 days.
            try db.execute(sql: "PRAGMA secure_delete = FAST")
            // A checkpoint copies every page the log holds into the file, once however often it
            // changed since the last. Publishing at 1 Hz the log gains about 3 frames a second: with
            // SQLite's default of 1,000 frames the same few pages (filled, acknowledged, cleared and
            // filled again) went to the file eleven times an hour, now about three (148 KiB against
            // 84 KiB in traced 10-minute runs of the storage benchmark). The log grows to about
            // 2 MiB before it starts over.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.checkpointFrames)")
            if let pageLimit { try db.execute(sql: "PRAGMA max_page_count = \(pageLimit)") }
        }
        do {
            let database = try DatabaseQueue(path: path, configuration: settings)
            let verdict = try database.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            guard verdict == ["ok"] else {
                throw SpoolError(
                    kind: .corrupt, sqliteCode: 11,
                    message: "quick_check: \(verdict.prefix(3).joined(separator: "; "))", path: path)
            }
            // A spool from a newer agrigps (a package downgraded over it) is left as it is.
            if let unknown = try database.read({ db in try SpoolSchema.unknownSteps(db) }), !unknown.isEmpty {
                throw SpoolError(
                    kind: .newerVersion, sqliteCode: 0,
                    message: "spool \(path) was written by a newer agrigps (schema steps "
                        + "\(unknown.prefix(3).joined(separator: ", ")) are unknown to this version); install that version again, "
                        + "or move the file aside to start a new spool (what it holds is then not sent)", path: path)
            }
            rebuildWithSmallerPages(database, path: path)
            try SpoolSchema.migrator.migrate(database)
            try database.write(SpoolBatches.releaseOrphans)
            try database.write(SpoolSchema.forgetOtherBoots)
            let outputs = try database.write { db in
                guard let wanted = configuration.outputs else { return try SpoolSchema.storedOutputs(db) }
                let enabled = SpoolConfiguration.enabled(wanted)
                try SpoolSchema.applyOutputs(
                    enabled, history: configuration.acknowledgedHistory > 0,
                    now: configuration.clock().timeIntervalSince1970, in: db)
                return enabled
            }
            let queued = try database.read { db in
                try Row.fetchOne(
                    db, sql: "SELECT COUNT(*), TOTAL(\(SampleColumns.wireSizeSQL)) FROM sample WHERE \(Spool.queued)")
            }
            return (
                database, (queued?[0] ?? 0, queued?.double(at: 1, in: 0...1e15).flatMap(Bounds.whole) ?? 0), outputs,
                nil
            )
        } catch let error as SpoolError {
            throw error
        } catch let error as DatabaseError {
            throw SpoolError(error, path: path)
        } catch {
            throw SpoolError(kind: .database, sqliteCode: 0, message: "\(error)", path: path)
        }
    }

    /// Rebuilds a spool made with larger pages (VACUUM, which a rollback journal makes atomic). WAL
    /// cannot change its page size, so the file leaves WAL for the rebuild, which it can only do when
    /// no other process has it open; if it cannot, or the file is large, it stays as it is this time.
    private static func rebuildWithSmallerPages(_ database: DatabaseQueue, path: String) {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? Int.max
        guard size <= rebuildLimit,
            let pages = try? database.read({ db in try Int.fetchOne(db, sql: "PRAGMA page_size") }), pages != pageSize
        else { return }
        _ = try? database.writeWithoutTransaction { db in
            defer { _ = try? String.fetchOne(db, sql: "PRAGMA journal_mode = WAL") }
            guard try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE") == "delete" else { return }
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
            try db.execute(sql: "VACUUM")
        }
    }

    /// Moves the file (and its WAL and shared-memory files, which belong to it) to `<name>.corrupt-<UTC>`.
    private static func quarantine(path: String) -> String? {
        // ISO 8601's basic form, to the second: 20261130T015000Z.
        let stamp = ISO8601UTC.string(from: Date()).prefix(19).filter { $0 != "-" && $0 != ":" }
        let aside = "\(path).corrupt-\(stamp)Z"
        guard rename(path, aside) == 0 else { return nil }
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            if rename(path + suffix, aside + suffix) != 0 { unlink(path + suffix) }
        }
        return aside
    }
}
