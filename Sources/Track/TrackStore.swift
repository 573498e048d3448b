import BlockingWork
import Foundation
import GNSS
import GRDB
import StateFiles

/// Why the machine's own track could not be kept or read, with SQLite's code.
public struct TrackStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public var sqliteCode: Int32
    public var message: String
    public var path: String

    public var description: String {
        "the track \(path): \(message) (SQLite code \(sqliteCode)); check that the state directory is writable and has room"
    }

    init(_ error: any Error, path: String) {
        if let error = error as? DatabaseError {
            self.init(sqliteCode: error.resultCode.rawValue, message: error.message ?? "\(error)", path: path)
        } else {
            self.init(sqliteCode: 0, message: "\(error)", path: path)
        }
    }

    init(sqliteCode: Int32, message: String, path: String) {
        self.sqliteCode = sqliteCode
        self.message = message
        self.path = path
    }
}

/// The machine's own track, for its owners: every sample as a point, and each local day's figures.
/// A file of its own beside the spool, which the spool's caps and acknowledgements never touch.
///
/// It is a record, not the outbox: points are kept in memory and written together once a minute
/// (`flushInterval`), one durable commit a minute rather than one a sample. A crash or a power cut
/// loses at most that last minute of the track; the spool keeps every sample regardless.
public actor TrackStore {
    public struct Configuration: Sendable, Equatable {
        /// Points older than this are removed (default 90 days); the days' figures stay for `dayRetention`.
        public var retention: Double = 90 * 86_400
        /// At most this many points (default 8,000,000: 92 days at 1 Hz, about 330 MB); the oldest go first.
        public var maximumPoints = 8_000_000
        /// Each day's figures are kept this long (default ten years: a few hundred bytes a day).
        public var dayRetention: Double = 3_650 * 86_400
        /// Seconds of points held before they are written (default 60): what a crash can lose.
        public var flushInterval: Double = 60
        public var calendar = LocalDay.calendar(in: nil)
        public var rules = TrackRules()
        public init() {}
    }

    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-track")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public let path: String
    public let configuration: Configuration
    private let readOnly: Bool
    private var database: DatabaseQueue?
    private var held: [TrackPoint] = []
    private var ledger: WorkLedger
    private var heldSince: Date?
    private var prunedAt: Date?
    private var resumed = false
    /// Points held while the file cannot be written: a day at 1 Hz.
    static let heldLimit = 86_400

    public init(path: String, configuration: Configuration = Configuration()) {
        self.path = path
        self.configuration = configuration
        self.readOnly = false
        ledger = WorkLedger(calendar: configuration.calendar, rules: configuration.rules)
    }

    /// A reader of another process's track: never created or migrated, every write fails.
    public init(readingOnly path: String, calendar: Calendar) {
        self.path = path
        var configuration = Configuration()
        configuration.calendar = calendar
        self.configuration = configuration
        self.readOnly = true
        ledger = WorkLedger(calendar: calendar, rules: configuration.rules)
    }

    public nonisolated var exists: Bool { FileManager.default.fileExists(atPath: path) }

    // MARK: - Writing

    /// Keeps a point; writes the held points once `flushInterval` has passed since the first of them.
    public func record(_ point: TrackPoint, now: Date = Date()) throws(TrackStoreError) {
        guard !readOnly else { throw TrackStoreError(sqliteCode: 8, message: "opened for reading only", path: path) }
        if !resumed { try resume() }
        held.append(point)
        ledger.add(point)
        let since = heldSince ?? now
        heldSince = since
        let elapsed = now.timeIntervalSince(since)
        // A clock stepped back makes `elapsed` negative: write then too, rather than hold for ever.
        if elapsed >= configuration.flushInterval || elapsed < 0 { try flush(now: now) }
    }

    /// Counts what became of samples (sent, acknowledged, lost) on the days they were taken; written
    /// with the next flush, within `flushInterval`.
    public func count(_ deliveries: [DeliveryCount], now: Date = Date()) throws(TrackStoreError) {
        guard !readOnly else { throw TrackStoreError(sqliteCode: 8, message: "opened for reading only", path: path) }
        guard !deliveries.isEmpty else { return }
        for delivery in deliveries { ledger.add(delivery) }
        if heldSince == nil { heldSince = now }
    }

    /// Writes the held points and the days' figures they add, in one commit.
    public func flush(now: Date = Date()) throws(TrackStoreError) {
        guard !held.isEmpty || !ledger.days.isEmpty else { return }
        let points = held, days = ledger.takeDays(), configuration = configuration
        // Old points are looked for once an hour.
        let prune = prunedAt.map { now.timeIntervalSince($0) >= 3_600 || now < $0 } ?? true
        do {
            try writer().write { db in
                try Self.insert(points, into: db)
                try Self.add(days, into: db)
                if prune { try Self.prune(db, configuration: configuration, now: now) }
            }
        } catch {
            // Kept for the next try, a flush interval later; the figures too, so that nothing is
            // counted twice or lost. A day of points at most: past that the oldest go.
            ledger.restore(days)
            heldSince = now
            if held.count > Self.heldLimit { held.removeFirst(held.count - Self.heldLimit) }
            throw TrackStoreError(error, path: path)
        }
        if prune { prunedAt = now }
        held = []
        heldSince = nil
    }

    /// The newest stored point picks up where the last run left off: the time between it and the first
    /// new point counts if they are close enough.
    private func resume() throws(TrackStoreError) {
        resumed = true
        let newest = try read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM point ORDER BY time_ms DESC LIMIT 1").flatMap(TrackRow.point)
        }
        if let newest = newest ?? nil { ledger.resume(after: newest) }
    }

    private static func insert(_ points: [TrackPoint], into db: Database) throws {
        let statement = try db.cachedStatement(
            sql: """
                INSERT OR REPLACE INTO point (time_ms, state, reason, latitude, longitude, altitude, speed, work, engine_speed, fuel_rate)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
        for point in points {
            guard let key = TrackRow.key(point.time) else { continue }
            try statement.execute(arguments: [
                key, point.state.name, point.state.noReceiverReason?.rawValue,
                point.coordinate?.latitude, point.coordinate?.longitude, point.altitude, point.speed,
                point.work.map(TrackRow.workCode), point.engineSpeed, point.fuelRate,
            ])
        }
    }

    private static func add(_ days: [LocalDay: WorkFigures], into db: Database) throws {
        for (day, figures) in days {
            var stored =
                try Row.fetchOne(db, sql: "SELECT * FROM day WHERE day = ?", arguments: [day.description]).map(
                    TrackRow.figures) ?? WorkFigures()
            stored = stored + figures
            try db.execute(
                sql: """
                    INSERT OR REPLACE INTO day (day, samples, rtk_fixed, rtk_float, dgps, autonomous, other_fix, without_fix,
                                                without_receiver, moving, metres, sent, acknowledged, lost,
                                                working, working_metres, work_known, moving_idle, engine_running, fuel)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    day.description, stored.samples, stored.secondsByQuality[.rtkFixed] ?? 0,
                    stored.secondsByQuality[.rtkFloat] ?? 0,
                    stored.secondsByQuality[.dgps] ?? 0, stored.secondsByQuality[.autonomous] ?? 0,
                    stored.secondsByQuality[.other] ?? 0, stored.secondsWithoutFix, stored.secondsWithoutReceiver,
                    stored.secondsMoving, stored.metresDriven, stored.sent, stored.acknowledged, stored.lost,
                    stored.secondsWorking, stored.metresWorking, stored.secondsWorkKnown, stored.secondsMovingIdle,
                    stored.secondsEngineRunning, stored.litresFuel,
                ])
        }
    }

    /// Old points go by age, then the oldest beyond the cap; old days by their own age. Age is counted
    /// back from the newest point, or from a day after `now` if that is earlier: a system clock set
    /// far ahead cannot wipe the track, nor can one point dated far ahead, and a replayed recording
    /// keeps its points.
    static func prune(_ db: Database, configuration: Configuration, now: Date) throws {
        guard let newest = try Int64.fetchOne(db, sql: "SELECT MAX(time_ms) FROM point") else { return }
        let now = min(Date(timeIntervalSince1970: Double(newest) / 1000), now.addingTimeInterval(86_400))
        if let horizon = TrackRow.key(now.addingTimeInterval(-configuration.retention)) {
            try db.execute(sql: "DELETE FROM point WHERE time_ms < ?", arguments: [horizon])
        }
        let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM point") ?? 0
        if count > configuration.maximumPoints {
            try db.execute(
                sql: "DELETE FROM point WHERE time_ms IN (SELECT time_ms FROM point ORDER BY time_ms LIMIT ?)",
                arguments: [count - configuration.maximumPoints])
        }
        let oldestDay = LocalDay(now.addingTimeInterval(-configuration.dayRetention), in: configuration.calendar)
        try db.execute(sql: "DELETE FROM day WHERE day < ?", arguments: [oldestDay.description])
    }

    // MARK: - Reading

    /// The points from `start` to `end` (both included), oldest first.
    public func points(from start: Date, to end: Date) throws(TrackStoreError) -> [TrackPoint] {
        let held = self.held.filter { $0.time >= start && $0.time <= end }
        guard let low = TrackRow.key(start), let high = TrackRow.key(end) else { return held }
        let stored =
            try read { db in
                try Row.fetchAll(
                    db, sql: "SELECT * FROM point WHERE time_ms BETWEEN ? AND ? ORDER BY time_ms",
                    arguments: [low, high]
                )
                .compactMap(TrackRow.point)
            } ?? []
        return stored + held.filter { point in stored.last.map { point.time > $0.time } ?? true }
    }

    /// Each stored day's figures, with those of points not yet written.
    public func days() throws(TrackStoreError) -> [LocalDay: WorkFigures] {
        var days: [LocalDay: WorkFigures] = [:]
        let stored =
            try read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM day").compactMap { row -> (LocalDay, WorkFigures)? in
                    guard let label = TrackRow.text(row, "day"), let day = LocalDay(label: label) else { return nil }
                    return (day, TrackRow.figures(row))
                }
            } ?? []
        for (day, figures) in stored { days[day] = figures }
        days.merge(ledger.days, uniquingKeysWith: +)
        return days
    }

    // MARK: - The file

    private func writer() throws(TrackStoreError) -> DatabaseQueue {
        guard !readOnly else { throw TrackStoreError(sqliteCode: 8, message: "opened for reading only", path: path) }
        return try open()
    }

    /// nil when a reader finds no file: nothing recorded yet.
    private func read<T>(_ work: (Database) throws -> T) throws(TrackStoreError) -> T? {
        if readOnly && !exists { return nil }
        do {
            return try open().read(work)
        } catch let error as TrackStoreError {
            throw error
        } catch {
            throw TrackStoreError(error, path: path)
        }
    }

    private func open() throws(TrackStoreError) -> DatabaseQueue {
        if let database { return database }
        do {
            try StateFile.checkDatabase(path)
            var settings = GRDB.Configuration()
            settings.readonly = readOnly
            settings.busyMode = .timeout(5)
            let readOnly = self.readOnly
            settings.prepareDatabase { db in
                guard !readOnly else { return }
                // 4 KiB, unlike the spool's small pages: 1 KiB pages were tried and wrote no less a
                // sample in a trace (the minute's commit is mostly its shared-memory index), while a
                // day's GPX took 0.85 s instead of 0.74.
                try db.execute(sql: "PRAGMA page_size = 4096")
                _ = try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                // FULL: a written minute survives a power cut; only the minute held in memory can be lost.
                try db.execute(sql: "PRAGMA synchronous = FULL")
            }
            if !readOnly {
                let directory = (path as NSString).deletingLastPathComponent
                if !directory.isEmpty {
                    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                }
            }
            let database = try DatabaseQueue(path: path, configuration: settings)
            if !readOnly { try Self.migrator.migrate(database) }
            self.database = database
            return database
        } catch {
            throw TrackStoreError(error, path: path)
        }
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // Keyed by its time in milliseconds: the rowid itself, so a point costs its values and no index.
            try db.execute(
                sql: """
                    CREATE TABLE point (time_ms INTEGER PRIMARY KEY, state TEXT NOT NULL, reason TEXT,
                                        latitude REAL, longitude REAL, altitude REAL, speed REAL);
                    CREATE TABLE day (day TEXT PRIMARY KEY, samples INTEGER NOT NULL, rtk_fixed REAL NOT NULL, rtk_float REAL NOT NULL,
                                      dgps REAL NOT NULL, autonomous REAL NOT NULL, other_fix REAL NOT NULL, without_fix REAL NOT NULL,
                                      without_receiver REAL NOT NULL, moving REAL NOT NULL, metres REAL NOT NULL) WITHOUT ROWID;
                    """)
        }
        // What became of each day's samples: sent, acknowledged, lost. Days counted before have none.
        migrator.registerMigration("v2-deliveries") { db in
            try db.execute(
                sql: """
                    ALTER TABLE day ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE day ADD COLUMN acknowledged INTEGER NOT NULL DEFAULT 0;
                    ALTER TABLE day ADD COLUMN lost INTEGER NOT NULL DEFAULT 0;
                    """)
        }
        // What the machine was doing at each point, and each day's working, engine and fuel figures.
        // Points and days counted before have none: NULL and 0.
        migrator.registerMigration("v3-machine") { db in
            try db.execute(
                sql: """
                    ALTER TABLE point ADD COLUMN work INTEGER;
                    ALTER TABLE point ADD COLUMN engine_speed REAL;
                    ALTER TABLE point ADD COLUMN fuel_rate REAL;
                    ALTER TABLE day ADD COLUMN working REAL NOT NULL DEFAULT 0;
                    ALTER TABLE day ADD COLUMN working_metres REAL NOT NULL DEFAULT 0;
                    ALTER TABLE day ADD COLUMN work_known REAL NOT NULL DEFAULT 0;
                    ALTER TABLE day ADD COLUMN moving_idle REAL NOT NULL DEFAULT 0;
                    ALTER TABLE day ADD COLUMN engine_running REAL NOT NULL DEFAULT 0;
                    ALTER TABLE day ADD COLUMN fuel REAL NOT NULL DEFAULT 0;
                    """)
        }
        return migrator
    }
}

