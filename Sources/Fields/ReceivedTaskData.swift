import Foundation
import GRDB

/// One part of a TaskData that arrives in chunks, held in the store until the whole is there. The
/// numbers are the sender's, already checked by whoever joins them.
public struct HeldChunk: Sendable, Equatable {
    public var senderID: String
    public var contextID: String
    public var current: Int64
    public var total: Int64
    public var totalSize: Int64
    public var messageID: String
    public var sentAt: Date?
    public var receivedAt: Date
    public var bytes: Data

    public init(
        senderID: String, contextID: String, current: Int64, total: Int64, totalSize: Int64, messageID: String,
        sentAt: Date?, receivedAt: Date, bytes: Data
    ) {
        self.senderID = senderID
        self.contextID = contextID
        self.current = current
        self.total = total
        self.totalSize = totalSize
        self.messageID = messageID
        self.sentAt = sentAt
        self.receivedAt = receivedAt
        self.bytes = bytes
    }
}

/// What an import of received TaskData did.
public enum ReceivedImport: Sendable {
    case imported(ImportReport)
    /// The source already holds fields from a TaskData sent at this time, later than this one's:
    /// nothing changed.
    case older(than: Date)
}

extension FieldStore {
    /// Keeps a chunk until its TaskData is whole; a chunk already held (the same place in the same
    /// context) is kept once. Returns after the commit, so the message may then be confirmed.
    public func hold(_ chunk: HeldChunk) throws(FieldsError) {
        try write { db in
            try db.execute(
                sql: """
                    INSERT OR IGNORE INTO held_chunk (sender_id, context_id, current, total, total_size, message_id, sent_at, received_at, bytes)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    chunk.senderID, chunk.contextID, chunk.current, chunk.total, chunk.totalSize, chunk.messageID,
                    chunk.sentAt?.timeIntervalSince1970, chunk.receivedAt.timeIntervalSince1970, chunk.bytes,
                ])
        }
    }

    /// Every chunk held, oldest first, for rebuilding the joins after a restart. A row whose values
    /// cannot be read is left out; the joiner checks the rest as it checks chunks from agrirouter.
    public func heldChunks() throws(FieldsError) -> [HeldChunk] {
        guard exists else { return [] }
        return try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT sender_id, context_id, current, total, total_size, message_id, sent_at, received_at, bytes
                    FROM held_chunk ORDER BY received_at, rowid
                    """
            ).compactMap { row -> HeldChunk? in
                guard let sender = row.checked("sender_id", as: String.self),
                    let context = row.checked("context_id", as: String.self),
                    let current = row.checked("current", as: Int64.self),
                    let total = row.checked("total", as: Int64.self),
                    let totalSize = row.checked("total_size", as: Int64.self),
                    let messageID = row.checked("message_id", as: String.self),
                    let received = row.checked("received_at", as: Double.self), received.isFinite, abs(received) < 1e11,
                    let bytes = row.checked("bytes", as: Data.self)
                else { return nil }
                let sent = row.checked("sent_at", as: Double.self).flatMap {
                    $0.isFinite && abs($0) < 1e11 ? Date(timeIntervalSince1970: $0) : nil
                }
                return HeldChunk(
                    senderID: sender, contextID: context, current: current, total: total, totalSize: totalSize,
                    messageID: messageID, sentAt: sent, receivedAt: Date(timeIntervalSince1970: received), bytes: bytes)
            }
        }
    }

    /// Forgets a context's chunks (imported, refused or given up).
    public func release(senderID: String, contextID: String) throws(FieldsError) {
        try write { db in
            try db.execute(
                sql: "DELETE FROM held_chunk WHERE sender_id = ? AND context_id = ?", arguments: [senderID, contextID])
        }
    }

