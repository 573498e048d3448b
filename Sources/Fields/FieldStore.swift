import BlockingWork
import Foundation
import GRDB
import JSONText
import StateFiles

/// A field as kept in the state directory.
public struct StoredField: Sendable, Hashable {
    /// The store's own number for it: what `agrigps fields remove` takes.
    public var id: Int64
    public var field: Field
    /// Where it came from: "file: NAME", or "agrirouter: ENDPOINT-ID" for TaskData received.
    public var source: String
    public var importedAt: Date

    public init(id: Int64, field: Field, source: String, importedAt: Date) {
        (self.id, self.field, self.source, self.importedAt) = (id, field, source, importedAt)
    }
}

/// What an import did.
public struct ImportReport: Sendable {
    public var source: String
    public var kind: TaskDataPackage.Kind
    public var version: String?
    public var software: String?
    public var imported: [Field]
    public var skipped: [SkippedField]
    /// Fields of the same source that the import replaced.
    public var replaced: Int
}

/// The farm's fields (STATE-DIR/fields.sqlite), each with its source and when it was imported.
/// Importing from a source replaces that source's fields in one transaction, so the store never
/// holds half an export. A file of its own with synchronous=NORMAL: a field lost in a power cut is
/// imported again from the farm software's export.
public actor FieldStore {
    /// SQLite and the import's file reading block, so they run on a thread of the store's own,
    /// never on Swift's cooperative pool.
    private nonisolated let executor: DedicatedThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public let path: String
    /// Readers (the cab view) open it read-only: they never create, migrate or lock it for writing.
    public let readOnly: Bool
    private var database: DatabaseQueue?

    /// `executor`: a thread shared with other readers (the cab view's look), else one of its own.
    public init(
        path: String, readOnly: Bool = false,
        executor: DedicatedThreadExecutor = DedicatedThreadExecutor(name: "agrigps-fields")
    ) {
        self.path = path
        self.readOnly = readOnly
        self.executor = executor
    }

    /// Whether the file exists yet: listing an absent store creates nothing.
    public nonisolated var exists: Bool { FileManager.default.fileExists(atPath: path) }

    // MARK: - Writing

    /// An export given as bytes (an upload from the cab view) under the name its file had: written
    /// to a scratch folder beside the store, read as that file would be, and removed again.
    public func importTaskData(
        bytes: Data, named name: String, now: Date = Date(),
        limits: TaskDataLimits = TaskDataLimits()
    ) throws(FieldsError) -> ImportReport {
        let folder = (path as NSString).deletingLastPathComponent + "/.fields-upload-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let file = folder + "/" + name
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            try bytes.write(to: URL(fileURLWithPath: file))
        } catch {
            throw FieldsError(
                .store,
                "the upload could not be written beside the fields' store (\(error)); check that the state directory is writable and has room"
            )
        }
        // Named after the upload, not the scratch folder, so that the same file uploaded again
        // replaces its fields, and no message names a path of the box.
        do {
            return try importTaskData(at: file, source: "file: " + name, now: now, limits: limits)
        } catch {
            throw FieldsError(error.kind, error.description.replacingOccurrences(of: folder + "/", with: ""))
        }
    }

    /// Reads the export at `file` (a zip, a folder or TASKDATA.XML) and replaces the fields of the
    /// same source with its fields. An export with no usable field changes nothing and is an error:
    /// it is more likely the wrong file than a farm without fields.
    /// `source` names the import in the store in place of the file's own name.
    public func importTaskData(
        at file: String, source: String? = nil, now: Date = Date(),
        limits: TaskDataLimits = TaskDataLimits()
    ) throws(FieldsError) -> ImportReport {
        var package = try TaskDataPackage(path: file, limits: limits)
        let source = source ?? package.sourceName
        let content = try TaskDataReader.read(&package, limits: limits)
        guard !content.fields.isEmpty else {
            let why =
                content.skipped.isEmpty
                ? "it holds no partfield (PFD)"
                : "none of its \(content.skipped.count) partfield\(content.skipped.count == 1 ? "" : "s") could be used (\(content.skipped[0].reason))"
            throw FieldsError(
                .empty,
                "\(package.mainName): \(why); nothing was changed. Export the fields with their boundaries from the farm software"
            )
        }
        let replaced = try replace(source: source, with: content.fields, importedAt: now)
        return ImportReport(
            source: source, kind: package.kind, version: content.version, software: content.software,
            imported: content.fields, skipped: content.skipped, replaced: replaced)
    }

    /// Puts `fields` in place of every field from `source`, in one commit; returns how many it replaced.
    @discardableResult
    public func replace(source: String, with fields: [Field], importedAt: Date) throws(FieldsError) -> Int {
        try write { db in try Self.replaceRows(db, source: source, with: fields, importedAt: importedAt) }
    }

    static func replaceRows(_ db: Database, source: String, with fields: [Field], importedAt: Date) throws -> Int {
        do {
            try db.execute(sql: "DELETE FROM field WHERE source = ?", arguments: [source])
            let replaced = db.changesCount
            let statement = try db.makeStatement(
                sql: """
                    INSERT INTO field (source, partfield_id, name, farm, customer, declared_area, area, points, imported_at, geometry)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """)
            for field in fields {
                try statement.execute(arguments: [
                    source, field.partfieldID, field.name, field.farm, field.customer, field.declaredArea,
                    field.area, field.pointCount, importedAt.timeIntervalSince1970, try GeometryRecord(field).encoded(),
                ])
            }
            return replaced
        }
    }

    /// Removes one field; false if there was none with that id.
    public func remove(id: Int64) throws(FieldsError) -> Bool {
        guard database != nil || exists else { return false }
        return try write { db in
            try db.execute(sql: "DELETE FROM field WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    /// Removes every field; returns how many there were.
    public func removeAll() throws(FieldsError) -> Int {
        guard database != nil || exists else { return 0 }
        return try write { db in
            try db.execute(sql: "DELETE FROM field")
            return db.changesCount
        }
    }

    // MARK: - Reading

    /// Every field, by name as a person sorts them ("2 Acker" before "10 Acker"). A row whose
    /// geometry cannot be read back (a damaged or edited file) is left out rather than shown wrong.
    public func fields() throws(FieldsError) -> [StoredField] {
        guard database != nil || exists else { return [] }
        let stored = try read { db in
            try Row.fetchAll(
                db,
                sql: """
                    SELECT id, source, partfield_id, name, farm, customer, declared_area, imported_at, geometry FROM field ORDER BY id
                    """
            ).compactMap(Self.storedField)
        }
        return stored.sorted { first, second in
            switch first.field.name.compare(second.field.name, options: [.numeric, .caseInsensitive]) {
            case .orderedAscending: true
            case .orderedDescending: false
            case .orderedSame: first.id < second.id
            }
        }
    }

    /// The fields for looking positions up in.
    public func index() throws(FieldsError) -> FieldIndex<StoredField> {
        FieldIndex(try fields().map { (value: $0, field: $0.field) })
    }

    /// A row read as untrusted input: every value checked for its type and range. A value of another
    /// type leaves the row out where one is needed, and reads as none where none is needed.
    private static func storedField(_ row: Row) -> StoredField? {
        guard let id = row.checked("id", as: Int64.self), let source = row.checked("source", as: String.self),
            let partfieldID = row.checked("partfield_id", as: String.self),
            let name = row.checked("name", as: String.self),
            let importedAt = row.checked("imported_at", as: Double.self), importedAt.isFinite, abs(importedAt) < 1e11,
            let geometry = row.checked("geometry", as: String.self),
            let record = try? JSONDecoder().decode(GeometryRecord.self, from: Data(geometry.utf8)),
            let shape = record.shape()
        else { return nil }
        let declared = row.checked("declared_area", as: Double.self).flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
        let field = Field(
            partfieldID: partfieldID, name: name, farm: row.checked("farm"), customer: row.checked("customer"),
            declaredArea: declared,
            boundaries: shape.boundaries, holes: shape.holes, guidanceLines: shape.guidance)
        return StoredField(id: id, field: field, source: source, importedAt: Date(timeIntervalSince1970: importedAt))
    }

    // MARK: - The file

    private func opened() throws(FieldsError) -> DatabaseQueue {
        if let database { return database }
        do {
            try StateFile.checkDatabase(path)
        } catch {
            throw FieldsError(.store, "the fields' store: \(error.description)")
        }
        do {
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
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    func write<T>(_ body: (Database) throws -> T) throws(FieldsError) -> T {
        let database = try opened()
        do {
            return try database.write(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    func read<T>(_ body: (Database) throws -> T) throws(FieldsError) -> T {
        let database = try opened()
        do {
            return try database.read(body)
        } catch {
            throw Self.storeError(error, path: path)
        }
    }

    private static func storeError(_ error: any Error, path: String) -> FieldsError {
        if let error = error as? DatabaseError {
            return FieldsError(
                .store,
                "the fields' store \(path): \(error.message ?? "\(error)") (SQLite code \(error.resultCode.rawValue)); "
                    + "check that the state directory is writable and has room")
        }
        return FieldsError(
            .store, "the fields' store \(path): \(error); check that the state directory is writable and has room")
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-fields") { db in
            try db.execute(
                sql: """
                    CREATE TABLE field (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        source TEXT NOT NULL,
                        partfield_id TEXT NOT NULL,
                        name TEXT NOT NULL,
                        farm TEXT,
                        customer TEXT,
                        declared_area REAL,
                        area REAL NOT NULL,
                        points INTEGER NOT NULL,
                        imported_at REAL NOT NULL,
                        geometry TEXT NOT NULL
                    );
                    CREATE INDEX field_by_source ON field(source);
                    """)
        }
        // TaskData received through agrirouter: the chunks held until their message is whole (so each
        // chunk can be confirmed once it is here), and the sent time of each sender's newest import.
        migrator.registerMigration("v2-received-taskdata") { db in
            try db.execute(
                sql: """
                    CREATE TABLE held_chunk (
                        sender_id TEXT NOT NULL,
                        context_id TEXT NOT NULL,
                        current INTEGER NOT NULL,
                        total INTEGER NOT NULL,
                        total_size INTEGER NOT NULL,
                        message_id TEXT NOT NULL,
                        sent_at REAL,
                        received_at REAL NOT NULL,
                        bytes BLOB NOT NULL,
                        PRIMARY KEY (sender_id, context_id, current)
                    );
                    CREATE TABLE received_source (
                        source TEXT PRIMARY KEY,
                        sent_at REAL NOT NULL
                    );
                    """)
        }
        return migrator
    }
}

/// A field's rings and lines as JSON in its row: [latitude, longitude] pairs.
struct GeometryRecord: Codable {
    struct Line: Codable {
        var name: String?
        var points: [[Double]]
    }

    var boundaries: [[[Double]]]
    var holes: [[[Double]]]
    var guidance: [Line]

    init(_ field: Field) {
        func pairs(_ points: [GeoPoint]) -> [[Double]] { points.map { [$0.latitude, $0.longitude] } }
        boundaries = field.boundaries.map { pairs($0.points) }
        holes = field.holes.map { pairs($0.points) }
        guidance = field.guidanceLines.map { Line(name: $0.name, points: pairs($0.points)) }
    }

    func encoded() throws -> String {
        try JSONWriter.encode(self)
    }

    /// The rings and lines, or nil if any point is not a pair on the globe or a boundary is no ring.
    func shape() -> (boundaries: [Ring], holes: [Ring], guidance: [GuidanceLine])? {
        func points(_ pairs: [[Double]]) -> [GeoPoint]? {
            var result: [GeoPoint] = []
            result.reserveCapacity(pairs.count)
            for pair in pairs {
                guard pair.count == 2 else { return nil }
                let point = GeoPoint(latitude: pair[0], longitude: pair[1])
                guard point.isValid else { return nil }
                result.append(point)
            }
            return result
        }
        var rings: [[Ring]] = []
        for group in [boundaries, holes] {
            var made: [Ring] = []
            for pairs in group {
                guard let ring = points(pairs).flatMap(Ring.init(closing:)) else { return nil }
                made.append(ring)
            }
            rings.append(made)
        }
        guard !rings[0].isEmpty else { return nil }
        var lines: [GuidanceLine] = []
        for line in guidance {
            guard let linePoints = points(line.points) else { return nil }
            lines.append(GuidanceLine(name: line.name, points: linePoints))
        }
        return (rings[0], rings[1], lines)
    }
}