/// Rows read back: every value is checked, as the file may have been damaged or edited.
enum TrackRow {
    /// Milliseconds since 1970, for times from 1970 to 2200; nil outside.
    static func key(_ time: Date) -> Int64? {
        let milliseconds = (time.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, milliseconds >= 0, milliseconds < 7_258_118_400_000 else { return nil }
        return Int64(milliseconds)
    }

    /// A column's value as a number or text; nil when NULL or of another kind (GRDB's typed
    /// subscripts stop the process on a value they cannot convert).
    static func number(_ row: Row, _ column: String) -> Double? {
        guard row.hasColumn(column) else { return nil }  // a file of an older schema, read without migrating
        switch (row[column] as DatabaseValue).storage {
        case .double(let value): return value.isFinite ? value : nil
        case .int64(let value): return Double(value)
        case .null, .string, .blob: return nil
        }
    }

    static func integer(_ row: Row, _ column: String) -> Int64? {
        guard row.hasColumn(column) else { return nil }
        if case .int64(let value) = (row[column] as DatabaseValue).storage { return value }
        return nil
    }

    static func text(_ row: Row, _ column: String) -> String? {
        guard row.hasColumn(column) else { return nil }
        if case .string(let value) = (row[column] as DatabaseValue).storage { return value }
        return nil
    }

    static func point(_ row: Row) -> TrackPoint? {
        guard let key = integer(row, "time_ms"), key >= 0, key < 7_258_118_400_000,
            let name = text(row, "state"),
            let state = FixState(
                name: name, noReceiverReason: text(row, "reason").flatMap(NoReceiverReason.init(rawValue:)))
        else { return nil }
        var coordinate: Coordinate?
        if let latitude = number(row, "latitude"), let longitude = number(row, "longitude"),
            (-90...90).contains(latitude), (-180...180).contains(longitude)
        {
            coordinate = Coordinate(latitude: latitude, longitude: longitude)
        }
        let altitude = number(row, "altitude").flatMap { (-1_000...100_000).contains($0) ? $0 : nil }
        let speed = number(row, "speed").flatMap { (0...1_000).contains($0) ? $0 : nil }
        // TrackPoint's initialiser drops engine speeds and fuel rates outside their messages' ranges.
        return TrackPoint(
            time: Date(timeIntervalSince1970: Double(key) / 1000), state: state, coordinate: coordinate,
            altitude: altitude, speed: speed, work: integer(row, "work").flatMap(work(code:)),
            engineSpeed: number(row, "engine_speed"), fuelRate: number(row, "fuel_rate"))
    }

    /// The work state as DDI 141 numbers it: 1 working, 0 not, 3 not known. One byte a point.
    static func workCode(_ work: MachineReading.Work) -> Int64 {
        switch work {
        case .working: 1
        case .notWorking: 0
        case .unknown: 3
        }
    }

    static func work(code: Int64) -> MachineReading.Work? {
        switch code {
        case 1: .working
        case 0: .notWorking
        case 3: .unknown
        default: nil
        }
    }

    /// A day's figures; a value out of range (negative, more than a day, not a number) reads as 0.
    static func figures(_ row: Row) -> WorkFigures {
        func seconds(_ column: String) -> Double {
            guard let value = number(row, column), (0...90_000).contains(value) else { return 0 }
            return value
        }
        var figures = WorkFigures()
        func count(_ column: String) -> Int {
            integer(row, column).flatMap { (0...1_000_000).contains($0) ? Int($0) : nil } ?? 0
        }
        figures.samples = count("samples")
        figures.sent = count("sent")
        figures.acknowledged = count("acknowledged")
        figures.lost = count("lost")
        for (quality, column) in [
            (WorkFigures.Quality.rtkFixed, "rtk_fixed"), (.rtkFloat, "rtk_float"), (.dgps, "dgps"),
            (.autonomous, "autonomous"), (.other, "other_fix"),
        ] where seconds(column) > 0 {
            figures.secondsByQuality[quality] = seconds(column)
        }
        figures.secondsWithoutFix = seconds("without_fix")
        figures.secondsWithoutReceiver = seconds("without_receiver")
        figures.secondsMoving = seconds("moving")
        if let metres = number(row, "metres"), (0...10_000_000).contains(metres) { figures.metresDriven = metres }
        figures.secondsWorking = seconds("working")
        if let metres = number(row, "working_metres"), (0...10_000_000).contains(metres) {
            figures.metresWorking = metres
        }
        figures.secondsWorkKnown = seconds("work_known")
        figures.secondsMovingIdle = seconds("moving_idle")
        figures.secondsEngineRunning = seconds("engine_running")
        // A day's fuel at the highest rate LFE1 can say is 77,000 litres.
        if let litres = number(row, "fuel"), (0...80_000).contains(litres) { figures.litresFuel = litres }
        return figures
    }
}