    /// Imports a TaskData zip received from another party as `source`, in place of that source's
    /// fields, unless the source's fields came from a TaskData sent later (messages from agrirouter
    /// arrive out of order): `readReceivedTaskData`, then `storeReceived`, on the store's thread.
    public func importReceivedTaskData(
        _ zip: Data, source: String, sentAt: Date, releasing: (senderID: String, contextID: String)?,
        now: Date = Date(), limits: TaskDataLimits = TaskDataLimits()
    ) throws(FieldsError) -> ReceivedImport {
        if let newest = try newestSent(source: source), newest > sentAt { return .older(than: newest) }
        let content = try Self.readReceivedTaskData(
            zip, source: source, scratchFolder: (path as NSString).deletingLastPathComponent, limits: limits)
        return try storeReceived(content, source: source, sentAt: sentAt, releasing: releasing, now: now)
    }

    /// The fields of a received TaskData zip, read on the caller's thread: the reading is the long
    /// part of an import, and whoever receives decides where it runs (never on the store's thread,
    /// where a chunk's hold would queue behind it). The zip is written to `scratchFolder` for the zip
    /// reader, owner-only, and removed after. Refused with words when no field can be used.
    public static func readReceivedTaskData(
        _ zip: Data, source: String, scratchFolder: String,
        limits: TaskDataLimits = TaskDataLimits()
    ) throws(FieldsError) -> TaskData {
        let file = scratchFolder + "/received-taskdata.zip"
        try? FileManager.default.removeItem(atPath: file)
        guard FileManager.default.createFile(atPath: file, contents: zip, attributes: [.posixPermissions: 0o600]) else {
            throw FieldsError(
                .store,
                "cannot write \(file) to read the received TaskData; check that the state directory is writable and has room"
            )
        }
        defer { try? FileManager.default.removeItem(atPath: file) }
        let content: TaskData
        do {
            var package = try TaskDataPackage(path: file, limits: limits)
            content = try TaskDataReader.read(&package, limits: limits)
        } catch {
            // The file is ours, not the sender's: name what was sent instead.
            throw FieldsError(
                error.kind,
                error.description.replacingOccurrences(of: file, with: "the TaskData from \(source)")
                    .replacingOccurrences(of: "received-taskdata.zip", with: "the TaskData from \(source)"))
        }
        guard !content.fields.isEmpty else {
            let why =
                content.skipped.isEmpty
                ? "it holds no partfield (PFD)"
                : "none of its \(content.skipped.count) partfield\(content.skipped.count == 1 ? "" : "s") could be used (\(content.skipped[0].reason))"
            throw FieldsError(.empty, "the TaskData from \(source): \(why); nothing was changed")
        }
        return content
    }

    /// Puts fields read from a received TaskData in place of `source`'s, unless that source's fields
    /// came from a TaskData sent later. The held chunks of `releasing` are forgotten in the same
    /// commit, so a crash leaves either the old fields and the chunks, or the new fields and none.
    public func storeReceived(
        _ content: TaskData, source: String, sentAt: Date, releasing: (senderID: String, contextID: String)?,
        now: Date = Date()
    ) throws(FieldsError) -> ReceivedImport {
        if let newest = try newestSent(source: source), newest > sentAt { return .older(than: newest) }
        let replaced = try write { db in
            let replaced = try Self.replaceRows(db, source: source, with: content.fields, importedAt: now)
            try db.execute(
                sql: "INSERT OR REPLACE INTO received_source (source, sent_at) VALUES (?, ?)",
                arguments: [source, sentAt.timeIntervalSince1970])
            if let releasing {
                try db.execute(
                    sql: "DELETE FROM held_chunk WHERE sender_id = ? AND context_id = ?",
                    arguments: [releasing.senderID, releasing.contextID])
            }
            return replaced
        }
        return .imported(
            ImportReport(
                source: source, kind: .zip, version: content.version, software: content.software,
                imported: content.fields, skipped: content.skipped, replaced: replaced))
    }

    /// When the TaskData behind `source`'s fields was sent; nil if none was received for it, or if
    /// what the file holds for it is no time (SQLite would read text as 0, a TaskData sent in 1970).
    public func newestSent(source: String) throws(FieldsError) -> Date? {
        guard exists else { return nil }
        return try read { db in
            try Row.fetchOne(db, sql: "SELECT sent_at FROM received_source WHERE source = ?", arguments: [source])?
                .checked("sent_at", as: Double.self)
                .flatMap { $0.isFinite && abs($0) < 1e11 ? Date(timeIntervalSince1970: $0) : nil }
        }
    }
}
