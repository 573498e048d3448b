import AgrirouterWire
import BlockingWork
import Bounds
import Foundation
import GRDB
import Logging
import Spool
import StateFiles

/// Why the store of other machines failed, with SQLite's code and message.
public struct OthersStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public var sqliteCode: Int32
    public var message: String
    public var path: String

    public var description: String {
        "other machines' store \(path): \(message) (SQLite code \(sqliteCode)); check that the state directory is writable"
    }
}

/// Other machines' positions, keyed by endpoint id: the last report and position of each, and a
/// history for a window. A separate file with synchronous=NORMAL: unlike the spool, what is lost
/// in a power cut here is re-delivered by the feed or superseded by the next push.
public actor OtherMachinesStore {
    /// Its calls block on the disk (fsync, SQLite's busy timeout), so they run on a thread of its own,
    /// which ends with it, never on Swift's cooperative pool.
    private nonisolated let executor: DedicatedThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public struct Configuration: Sendable {
        /// How long positions and seen message ids are kept.
        public var historyWindow: Double = 24 * 3600
        /// How long after a sender's last TimeLog its gps:info is passed over: a sender of both
        /// formats is read from EFDI (gps:info is deprecated), and from gps:info again once its
        /// TimeLogs stop for this long.
        public var timeLogsPreferredFor: Double = 600
        public init() {}
    }

    /// What `record` did with a delivery.
    public struct Recorded: Sendable, Equatable {
        /// Every message id handled (stored, already known, ours, or undecodable): safe to confirm now.
        public var confirmable: [String] = []
        public var stored = 0
        public var duplicates = 0
        /// gps:info passed over because its sender also sends TimeLogs, which are read instead.
        public var passedOver = 0
        /// Message id and why it was refused: its content could not be read, or a value in it is out
        /// of range. A refused message is confirmed like the others, so it cannot come back forever.
        public var refused: [String: String] = [:]
        /// Senders with no name yet: the endpoint list should be fetched again.
        public var unnamedSenders: Set<String> = []
    }

    public let path: String
    private let configuration: Configuration
    private var database: DatabaseQueue?
    private var prunedAt: Date?

    /// Opened read-only: never created or migrated, and every write fails. For readers in other
    /// processes (`agrigps status`, the cab view), which must not change the daemon's file.
    private let readOnly: Bool

    public init(path: String, configuration: Configuration = Configuration()) {
        self.path = path
        self.configuration = configuration
        self.readOnly = false
        executor = DedicatedThreadExecutor(name: "agrigps-others")
    }

    /// A reader of another process's store; `executor` as for `SpoolReader`.
    public init(
        readingOnly path: String, executor: DedicatedThreadExecutor = DedicatedThreadExecutor(name: "agrigps-others")
    ) {
        self.path = path
        self.configuration = Configuration()
        self.readOnly = true
        self.executor = executor
    }

    /// Whether the file exists yet; readers use it to say "nothing seen yet" without creating one.
    public nonisolated var exists: Bool { FileManager.default.fileExists(atPath: path) }

    // MARK: - Writing

    /// Stores a delivery of feed messages in one transaction. Only after it commits are their ids
    /// returned for confirming, so a crash in between means a re-delivery, never a loss.
    public func record(_ messages: [ReceivedFeedMessage], ownEndpointID: String, receivedAt: Date)
        throws(OthersStoreError) -> Recorded
    {
        var recorded = Recorded()
        // TimeLogs first, so that a sender sending both in one delivery is known to send EFDI before
        // its gps:info is looked at.
        let ordered =
            messages.filter { $0.technicalMessageType != TechnicalMessageType.gpsInfo }
            + messages.filter { $0.technicalMessageType == TechnicalMessageType.gpsInfo }
        try write { db in
            for message in ordered {
                try self.record(message, ownEndpointID: ownEndpointID, receivedAt: receivedAt, into: &recorded, db)
            }
            // Confirmed in the order they came, whatever order they were stored in.
            let place = Dictionary(
                messages.enumerated().map { ($1.messageID, $0) }, uniquingKeysWith: { first, _ in first })
            recorded.confirmable.sort { place[$0, default: .max] < place[$1, default: .max] }
            if self.prunedAt.map({ receivedAt.timeIntervalSince($0) > 600 }) ?? true {
                let horizon = receivedAt.timeIntervalSince1970 - self.configuration.historyWindow
                // A machine's last report and position outlive the window: they are what `others` shows.
                try db.execute(
                    sql: """
                        DELETE FROM position WHERE report_time < ? AND id NOT IN (
                            SELECT last_report FROM machine WHERE last_report IS NOT NULL
                            UNION SELECT last_position FROM machine WHERE last_position IS NOT NULL)
                        """, arguments: [horizon])
                try db.execute(sql: "DELETE FROM received_message WHERE received_at < ?", arguments: [horizon])
                self.prunedAt = receivedAt
            }
        }
        return recorded
    }

    private func record(
        _ message: ReceivedFeedMessage, ownEndpointID: String, receivedAt: Date,
        into recorded: inout Recorded, _ db: Database
    ) throws {
        defer { recorded.confirmable.append(message.messageID) }
        guard message.senderID != ownEndpointID, Self.readTypes.contains(message.technicalMessageType) else { return }
        if try Bool.fetchOne(
            db, sql: "SELECT 1 FROM received_message WHERE message_id = ?", arguments: [message.messageID]) == true
        {
            recorded.duplicates += 1
            return
        }
        let received = receivedAt.timeIntervalSince1970
        // Refused ones too: a refusal delivered again is a duplicate, not a second refusal.
        try db.execute(
            sql: "INSERT INTO received_message (message_id, endpoint_id, received_at) VALUES (?, ?, ?)",
            arguments: [message.messageID, message.senderID, received])
        let reports: [ReportedPosition]
        var designator: String?
        do {
            if message.technicalMessageType == TechnicalMessageType.deviceDescription {
                (reports, designator) = ([], try Self.designator(in: message))
            } else {
                reports = try Self.reports(in: message)
            }
        } catch {
            recorded.refused[message.messageID] = error.reason
            try db.execute(
                sql: """
                    INSERT INTO view_state (key, value) VALUES ('refused_messages', 1)
                    ON CONFLICT(key) DO UPDATE SET value = value + 1
                    """)
            try db.execute(
                sql: "INSERT OR REPLACE INTO view_state (key, value) VALUES ('last_refusal', ?)",
                arguments: [TerminalText.safe("\(message.senderID): \(error.reason)", limit: 300)])
            return
        }
        try db.execute(
            sql: """
                INSERT INTO machine (endpoint_id, last_received_at) VALUES (?, ?)
                ON CONFLICT(endpoint_id) DO UPDATE SET last_received_at = MAX(COALESCE(last_received_at, 0), excluded.last_received_at)
                """, arguments: [message.senderID, received])
        if let designator {
            try db.execute(
                sql: "UPDATE machine SET designator = ? WHERE endpoint_id = ?",
                arguments: [designator, message.senderID])
        }
        if try String.fetchOne(
            db, sql: "SELECT COALESCE(designator, name) FROM machine WHERE endpoint_id = ?",
            arguments: [message.senderID]) == nil
        {
            recorded.unnamedSenders.insert(message.senderID)
        }
        if message.technicalMessageType == TechnicalMessageType.timeLog {
            try db.execute(
                sql: "UPDATE machine SET time_log_at = MAX(COALESCE(time_log_at, 0), ?) WHERE endpoint_id = ?",
                arguments: [received, message.senderID])
        } else if message.technicalMessageType == TechnicalMessageType.gpsInfo,
            let timeLogAt = try Double.fetchOne(
                db, sql: "SELECT time_log_at FROM machine WHERE endpoint_id = ?", arguments: [message.senderID]),
            received - timeLogAt <= configuration.timeLogsPreferredFor
        {
            // The same positions came, or come, as a TimeLog: read once, from EFDI.
            recorded.passedOver += 1
            return
        }
        var stored = false
        for report in reports {
            // Pushes arrive out of order: a report only replaces a newer one's place if it is newer.
            let time = (report.gnssTime ?? message.sentAt ?? receivedAt).timeIntervalSince1970
            // A fix that came as gps:info before its sender was known to send TimeLogs comes again in
            // the TimeLog: the same receiver time at the same place is kept once.
            if report.gnssTime != nil,
                try Bool.fetchOne(
                    db,
                    sql: """
                        SELECT 1 FROM position WHERE endpoint_id = ? AND report_time = ? AND latitude IS ? AND longitude IS ?
                        """, arguments: [message.senderID, time, report.latitude, report.longitude]) == true
            {
                continue
            }
            stored = true
            try db.execute(
                sql: """
                    INSERT INTO position (endpoint_id, message_id, report_time, received_at, status, latitude, longitude, altitude, hdop, pdop, satellites)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    message.senderID, message.messageID, time, received, report.status, report.latitude,
                    report.longitude,
                    report.altitude, report.hdop, report.pdop, report.satellites,
                ])
            let id = db.lastInsertedRowID
            try db.execute(
                sql: """
                    UPDATE machine SET last_report = ? WHERE endpoint_id = ?
                    AND (last_report IS NULL OR (SELECT report_time FROM position WHERE id = last_report) IS NULL
                         OR (SELECT report_time FROM position WHERE id = last_report) < ?)
                    """, arguments: [id, message.senderID, time])
            if report.hasPosition {
                try db.execute(
                    sql: """
                        UPDATE machine SET last_position = ? WHERE endpoint_id = ?
                        AND (last_position IS NULL OR (SELECT report_time FROM position WHERE id = last_position) IS NULL
                             OR (SELECT report_time FROM position WHERE id = last_position) < ?)
                        """, arguments: [id, message.senderID, time])
            }
        }
        if stored || reports.isEmpty {
            recorded.stored += 1
        } else {
            recorded.passedOver += 1
        }
    }

    private struct Refusal: Error {
        var reason: String
    }

    /// What is read from others: their positions as gps:info and as EFDI TimeLogs, and their names
    /// from EFDI device descriptions.
    static let readTypes: Set<String> = [
        TechnicalMessageType.gpsInfo, TechnicalMessageType.timeLog, TechnicalMessageType.deviceDescription,
    ]

    /// The name a device description gives its machine, if any.
    private static func designator(in message: ReceivedFeedMessage) throws(Refusal) -> String? {
        EFDIContent.designator(
            of: try readable { () throws(CodecError) in try EFDIContent.taskData(from: message.content) })
    }

    /// Every entry of a gps:info, or every position of a TimeLog (a `Time` without coordinates gives
    /// none), each checked; the first that cannot be read or is out of range refuses the message.
    private static func reports(in message: ReceivedFeedMessage) throws(Refusal) -> [ReportedPosition] {
        if message.technicalMessageType == TechnicalMessageType.timeLog {
            let times = try readable { () throws(CodecError) in try EFDIContent.timeLog(from: message.content).time }
            return try checked(times, "time") { (time: Efdi_Time) throws(OutOfBounds) in
                try ReportedPosition(checking: time)
            }
        }
        let entries = try readable { () throws(CodecError) in
            try GPSInfoContent.gpsList(from: message.content).gpsEntries
        }
        return try checked(entries, "entry") { (entry: GPSEntry) throws(OutOfBounds) in
            try ReportedPosition(checking: entry)
        }
    }

    /// What `decode` reads, or a refusal that says why it could not.
    private static func readable<T>(_ decode: () throws(CodecError) -> T) throws(Refusal) -> T {
        do {
            return try decode()
        } catch {
            throw Refusal(reason: error.description)
        }
    }

    /// `items` checked one by one: the first out of range refuses them all, named by its place.
    private static func checked<Item>(
        _ items: [Item], _ label: String,
        _ check: (Item) throws(OutOfBounds) -> ReportedPosition?
    ) throws(Refusal) -> [ReportedPosition] {
        var reports: [ReportedPosition] = []
        reports.reserveCapacity(items.count)
        for (index, item) in items.enumerated() {
            do throws(OutOfBounds) {
                if let report = try check(item) { reports.append(report) }
            } catch {
                throw Refusal(reason: "\(label) \(index + 1): \(error.description)")
            }
        }
        return reports
    }

    /// Applies agrirouter's endpoint list: names for all, our own name aside, and "gone" for a
    /// machine that was listed before and is not any more.
    public func applyEndpointList(_ endpoints: [(id: String, name: String)], ownEndpointID: String, at time: Date)
        throws(OthersStoreError)
    {
        try write { db in
            let now = time.timeIntervalSince1970
            let listed = Set(endpoints.map(\.id))
            for endpoint in endpoints where endpoint.id != ownEndpointID {
                try db.execute(
                    sql: """
                        INSERT INTO machine (endpoint_id, name, listed_at) VALUES (?, ?, ?)
                        ON CONFLICT(endpoint_id) DO UPDATE SET name = excluded.name, listed_at = excluded.listed_at, left_list_at = NULL
                        """, arguments: [endpoint.id, endpoint.name, now])
            }
            for id in try String.fetchAll(
                db, sql: "SELECT endpoint_id FROM machine WHERE listed_at IS NOT NULL AND left_list_at IS NULL")
            where !listed.contains(id) {
                try db.execute(sql: "UPDATE machine SET left_list_at = ? WHERE endpoint_id = ?", arguments: [now, id])
            }
            if let own = endpoints.first(where: { $0.id == ownEndpointID }) {
                try db.execute(
                    sql: "INSERT OR REPLACE INTO view_state (key, value) VALUES ('own_name', ?)", arguments: [own.name])
            }
            try db.execute(
                sql: "INSERT OR REPLACE INTO view_state (key, value) VALUES ('endpoints_listed_at', ?)",
                arguments: [now])
        }
    }

    // MARK: - Reading

    /// Every machine with its state at `now`. An absent file reads as an empty view.
    public func view(now: Date = Date(), staleAfter: Double = 300) throws(OthersStoreError) -> OthersView {
        guard database != nil || exists else { return OthersView() }
        return try read { db in
            // A description's designator names a machine before the endpoint list does. A file the
            // daemon has not yet migrated has no designators.
            let name =
                try db.columns(in: "machine").contains { $0.name == "designator" }
                ? "COALESCE(m.designator, m.name)" : "m.name"
            // Cached statements: the cab view reads this view every second or so.
            let machines = try Row.fetchAll(
                db.cachedStatement(
                    sql: """
                        SELECT m.endpoint_id, \(name) AS name, m.last_received_at, m.left_list_at, \(Self.reportColumns("r")), \(Self.reportColumns("p"))
                        FROM machine m LEFT JOIN position r ON r.id = m.last_report LEFT JOIN position p ON p.id = m.last_position
                        ORDER BY name, m.endpoint_id
                        """)
            ).map { row in
                let received = row.date("last_received_at")
                let left = row.date("left_list_at")
                return OtherMachine(
                    endpointID: row.text("endpoint_id", limit: 1024) ?? "?", name: row.text("name", limit: 1024),
                    lastReport: Self.report(row, 4),
                    lastPosition: Self.report(row, 4 + Self.reportColumnCount), lastReceivedAt: received,
                    leftListAt: left,
                    activity: OtherMachine.activity(
                        lastReceivedAt: received, leftListAt: left, now: now, staleAfter: staleAfter))
            }
            let state = try Dictionary(
                Row.fetchAll(db.cachedStatement(sql: "SELECT key, value FROM view_state")).compactMap { row in
                    row.text("key", limit: 100).map { ($0, row["value"] as DatabaseValue) }
                }, uniquingKeysWith: { first, _ in first })
            let lastReceived = machines.compactMap(\.lastReceivedAt).max()
            return OthersView(
                machines: machines, ownName: state["own_name"].flatMap { String.fromDatabaseValue($0) },
                endpointsListedAt: state["endpoints_listed_at"].flatMap { Double.fromDatabaseValue($0) }.flatMap(
                    Bounds.date(secondsSince1970:)),
                lastReceivedAt: lastReceived,
                refusedMessages: state["refused_messages"].flatMap { Double.fromDatabaseValue($0) }.flatMap(
                    Bounds.count) ?? 0,
                lastRefusal: state["last_refusal"].flatMap { String.fromDatabaseValue($0) })
        }
    }

    /// Our own endpoint's name, as agrirouter's endpoint list last gave it.
    public func ownName() throws(OthersStoreError) -> String? {
        guard database != nil || exists else { return nil }
        return try read { db in try String.fetchOne(db, sql: "SELECT value FROM view_state WHERE key = 'own_name'") }
    }

    /// A machine's reports in the history window, oldest first by their own time.
    public func history(of endpointID: String) throws(OthersStoreError) -> [ReportedPosition] {
        guard database != nil || exists else { return [] }
        return try read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT \(Self.reportColumns("position")) FROM position WHERE endpoint_id = ? ORDER BY report_time, id",
                arguments: [endpointID]
            ).compactMap { Self.report($0, 0) }
        }
    }

    /// Every message id stored, with when it was received (for inspection and tests).
    public func storedMessages() throws(OthersStoreError) -> [String: Date] {
        guard database != nil || exists else { return [:] }
        return try read { db in
            Dictionary(
                try Row.fetchAll(db, sql: "SELECT message_id, received_at FROM received_message").compactMap { row in
                    row.text("message_id").map { ($0, row.date("received_at") ?? .distantPast) }
                }, uniquingKeysWith: { first, _ in first })
        }
    }

    private static let reportFields = [
        "status", "latitude", "longitude", "altitude", "report_time", "hdop", "pdop", "satellites",
    ]
    private static var reportColumnCount: Int { reportFields.count }

    private static func reportColumns(_ table: String) -> String {
        reportFields.map { "\(table).\($0)" }.joined(separator: ", ")
    }

    /// A stored report, read as untrusted input: a value of the wrong type or out of range is unknown.
    private static func report(_ row: Row, _ start: Int) -> ReportedPosition? {
        guard let status = row.text(at: start, limit: 64) else { return nil }
        return ReportedPosition.stored(
            status: status, latitude: row.double(at: start + 1, in: Bounds.latitude),
            longitude: row.double(at: start + 2, in: Bounds.longitude),
            altitude: row.double(at: start + 3, in: Bounds.altitude),
            time: row.double(at: start + 4, in: Bounds.epochSeconds),
            hdop: row.double(at: start + 5, in: Bounds.dop), pdop: row.double(at: start + 6, in: Bounds.dop),
            satellites: row.int(at: start + 7, in: Bounds.satellites))
    }

    // MARK: - The file

    private func opened() throws(OthersStoreError) -> DatabaseQueue {
        if let database { return database }
        do {
            try StateFile.checkDatabase(path)
            if readOnly {
                var settings = GRDB.Configuration()
                settings.readonly = true
                settings.busyMode = .timeout(2)
                let database = try DatabaseQueue(path: path, configuration: settings)
                self.database = database
                return database
            }
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var settings = GRDB.Configuration()
            settings.journalMode = .wal
            settings.busyMode = .timeout(5)
            settings.prepareDatabase { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            let database = try DatabaseQueue(path: path, configuration: settings)
            try Self.migrator.migrate(database)
            self.database = database
            return database
        } catch let error as DatabaseError {
            throw OthersStoreError(
                sqliteCode: error.resultCode.rawValue, message: error.message ?? "\(error)", path: path)
        } catch {
            throw OthersStoreError(sqliteCode: 0, message: "\(error)", path: path)
        }
    }

    private func write<T>(_ body: (Database) throws -> T) throws(OthersStoreError) -> T {
        let database = try opened()
        do {
            return try database.write(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    private func read<T>(_ body: (Database) throws -> T) throws(OthersStoreError) -> T {
        let database = try opened()
        do {
            return try database.read(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    private static func storeError(_ error: any Error, path: String) -> OthersStoreError {
        if let error = error as? DatabaseError {
            return OthersStoreError(
                sqliteCode: error.resultCode.rawValue, message: error.message ?? "\(error)", path: path)
        }
        return OthersStoreError(sqliteCode: 0, message: "\(error)", path: path)
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-machines") { db in
            try db.execute(
                sql: """
                    CREATE TABLE position (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        endpoint_id TEXT NOT NULL,
                        message_id TEXT NOT NULL,
                        report_time REAL NOT NULL,
                        received_at REAL NOT NULL,
                        status TEXT NOT NULL,
                        latitude REAL, longitude REAL, altitude REAL, hdop REAL, pdop REAL, satellites INTEGER
                    );
                    CREATE INDEX position_by_machine ON position(endpoint_id, report_time);
                    CREATE INDEX position_by_time ON position(report_time);
                    CREATE TABLE machine (
                        endpoint_id TEXT PRIMARY KEY,
                        name TEXT,
                        listed_at REAL,
                        left_list_at REAL,
                        last_received_at REAL,
                        last_report INTEGER REFERENCES position(id) ON DELETE SET NULL,
                        last_position INTEGER REFERENCES position(id) ON DELETE SET NULL
                    );
                    CREATE TABLE received_message (
                        message_id TEXT PRIMARY KEY,
                        endpoint_id TEXT NOT NULL,
                        received_at REAL NOT NULL
                    );
                    CREATE INDEX received_message_by_time ON received_message(received_at);
                    CREATE TABLE view_state (key TEXT PRIMARY KEY, value);
                    """)
        }
        migrator.registerMigration("v2-designators") { db in
            try db.execute(sql: "ALTER TABLE machine ADD COLUMN designator TEXT")
        }
        // When a sender's last TimeLog arrived: its gps:info is passed over for a while after.
        migrator.registerMigration("v3-time-log-at") { db in
            try db.execute(sql: "ALTER TABLE machine ADD COLUMN time_log_at REAL")
        }
        return migrator
    }
}
