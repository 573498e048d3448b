import BlockingWork
import Foundation
import GRDB

/// The map kept on the box: raster tiles from an MBTiles file, made on the office PC for the
/// farm's area, so that the cab sees fields and roads with no internet.
///
/// MBTiles 1.3 is SQLite: `tiles(zoom_level, tile_column, tile_row, tile_data)`, with `tile_row`
/// counted from the bottom (TMS) where the page asks from the top (XYZ). The file is the user's and
/// is treated as hostile: opened read-only, every tile size-capped and recognised by its bytes,
/// not by what the file's metadata claims.
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

    public let path: String
    private var database: DatabaseQueue?
    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-basemap")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    public init(path: String) {
        self.path = path
    }

    private var described: Result<Info, BasemapError>?

    /// What `open` found, read once: the page asks with every session.
    public func describe() -> Result<Info, BasemapError> {
        if let described { return described }
        let result = Result { () throws(BasemapError) in try open() }
        described = result
        return result
    }

    /// Opens the file and reads what the page needs; a clear error when it is not a raster MBTiles.
    public func open() throws(BasemapError) -> Info {
        let database = try opened()
        do {
            return try database.read { db throws -> Info in
                guard try db.tableExists("tiles") || db.viewExists("tiles") else {
                    throw BasemapError.notMBTiles(path: path, reason: "it has no tiles table")
                }
                let metadata = try Self.metadata(db)
                if let format = metadata["format"]?.lowercased(), !["png", "jpg", "jpeg", "webp"].contains(format) {
                    throw BasemapError.unsupportedFormat(path: path, format: String(format.prefix(32)))
                }
                let zooms = try Row.fetchOne(db, sql: "SELECT min(zoom_level), max(zoom_level) FROM tiles")
                guard let low = zooms?[0] as Int64?, let high = zooms?[1] as Int64?,
                      let minZoom = Int(exactly: low), let maxZoom = Int(exactly: high),
                      Self.zoomRange.contains(minZoom), Self.zoomRange.contains(maxZoom) else {
                    throw BasemapError.notMBTiles(path: path, reason: "it holds no tiles at zoom levels 0 to 24")
                }
                return Info(name: metadata["name"].map { String($0.prefix(200)) }, attribution: metadata["attribution"].map { String($0.prefix(500)) },
                            minZoom: minZoom, maxZoom: maxZoom)
            }
        } catch let error as BasemapError {
            throw error
        } catch {
            throw Self.fileError(error, path: path)
        }
    }

    /// The tile at z/x/y counted from the top, and its media type; nil when the file has none there.
    public func tile(z: Int, x: Int, y: Int) throws(BasemapError) -> (data: Data, type: String)? {
        guard Self.zoomRange.contains(z), x >= 0, y >= 0, x < 1 << z, y < 1 << z else { return nil }
        let database = try opened()
        let row = (1 << z) - 1 - y
        let found: (size: Int64, data: Data?)?
        do {
            found = try database.read { db in
                // The size first: an oversized tile is refused without reading it into memory.
                try Row.fetchOne(db, sql: """
                    SELECT length(tile_data), CASE WHEN length(tile_data) <= ? THEN tile_data END FROM tiles
                    WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?
                    """, arguments: [Self.maximumTileBytes, z, x, row]).map { (($0[0] as Int64?) ?? 0, $0[1] as Data?) }
            }
        } catch {
            throw Self.fileError(error, path: path)
        }
        guard let found else { return nil }
        guard let data = found.data else { throw .tileTooLarge(path: path, z: z, x: x, y: y, bytes: found.size) }
        guard let type = Self.mediaType(of: data) else { throw .unsupportedTile(path: path, z: z, x: x, y: y) }
        return (data, type)
    }

    /// What a tile is, by its first bytes: PNG, JPEG or WebP; nil for anything else (a gzipped
    /// vector tile, HTML, damage).
    static func mediaType(of data: Data) -> String? {
        let bytes = [UInt8](data.prefix(12))
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return "image/png" }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) { return "image/jpeg" }
        if bytes.count == 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) { return "image/webp" }
        return nil
    }

    private static func metadata(_ db: Database) throws -> [String: String] {
        guard try db.tableExists("metadata") || db.viewExists("metadata") else { return [:] }
        var values: [String: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT name, value FROM metadata LIMIT 200") {
            if let name = row[0] as String?, let value = row[1] as String? { values[name.lowercased()] = value }
        }
        return values
    }

    private func opened() throws(BasemapError) -> DatabaseQueue {
        if let database { return database }
        guard FileManager.default.fileExists(atPath: path) else { throw .missing(path: path) }
        do {
            var settings = GRDB.Configuration()
            settings.readonly = true
            settings.busyMode = .timeout(1)
            let database = try DatabaseQueue(path: path, configuration: settings)
            // Reading the schema finds a file that is not SQLite at once, not at the first tile.
            _ = try database.read { db in try db.tableExists("tiles") }
            self.database = database
            return database
        } catch {
            throw Self.fileError(error, path: path)
        }
    }

    private static func fileError(_ error: any Error, path: String) -> BasemapError {
        if let error = error as? DatabaseError {
            if error.resultCode == .SQLITE_NOTADB { return .notMBTiles(path: path, reason: "it is not an SQLite file") }
            return .unreadable(path: path, sqliteCode: error.resultCode.rawValue, message: error.message ?? "\(error)")
        }
        return .unreadable(path: path, sqliteCode: 0, message: "\(error)")
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

    public var description: String {
        switch self {
        case .missing(let path):
            return "the basemap \(path) does not exist; copy the .mbtiles file there or correct [web] basemap"
        case .notMBTiles(let path, let reason):
            return "the basemap \(path) is not an MBTiles file (\(reason)); export the map again as MBTiles"
        case .unsupportedFormat(let path, let format):
            return "the basemap \(path) holds \(format) tiles; the cab view draws raster tiles (png, jpg or webp): export it as raster MBTiles"
        case .unsupportedTile(let path, let z, let x, let y):
            return "the basemap \(path) has a tile at \(z)/\(x)/\(y) that is not a PNG, JPEG or WebP image"
        case .tileTooLarge(let path, let z, let x, let y, let bytes):
            return "the basemap \(path) has a tile at \(z)/\(x)/\(y) of \(bytes) bytes, more than the \(Basemap.maximumTileBytes) a map tile needs; export the map again"
        case .unreadable(let path, let code, let message):
            return "the basemap \(path) cannot be read: \(message) (SQLite code \(code)); check the file and its permissions"
        }
    }
}
