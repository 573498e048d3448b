import BlockingWork
import Foundation
import GRDB
import GRDBSQLite

/// The map kept on the box: raster tiles from an MBTiles file, made on the office PC for the
/// farm's area, so that the cab sees fields and roads with no internet.
///
/// MBTiles 1.3 is SQLite: `tiles(zoom_level, tile_column, tile_row, tile_data)`, with `tile_row`
/// counted from the bottom (TMS) where the page asks from the top (XYZ). The file is the user's and
/// is treated as hostile: data, not a program. Only a regular file is opened, read-only; a view,
/// trigger, virtual table or computed column refuses it (each is SQL that could run for ever, or
/// make a gigabyte, at every read); every question is stopped after `timeLimit`; no value larger
/// than a tile is read into memory; every value is checked for its type before it is used (a zoom
/// level may be text in a file made elsewhere); and every tile is recognised by its bytes, not by
/// what the metadata claims.
public actor Basemap {
    /// What the page needs to draw it.
    public struct Info: Sendable, Equatable, Encodable {
        public var name: String?
        public var attribution: String?
        public var minZoom: Int
        public var maxZoom: Int
    }

    /// The largest tile served; a 256-pixel raster tile is tens of kilobytes.
    public static let maximumTileBytes = 2 * 1_048_576
    /// Leaflet's deepest zoom, and the deepest a tile index stays within 2^z.
    public static let zoomRange = 0...24
    /// SQLite's steps between two looks at the clock: a few microseconds of work, so a question is
    /// stopped within a hair of its time limit and the clock costs nothing next to the query.
    static let stepsBetweenClockChecks: Int32 = 1000

    public let path: String
    /// The longest one question to the file may take. An indexed MBTiles answers in milliseconds;
    /// one that takes seconds would hold the basemap's thread, and every tile queued behind it.
    public let timeLimit: Duration
    /// Set only once the file has passed `open`'s checks: no tile is read from a file that failed them.
    private var database: DatabaseQueue?
    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-basemap")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public init(path: String) {
        self.init(path: path, timeLimit: .seconds(5))
    }

    public init(path: String, timeLimit: Duration) {
        self.path = path
        self.timeLimit = timeLimit
    }

    private var described: Result<Info, BasemapError>?

    /// What `open` found, read once: the page asks with every session.
    public func describe() -> Result<Info, BasemapError> {
        if let described { return described }
        return Result { () throws(BasemapError) in try open() }
    }

    /// Opens the file and reads what the page needs; a clear error when it is not a plain raster MBTiles.
    public func open() throws(BasemapError) -> Info {
        let result = Result { () throws(BasemapError) in try check() }
        described = result
        return try result.get()
    }

    private func check() throws(BasemapError) -> Info {
        database = nil
        try Self.checkKind(path)
        let candidate: DatabaseQueue
        do {
            candidate = try DatabaseQueue(path: path, configuration: Self.settings)
        } catch {
            throw Self.fileError(error, path: path, timeLimit: timeLimit)
        }
        let path = path
        let info = try read(candidate) { db throws -> Info in
            let tables = try Self.checkSchema(db, path: path)
            let metadata = tables.contains("metadata") ? try Self.metadata(db) : [:]
            if let format = metadata["format"]?.lowercased(), !["png", "jpg", "jpeg", "webp"].contains(format) {
                throw BasemapError.unsupportedFormat(path: path, format: Self.shown(format))
            }
            // With the spec's index on the tiles these are two lookups, not a scan. A value of another
            // type (text '5' in a column without a type) sorts above every number, so max finds it.
            guard let zooms = try Row.fetchOne(db, sql: "SELECT min(zoom_level), max(zoom_level) FROM tiles"),
                let low = try Self.value(zooms, 0), let high = try Self.value(zooms, 1)
            else {
                throw BasemapError.notMBTiles(path: path, reason: "it holds no tiles at zoom levels 0 to 24")
            }
            guard case .int64(let lowest) = low, case .int64(let highest) = high else {
                throw BasemapError.notMBTiles(path: path, reason: "its zoom levels are not all whole numbers")
            }
            guard let minZoom = Int(exactly: lowest), let maxZoom = Int(exactly: highest),
                Self.zoomRange.contains(minZoom), Self.zoomRange.contains(maxZoom)
            else {
                throw BasemapError.notMBTiles(path: path, reason: "it holds no tiles at zoom levels 0 to 24")
            }
            return Info(
                name: metadata["name"].map { String($0.prefix(200)) },
                attribution: metadata["attribution"].map { String($0.prefix(500)) },
                minZoom: minZoom, maxZoom: maxZoom)
        }
        database = candidate
        return info
    }

    /// The tile at z/x/y counted from the top, and its media type; nil when the file has none there.
    public func tile(z: Int, x: Int, y: Int) throws(BasemapError) -> (data: Data, type: String)? {
        guard Self.zoomRange.contains(z), x >= 0, y >= 0, x < 1 << z, y < 1 << z else { return nil }
        _ = try describe().get()
        guard let database else { throw .notMBTiles(path: path, reason: "it was not checked") }
        let row = (1 << z) - 1 - y
        // The type and size first: an oversized tile is refused without reading it into memory, and
        // a tile that is a number or text is no image (and is never read as bytes).
        let found: (isBlob: Bool, size: Int64?, data: Data?)? = try read(database) { db in
            guard
                let found = try Row.fetchOne(
                    db,
                    sql: """
                        SELECT typeof(tile_data) = 'blob', CASE WHEN typeof(tile_data) = 'blob' THEN length(tile_data) END,
                               CASE WHEN typeof(tile_data) = 'blob' AND length(tile_data) <= ? THEN tile_data END
                        FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?
                        """, arguments: [Self.maximumTileBytes, z, x, row])
            else { return nil }
            return (try Self.integer(found, 0) == 1, try Self.integer(found, 1), try Self.blob(found, 2))
        }
        guard let found else { return nil }
        guard found.isBlob else { throw .unsupportedTile(path: path, z: z, x: x, y: y) }
        guard let data = found.data else { throw .tileTooLarge(path: path, z: z, x: x, y: y, bytes: found.size ?? 0) }
        guard let type = Self.mediaType(of: data) else { throw .unsupportedTile(path: path, z: z, x: x, y: y) }
        return (data, type)
    }

    /// What a tile is, by its first bytes: PNG, JPEG or WebP; nil for anything else (a gzipped
    /// vector tile, HTML, damage).
    static func mediaType(of data: Data) -> String? {
        let bytes = [UInt8](data.prefix(12))
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if bytes.count == 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) {
            return "image/webp"
        }
        return nil
    }

    /// A format named in the file, shown only when it is a short plain word ("pbf"): the rest of
    /// what the file says is not repeated to the page or the log.
    static func shown(_ format: String) -> String {
        let plain =
            !format.isEmpty && format.utf8.count <= 16
            && format.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "-" || $0 == "+" || $0 == "."
            }
        return plain ? format : "unknown"
    }

    /// The connection's settings: read-only; no value read larger than a tile (a column of a gigabyte
    /// is an error, not a gigabyte of memory); and, should SQL in the file get past the checks, no
    /// function with side effects called from it.
    private static var settings: GRDB.Configuration {
        var settings = GRDB.Configuration()
        settings.readonly = true
        settings.busyMode = .timeout(1)
        settings.prepareDatabase { db in
            sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_LENGTH, Int32(maximumTileBytes))
            try db.execute(sql: "PRAGMA trusted_schema = OFF")
        }
        return settings
    }

    /// Runs `body` on the file, stopped by SQLite's progress handler once `timeLimit` has passed:
    /// the interrupted query ends with SQLITE_INTERRUPT, said as `tooSlow`.
    private func read<T>(_ database: DatabaseQueue, _ body: (Database) throws -> T) throws(BasemapError) -> T {
        let (path, limit) = (path, timeLimit)
        do {
            return try database.read { db in
                var deadline = ContinuousClock.now.advanced(by: limit)
                return try withUnsafeMutablePointer(to: &deadline) { deadline in
                    sqlite3_progress_handler(
                        db.sqliteConnection, Self.stepsBetweenClockChecks,
                        { deadline in
                            guard let deadline else { return 1 }
                            return ContinuousClock.now < deadline.load(as: ContinuousClock.Instant.self) ? 0 : 1
                        }, UnsafeMutableRawPointer(deadline))
                    defer { sqlite3_progress_handler(db.sqliteConnection, 0, nil, nil) }
                    return try body(db)
                }
            }
        } catch let error as BasemapError {
            throw error
        } catch {
            throw Self.fileError(error, path: path, timeLimit: limit)
        }
    }

    /// Refuses what SQLite would open with a blocking open and wait on for ever (a FIFO), or could
    /// not read as a file (a directory, a device): the file itself, and the journal and WAL SQLite
    /// looks for beside it. Checked just before SQLite opens them; who could swap one in between
    /// could write the file itself.
    private static func checkKind(_ path: String) throws(BasemapError) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR { throw .missing(path: path) }
            throw .unreadable(path: path, sqliteCode: 0, message: String(cString: strerror(code)))
        }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path: path) }
        for beside in [path + "-journal", path + "-wal", path + "-shm"] where stat(beside, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegularFile(path: beside) }
        }
    }

    /// A map file is data: tables and their indexes. A view or a virtual table runs code at every
    /// read (a recursive query that never ends, a gigabyte made up per tile), a trigger at every
    /// write, and a computed column at every read of it; each refuses the file. What SQLite itself
    /// parsed is asked as well as what the schema table says, since a file can label a view a table.
    /// The tables' names, in lower case.
    private static func checkSchema(_ db: Database, path: String) throws -> Set<String> {
        for row in try Row.fetchAll(db, sql: "SELECT type FROM sqlite_master") {
            switch try text(row, 0) {
            case "table", "index": continue
            case "view": throw BasemapError.runsSQL(path: path, holds: "a view")
            case "trigger": throw BasemapError.runsSQL(path: path, holds: "a trigger")
            default: throw BasemapError.notMBTiles(path: path, reason: "it is damaged")
            }
        }
        var tables: Set<String> = []
        for row in try Row.fetchAll(db, sql: "SELECT name, type FROM pragma_table_list WHERE schema = 'main'") {
            switch try text(row, 1) {
            case "table", "shadow": if let name = try text(row, 0) { tables.insert(name.lowercased()) }
            case "view": throw BasemapError.runsSQL(path: path, holds: "a view")
            case "virtual": throw BasemapError.runsSQL(path: path, holds: "a virtual table")
            default: throw BasemapError.notMBTiles(path: path, reason: "it is damaged")
            }
        }
        guard tables.contains("tiles") else {
            throw BasemapError.notMBTiles(path: path, reason: "it has no tiles table")
        }
        for table in ["tiles", "metadata"] where tables.contains(table) {
            // hidden is 2 for a column computed as it is read, 3 for one computed as it is written.
            for row in try Row.fetchAll(db, sql: "SELECT hidden FROM pragma_table_xinfo(?)", arguments: [table]) {
                guard try integer(row, 0) == 0 else {
                    throw BasemapError.runsSQL(path: path, holds: "a computed column")
                }
            }
        }
        let columns = try Set(
            Row.fetchAll(db, sql: "SELECT name FROM pragma_table_info('tiles')").compactMap {
                try text($0, 0)?.lowercased()
            })
        guard columns.isSuperset(of: ["zoom_level", "tile_column", "tile_row", "tile_data"]) else {
            throw BasemapError.notMBTiles(
                path: path, reason: "its tiles table lacks zoom_level, tile_column, tile_row or tile_data")
        }
        return tables
    }

    /// The metadata the page uses, where both name and value are text; anything else is left out.
    private static func metadata(_ db: Database) throws -> [String: String] {
        let columns = try Set(
            Row.fetchAll(db, sql: "SELECT name FROM pragma_table_info('metadata')").compactMap {
                try text($0, 0)?.lowercased()
            })
        guard columns.isSuperset(of: ["name", "value"]) else { return [:] }
        var values: [String: String] = [:]
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT name, value FROM metadata
                WHERE typeof(name) = 'text' AND typeof(value) = 'text' AND lower(name) IN ('name', 'attribution', 'format') LIMIT 200
                """)
        {
            if let name = try text(row, 0), let value = try text(row, 1) { values[name.lowercased()] = value }
        }
        return values
    }

    /// A column's value, nil for NULL. GRDB's subscripts that convert (`row[0] as Int64?`) stop the
    /// process on a value of another type; a file made elsewhere may hold any type in any column.
    private static func value(_ row: Row, _ index: Int) throws -> DatabaseValue.Storage? {
        let value = try row.decode(DatabaseValue.self, atIndex: index)
        if case .null = value.storage { return nil }
        return value.storage
    }

    private static func text(_ row: Row, _ index: Int) throws -> String? {
        if case .string(let text) = try value(row, index) { return text }
        return nil
    }

    private static func integer(_ row: Row, _ index: Int) throws -> Int64? {
        if case .int64(let integer) = try value(row, index) { return integer }
        return nil
    }

    private static func blob(_ row: Row, _ index: Int) throws -> Data? {
        if case .blob(let data) = try value(row, index) { return data }
        return nil
    }

    /// What SQLite said, in words of our own: its messages quote the file (a damaged schema's text),
    /// and nothing from the file is repeated to the page or the log.
    private static func fileError(_ error: any Error, path: String, timeLimit: Duration) -> BasemapError {
        guard let error = error as? DatabaseError else {
            return .unreadable(path: path, sqliteCode: 0, message: "it could not be read")
        }
        switch error.resultCode {
        case .SQLITE_NOTADB: return .notMBTiles(path: path, reason: "it is not an SQLite file")
        case .SQLITE_CORRUPT: return .notMBTiles(path: path, reason: "it is damaged")
        case .SQLITE_TOOBIG: return .notMBTiles(path: path, reason: "it holds a value larger than any map tile")
        case .SQLITE_INTERRUPT: return .tooSlow(path: path, seconds: Int(timeLimit.components.seconds))
        default:
            let code = error.resultCode.rawValue
            return .unreadable(path: path, sqliteCode: code, message: String(cString: sqlite3_errstr(code)))
        }
    }
}

/// Why the basemap cannot be drawn; each says what to do.
public enum BasemapError: Error, Equatable, CustomStringConvertible {
    case missing(path: String)
    case notMBTiles(path: String, reason: String)
    case unsupportedFormat(path: String, format: String)
    case unsupportedTile(path: String, z: Int, x: Int, y: Int)
    case tileTooLarge(path: String, z: Int, x: Int, y: Int, bytes: Int64)
    case unreadable(path: String, sqliteCode: Int32, message: String)
    case notRegularFile(path: String)
    /// `holds` is a phrase of ours ("a view", "a trigger"), never a name from the file.
    case runsSQL(path: String, holds: String)
    case tooSlow(path: String, seconds: Int)

    public var description: String {
        switch self {
        case .missing(let path):
            return "the basemap \(path) does not exist; copy the .mbtiles file there or correct [web] basemap"
        case .notMBTiles(let path, let reason):
            return "the basemap \(path) is not an MBTiles file (\(reason)); export the map again as MBTiles"
        case .unsupportedFormat(let path, let format):
            return
                "the basemap \(path) holds \(format) tiles; the cab view draws raster tiles (png, jpg or webp): export it as raster MBTiles"
        case .unsupportedTile(let path, let z, let x, let y):
            return "the basemap \(path) has a tile at \(z)/\(x)/\(y) that is not a PNG, JPEG or WebP image"
        case .tileTooLarge(let path, let z, let x, let y, let bytes):
            return
                "the basemap \(path) has a tile at \(z)/\(x)/\(y) of \(bytes) bytes, more than the \(Basemap.maximumTileBytes) a map tile needs; export the map again"
        case .unreadable(let path, let code, let message):
            return
                "the basemap \(path) cannot be read: \(message) (SQLite code \(code)); check the file and its permissions"
        case .notRegularFile(let path):
            return
                "the basemap \(path) is not a regular file (a FIFO, a directory or a device), which the cab view does not open; copy the .mbtiles file there or correct [web] basemap"
        case .runsSQL(let path, let holds):
            return
                "the basemap \(path) holds \(holds), SQL that runs inside the file, where a map file is only data; export it again as a plain MBTiles file (tiles and metadata as tables, not deduplicated)"
        case .tooSlow(let path, let seconds):
            return
                "the basemap \(path) took more than \(seconds) seconds to answer, so it was stopped; export it again as a plain MBTiles file with its tile index"
        }
    }
}
