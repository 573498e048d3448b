import AgrirouterLink
import BlockingWork
import Bounds
import Clocks
import CurlHTTP
import Foundation
import GRDB
import Logging
import Synchronization

/// Map tiles from the internet, kept on the box: the cab's tablet asks the box, and the box asks the
/// tile server once and keeps the answer in an SQLite file of the state directory. A field seldom has
/// internet; after a first visit with it (at the yard, on the phone's hotspot) the map of the fields
/// driven keeps working without.
///
/// What it keeps, and for how long:
/// - Only tiles the page asks for, one request per tile at a time, never a prefetch or a bulk
///   download: the OpenStreetMap tile usage policy forbids bulk downloading, asks for a User-Agent that
///   names the application, and asks clients to cache tiles, following the server's expiry headers or
///   otherwise for at least seven days.
/// - A tile counts as fresh for what the server's `Cache-Control: max-age` (less `Age`) or `Expires`
///   says, but never less than `minimumFreshness` (7 days by default). OSM's tile servers ask for
///   hours; asking them again for every tile of a field every few hours would spend the farm's mobile
///   data on roads that have not moved, and the policy's seven days leave room for it. `no-store` is
///   honoured: such a tile is shown and not kept.
/// - A stale tile is revalidated (If-None-Match, If-Modified-Since) when the server can be reached,
///   and served as it is when it cannot, or when the server answers with something unusable: an old
///   map beats no map. No `must-revalidate` is obeyed in that case, for the same reason.
/// - The least recently used tiles go when the tiles' bytes pass `capacityBytes`; the file never holds
///   more than that plus the tile just stored.
///
/// The server is treated as hostile: answers are capped at 2 MiB (the transfer stops past it), must be
/// a PNG, JPEG or WebP image by their bytes, must come with status 200 (or 304 to a revalidation),
/// within a few seconds and at most three redirects to the same scheme. Anything else is a typed error,
/// counted, never stored; a cached tile is served instead when there is one.
///
/// SQLite runs on the actor's own thread, and each request on a thread of its own, so neither holds
/// one of Swift's cooperative threads; a slow server never delays a tile the cache already has.
public actor TileCache {
    /// What the page gets: the tile's bytes, its media type (by its bytes), and whether it came from
    /// the file rather than from the server just now.
    public typealias Served = (data: Data, type: String, fromCache: Bool)

    /// Counters since the cache was made, for the journal and the tests.
    public struct Statistics: Sendable, Equatable {
        /// Served from the file while fresh.
        public var hits = 0
        /// Served from the file while stale, because the server could not be reached or answered
        /// badly, or was being left alone after a failure.
        public var staleServed = 0
        /// Fetched whole from the server (status 200) and served.
        public var fetched = 0
        /// A stale tile confirmed by the server (304) and served from the file.
        public var revalidated = 0
        /// Requests that reached the network (one per fetch; redirects not counted).
        public var upstreamRequests = 0
        /// Answers refused, by why: unreachable, timed out, status, too large, not an image, redirects.
        public var unreachable = 0
        public var timedOut = 0
        public var badStatus = 0
        public var tooLarge = 0
        public var notAnImage = 0
        public var redirectLoops = 0
        /// Misses refused at once because the server failed moments before.
        public var heldOff = 0
        /// Tiles removed to stay under the cap.
        public var evicted = 0
        /// Damaged cache files moved aside.
        public var filesMovedAside = 0
    }

    /// Leaflet's default deepest zoom is 18 and OSM's tiles stop at 19.
    public static let zoomRange = 0...19
    /// The largest answer read; a 256-pixel raster tile is tens of kilobytes.
    public static let maximumTileBytes = Basemap.maximumTileBytes
    /// The least time a fetched tile is kept fresh, whatever its headers ask (see the type's comment).
    public static let minimumFreshness: TimeInterval = 7 * 86_400
    /// The longest freshness taken from a header: a year, so that a date far out cannot pin a tile.
    static let maximumFreshness: TimeInterval = 365 * 86_400
    /// Seconds for a whole request, connection and redirects included.
    public static let defaultTimeout: Double = 5
    /// After the server could not be reached (or answered 403, 429 or 5xx), misses fail at once and
    /// stale tiles are served without asking for this long: a cab with Wi-Fi but no internet would
    /// otherwise wait out a connection timeout for every tile of the screen, and a server that is
    /// failing or refusing would be asked again for each one.
    static let holdOff = 15
    /// Requests at once to the server; a browser's own limit per host is 6.
    static let concurrentFetches = 4
    /// Uses of tiles noted in memory before they are written; eviction writes them first.
    static let useBatch = 256

    public nonisolated let upstream: String
    public nonisolated let path: String
    public nonisolated let capacityBytes: Int
    public nonisolated let userAgent: String
    private let template: Result<UpstreamTemplate, TileCacheError>
    private let minimumFreshness: TimeInterval
    private let fetcher: TileFetcher
    private let now: @Sendable () -> Date
    private let logger: Logger

    private var database: DatabaseQueue?
    /// Why the file cannot be used, once found; tiles are then fetched and not kept.
    private var unusable: TileCacheError?
    /// The bytes of every tile in the file, kept here so that a store need not sum them.
    private var storedBytes = 0
    /// Tiles used since the last write of their `used_at`, with when.
    private var pendingUses: [TileKey: Double] = [:]
    /// The fetch of each tile being asked for: a second ask waits for the first's answer.
    private var inFlight: [TileKey: Task<Result<Served, TileCacheError>, Never>] = [:]
    private var fetchesRunning = 0
    private var fetchWaiters: [CheckedContinuation<Void, Never>] = []
    private var offlineUntil: Date?
    private var lastLogged: String?
    public private(set) var statistics = Statistics()

    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-tiles")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// - Parameters:
    ///   - upstream: the tile server's URL template, with `{z}`, `{x}` and `{y}` (and optionally `{s}`).
    ///   - path: the cache file, made when missing.
    ///   - capacityBytes: the most tile bytes kept (at least 0).
    ///   - userAgent: how requests name the program, as tile servers ask (see `userAgent(version:)`).
    ///   - minimumFreshness, timeout, now: for the tests; the defaults are the ones to use.
    public init(
        upstream: String, path: String, capacityBytes: Int, userAgent: String,
        logger: Logger = Logger(label: "agrigps.web.tiles"),
        minimumFreshness: TimeInterval = TileCache.minimumFreshness,
        timeout: Double = TileCache.defaultTimeout,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.upstream = upstream
        self.path = path
        self.capacityBytes = max(0, capacityBytes)
        self.userAgent = userAgent
        self.logger = logger
        template = Result { () throws(TileCacheError) in try UpstreamTemplate(upstream) }
        self.minimumFreshness = Bounds.check(minimumFreshness, in: 0...Self.maximumFreshness) ?? Self.minimumFreshness
        let seconds = Bounds.check(timeout, in: 0.05...60) ?? Self.defaultTimeout
        fetcher = TileFetcher(userAgent: userAgent, timeout: seconds)
        self.now = now
    }

    /// The User-Agent to send: the program and its version, and what it is, as OSM's policy asks.
    public static func userAgent(version: String) -> String {
        "agrigps/\(version) (+farm gateway; cab view tile cache)"
    }

    /// Whether `upstream` is a template this cache can use; for the configuration's check.
    public static func check(upstream: String) throws(TileCacheError) {
        _ = try UpstreamTemplate(upstream)
    }

    /// The tile at z/x/y (counted from the top, as Leaflet asks); nil when z/x/y lies outside the
    /// world (z from 0 to 19, x and y below 2^z). Served from the file while fresh; otherwise fetched,
    /// kept and served; when the server fails, the stale tile if there is one, else the error.
    public func tile(z: Int, x: Int, y: Int) async throws(TileCacheError) -> Served? {
        guard Self.zoomRange.contains(z), x >= 0, y >= 0, x < 1 << z, y < 1 << z else { return nil }
        let key = TileKey(z: z, x: x, y: y)
        let time = now()
        let cached = lookup(key)
        // A freshness further ahead than any header may give means the clock went back (a box
        // without a real-time clock, booted at 1970): the tile is stale, not fresh for decades.
        if let cached, cached.expiresAt > time.timeIntervalSince1970,
            cached.expiresAt - time.timeIntervalSince1970 <= Self.maximumFreshness
        {
            statistics.hits += 1
            noteUse(key, at: time)
            return (cached.data, cached.type, true)
        }
        if let heldOff = heldOff(key, cached: cached, at: time) { return try heldOff.get() }
        if let running = inFlight[key] { return try await running.value.get() }
        let fetch = Task { await self.refresh(key, cached: cached) }
        inFlight[key] = fetch
        let outcome = await fetch.value
        inFlight[key] = nil
        return try outcome.get()
    }

    /// While the server is left alone: the stale tile, or the error; nil when it may be asked.
    private func heldOff(_ key: TileKey, cached: CachedTile?, at time: Date) -> Result<Served, TileCacheError>? {
        guard let offlineUntil, time < offlineUntil, offlineUntil.timeIntervalSince(time) <= TimeInterval(Self.holdOff)
        else { return nil }
        if let cached {
            statistics.staleServed += 1
            noteUse(key, at: time)
            return .success((cached.data, cached.type, true))
        }
        statistics.heldOff += 1
        return .failure(.upstreamHeldOff(seconds: Self.holdOff))
    }

    /// Writes the pending use times; for a clean stop (they are otherwise written in batches).
    public func flush() {
        writeUses()
    }

    /// The number of tiles and their bytes in the file, for the tests and the journal.
    public func stored() -> (tiles: Int, bytes: Int) {
        guard let database = openedIfPresent() else { return (0, 0) }
        let count = (try? database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM tile") }) ?? nil
        return (count ?? 0, storedBytes)
    }

    // MARK: - Fetching

    /// One fetch of `key` and what the asks waiting for it get. Runs on the actor between its awaits.
    private func refresh(_ key: TileKey, cached: CachedTile?) async -> Result<Served, TileCacheError> {
        let url: String
        switch template {
        case .success(let template): url = template.url(for: key)
        case .failure(let error): return cached.map { .success(staleServed(key, $0)) } ?? .failure(error)
        }
        await takeFetchSlot()
        // A page asks for a screen of tiles at once, and most wait here for a slot: when the first
        // found the server unreachable, the rest are held off too instead of each trying again.
        if let heldOff = heldOff(key, cached: cached, at: now()) {
            releaseFetchSlot()
            return heldOff
        }
        statistics.upstreamRequests += 1
        let validators = cached.map { (etag: $0.etag, lastModified: $0.lastModified) }
        let fetcher = fetcher
        let answer: Result<UpstreamAnswer, TileCacheError>
        do {
            answer = .success(
                try await fetcher.get(url, etag: validators?.etag, lastModified: validators?.lastModified))
        } catch {
            answer = .failure(error)
        }
        releaseFetchSlot()
        let time = now()
        switch answer {
        case .failure(let error):
            count(error)
            if error.meansOffline { offlineUntil = time.addingTimeInterval(TimeInterval(Self.holdOff)) }
            log("tile \(key) not fetched: \(error)")
            return cached.map { .success(staleServed(key, $0)) } ?? .failure(error)
        case .success(let answer):
            offlineUntil = nil
            let policy = CachePolicy(answer: answer, now: time, minimum: minimumFreshness)
            if answer.status == 304, let cached {
                statistics.revalidated += 1
                lastLogged = nil  // working again: the next problem is news
                if case .keep(let until) = policy {
                    confirm(
                        key, until: until, etag: answer.etag ?? cached.etag,
                        lastModified: answer.lastModified ?? cached.lastModified, at: time)
                } else {
                    remove(key)
                }
                return .success((cached.data, cached.type, true))
            }
            guard answer.status == 200 else {
                let error = TileCacheError.upstreamStatus(answer.status)
                count(error)
                // A server that is failing, refusing us (403) or asking us to slow down (429) is left
                // alone for a while, as when it cannot be reached: not asked again for every tile.
                if [403, 429].contains(answer.status) || (500...599).contains(answer.status) {
                    offlineUntil = time.addingTimeInterval(TimeInterval(Self.holdOff))
                }
                log("tile \(key) not fetched: \(error)")
                return cached.map { .success(staleServed(key, $0)) } ?? .failure(error)
            }
            guard let type = Basemap.mediaType(of: answer.body) else {
                let error = TileCacheError.notAnImage(contentType: answer.contentType.map { String($0.prefix(100)) })
                count(error)
                log("tile \(key) not kept: \(error)")
                return cached.map { .success(staleServed(key, $0)) } ?? .failure(error)
            }
            statistics.fetched += 1
            lastLogged = nil
            switch policy {
            case .keep(let until):
                store(
                    key, data: answer.body, type: type, until: until, etag: answer.etag,
                    lastModified: answer.lastModified, at: time)
            case .doNotStore: remove(key)
            }
            return .success((answer.body, type, false))
        }
    }

    private func staleServed(_ key: TileKey, _ cached: CachedTile) -> Served {
        statistics.staleServed += 1
        noteUse(key, at: now())
        return (cached.data, cached.type, true)
    }

    private func count(_ error: TileCacheError) {
        switch error {
        case .upstreamUnreachable, .upstreamFailed: statistics.unreachable += 1
        case .upstreamTimedOut: statistics.timedOut += 1
        case .upstreamStatus: statistics.badStatus += 1
        case .tileTooLarge: statistics.tooLarge += 1
        case .notAnImage: statistics.notAnImage += 1
        case .tooManyRedirects: statistics.redirectLoops += 1
        case .upstreamHeldOff, .invalidUpstream, .libcurlUnavailable, .libcurlRefused, .cacheUnusable: break
        }
    }

    private func takeFetchSlot() async {
        if fetchesRunning < Self.concurrentFetches {
            fetchesRunning += 1
            return
        }
        await withCheckedContinuation { fetchWaiters.append($0) }
    }

    /// Hands the slot straight to the next waiter, so that the count never drops between them.
    private func releaseFetchSlot() {
        if fetchWaiters.isEmpty {
            fetchesRunning -= 1
        } else {
            fetchWaiters.removeFirst().resume()
        }
    }

    /// Logs a problem when it differs from the last one: a page of 20 failing tiles is one line.
    private func log(_ message: String) {
        let kind = String(message.drop { $0 != ":" })
        guard kind != lastLogged else { return }
        lastLogged = kind
        logger.warning("\(message)")
    }

    // MARK: - The file

    private func lookup(_ key: TileKey) -> CachedTile? {
        guard let database = openedIfPresent() else { return nil }
        do {
            return try database.read { db in
                // Prepared once: every tile a page asks for starts here.
                try Row.fetchOne(
                    db.cachedStatement(
                        sql:
                            "SELECT type, expires_at, etag, last_modified, data FROM tile WHERE z = ? AND x = ? AND y = ?"
                    ),
                    arguments: [key.z, key.x, key.y]
                ).flatMap { row -> CachedTile? in
                    // A value of another type is a miss: the tile is fetched again and stored in its place.
                    guard let type = row.checked(0, as: String.self), let expiresAt = row.checked(1, as: Double.self),
                        let data = row.checked(4, as: Data.self)
                    else { return nil }
                    return CachedTile(
                        data: data, type: type, expiresAt: expiresAt, etag: row.checked(2), lastModified: row.checked(3)
                    )
                }
            }
        } catch {
            failed(error, doing: "read a tile")
            return nil
        }
    }

    private func store(
        _ key: TileKey, data: Data, type: String, until: Date, etag: String?, lastModified: String?, at time: Date
    ) {
        guard let database = opened() else { return }
        do {
            let (replaced, id) = try database.write { db -> (Int, Int64) in
                let old =
                    try Int.fetchOne(
                        db, sql: "SELECT \(Self.bytesSQL) FROM tile WHERE z = ? AND x = ? AND y = ?",
                        arguments: [key.z, key.x, key.y]) ?? 0
                try db.execute(
                    sql: """
                        INSERT INTO tile (z, x, y, type, bytes, expires_at, used_at, etag, last_modified, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (z, x, y) DO UPDATE SET type = excluded.type, bytes = excluded.bytes, expires_at = excluded.expires_at,
                            used_at = excluded.used_at, etag = excluded.etag, last_modified = excluded.last_modified, data = excluded.data
                        """,
                    arguments: [
                        key.z, key.x, key.y, type, data.count, until.timeIntervalSince1970, time.timeIntervalSince1970,
                        etag, lastModified, data,
                    ])
                let id =
                    try Int64.fetchOne(
                        db, sql: "SELECT id FROM tile WHERE z = ? AND x = ? AND y = ?",
                        arguments: [key.z, key.x, key.y]) ?? 0
                return (old, id)
            }
            pendingUses[key] = nil
            storedBytes += data.count - replaced
            if storedBytes > capacityBytes { evict(keeping: id) }
        } catch {
            failed(error, doing: "store a tile")
        }
    }

    /// A 304: the tile stays, fresh again.
    private func confirm(_ key: TileKey, until: Date, etag: String?, lastModified: String?, at time: Date) {
        guard let database = opened() else { return }
        do {
            try database.write { db in
                try db.execute(
                    sql:
                        "UPDATE tile SET expires_at = ?, used_at = ?, etag = ?, last_modified = ? WHERE z = ? AND x = ? AND y = ?",
                    arguments: [
                        until.timeIntervalSince1970, time.timeIntervalSince1970, etag, lastModified, key.z, key.x,
                        key.y,
                    ])
            }
            pendingUses[key] = nil
        } catch {
            failed(error, doing: "update a tile")
        }
    }

    /// The server said no-store: an older copy goes too.
    private func remove(_ key: TileKey) {
        guard let database = openedIfPresent() else { return }
        do {
            let freed = try database.write { db -> Int in
                let bytes =
                    try Int.fetchOne(
                        db, sql: "SELECT \(Self.bytesSQL) FROM tile WHERE z = ? AND x = ? AND y = ?",
                        arguments: [key.z, key.x, key.y]) ?? 0
                try db.execute(
                    sql: "DELETE FROM tile WHERE z = ? AND x = ? AND y = ?", arguments: [key.z, key.x, key.y])
                return bytes
            }
            storedBytes -= freed
            pendingUses[key] = nil
        } catch {
            failed(error, doing: "remove a tile")
        }
    }

    /// A use is noted in memory and written with others: a hit then costs one read and no write.
    private func noteUse(_ key: TileKey, at time: Date) {
        pendingUses[key] = time.timeIntervalSince1970
        if pendingUses.count >= Self.useBatch { writeUses() }
    }

    private func writeUses() {
        guard !pendingUses.isEmpty, let database = opened() else { return }
        let uses = pendingUses
        pendingUses = [:]
        do {
            try database.write { db in
                let update = try db.makeStatement(
                    sql: "UPDATE tile SET used_at = max(used_at, ?) WHERE z = ? AND x = ? AND y = ?")
                for (key, time) in uses { try update.execute(arguments: [time, key.z, key.x, key.y]) }
            }
        } catch {
            failed(error, doing: "note when tiles were used")
        }
    }

    /// Removes the least recently used tiles until the bytes are within the cap, never the one just
    /// stored: so the file holds at most the cap plus that tile.
    private func evict(keeping newest: Int64) {
        writeUses()
        guard let database = opened() else { return }
        do {
            let (stored, capacity) = (storedBytes, capacityBytes)
            let (count, freed) = try database.write { db -> (Int, Int) in
                var (count, freed) = (0, 0)
                while stored - freed > capacity {
                    let rows = try Row.fetchAll(
                        db, sql: "SELECT id, \(Self.bytesSQL) FROM tile WHERE id != ? ORDER BY used_at, id LIMIT 64",
                        arguments: [newest])
                    if rows.isEmpty { break }
                    for row in rows where stored - freed > capacity {
                        // The id is the rowid, always an integer; the size is one of `bytesSQL`'s.
                        guard let id = row.checked(0, as: Int64.self) else { continue }
                        try db.execute(sql: "DELETE FROM tile WHERE id = ?", arguments: [id])
                        freed += row.checked(1, as: Int.self) ?? 0
                        count += 1
                    }
                }
                return (count, freed)
            }
            storedBytes -= freed
            statistics.evicted += count
        } catch {
            failed(error, doing: "make room")
        }
    }

    /// The open file when there is one: with no file yet, nothing is kept, and a box that never
    /// reaches the tile server never makes one (nor writes and syncs it at the page's first tile).
    private func openedIfPresent() -> DatabaseQueue? {
        guard database == nil, unusable == nil else { return database }
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return opened()
    }

    /// The open file, opened (and made) at first use; nil when it cannot be used, and tiles are then
    /// fetched and served without being kept.
    private func opened() -> DatabaseQueue? {
        if let database { return database }
        if unusable != nil { return nil }
        do {
            return try open()
        } catch let error as DatabaseError where Self.isDamage(error) {
            moveAside(because: error)
            do {
                return try open()
            } catch {
                give(up: error)
                return nil
            }
        } catch {
            give(up: error)
            return nil
        }
    }

    /// Marks the file as ours: a database of another program is never written to, nor moved aside.
    static let applicationID: Int32 = 0x6167_5443  // "agTC"

    private func open() throws -> DatabaseQueue {
        var settings = GRDB.Configuration()
        settings.busyMode = .timeout(2)
        let database = try DatabaseQueue(path: path, configuration: settings)
        let (bytes, cleared) = try database.write { db throws -> (Int, Int) in
            let id = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
            let tables = try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE type = 'table'") ?? 0
            guard id == Self.applicationID || (id == 0 && tables == 0) else {
                throw TileCacheError.cacheUnusable(path: path, reason: "it is another program's database")
            }
            // A cache: a commit lost to a power cut costs a tile fetched again, so no sync per write.
            try db.execute(sql: "PRAGMA application_id = \(Self.applicationID)")
            try db.execute(
                sql: """
                    CREATE TABLE IF NOT EXISTS tile (id INTEGER PRIMARY KEY, z INTEGER NOT NULL, x INTEGER NOT NULL, y INTEGER NOT NULL,
                        type TEXT NOT NULL, bytes INTEGER NOT NULL, expires_at REAL NOT NULL, used_at REAL NOT NULL,
                        etag TEXT, last_modified TEXT, data BLOB NOT NULL, UNIQUE (z, x, y));
                    CREATE INDEX IF NOT EXISTS tile_used ON tile (used_at);
                    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    """)
            // Tiles of another server (the template changed) are another map: they go.
            var cleared = 0
            if let source = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'upstream'"),
                source != upstream
            {
                cleared = try Int.fetchOne(db, sql: "SELECT count(*) FROM tile") ?? 0
                try db.execute(sql: "DELETE FROM tile")
            }
            try db.execute(sql: "INSERT OR REPLACE INTO meta VALUES ('upstream', ?)", arguments: [upstream])
            return (try Int.fetchOne(db, sql: "SELECT coalesce(sum(\(Self.bytesSQL)), 0) FROM tile") ?? 0, cleared)
        }
        try database.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA journal_mode = WAL")
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
        }
        if cleared > 0 {
            logger.notice("the tile cache \(path) held \(cleared) tiles of another tile server; they were removed")
        }
        storedBytes = bytes
        self.database = database
        if storedBytes > capacityBytes { evict(keeping: 0) }
        return database
    }

    /// A tile's size as the sums and the eviction count it: what the store wrote, a whole number
    /// from 0 to the largest tile; anything else in the file (text, a real, a negative number, one
    /// near the largest integer) counts as 0, so no sum of them can overflow or go below 0 and hold
    /// the cap off for ever.
    static let bytesSQL =
        "(CASE WHEN typeof(bytes) = 'integer' AND bytes BETWEEN 0 AND \(maximumTileBytes) THEN bytes ELSE 0 END)"

    private static func isDamage(_ error: DatabaseError) -> Bool {
        error.resultCode == .SQLITE_NOTADB || error.resultCode == .SQLITE_CORRUPT
    }

    /// A damaged file is kept for a look, beside the new one, with its journal files: a stale
    /// write-ahead log left at the old name would be applied to the new file.
    private func moveAside(because error: DatabaseError) {
        database = nil
        storedBytes = 0
        pendingUses = [:]
        let aside = path + ".corrupt"
        for suffix in ["", "-wal", "-shm", "-journal"] {
            _ = rename(path + suffix, aside + suffix)
        }
        statistics.filesMovedAside += 1
        logger.error(
            "the tile cache \(path) is damaged (\(error.message ?? "SQLite code \(error.resultCode.rawValue)")); moved it to \(aside) and started a new one"
        )
    }

    private func give(up error: any Error) {
        let problem = (error as? TileCacheError) ?? .cacheUnusable(path: path, reason: "\(error)")
        unusable = problem
        database = nil
        logger.error("\(problem); tiles are fetched and not kept")
    }

    /// An error from the open file: damage moves it aside (the next use starts a new one); anything
    /// else (a full disk) is logged, and the tile is served regardless.
    private func failed(_ error: any Error, doing what: String) {
        if let error = error as? DatabaseError, Self.isDamage(error) {
            moveAside(because: error)
        } else {
            log("the tile cache \(path) could not \(what): \(error)")
        }
    }
}

/// Why a tile cannot be had; each says what to do.
public enum TileCacheError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `[web] tiles` is not an http(s) URL with {z}, {x} and {y}.
    case invalidUpstream(String)
    /// No connection to the tile server (no internet, name not resolved, refused).
    case upstreamUnreachable(String)
    /// The connection failed otherwise (TLS, reset, a redirect to another scheme).
    case upstreamFailed(String)
    case upstreamTimedOut(seconds: Double)
    /// The server failed moments ago and is left alone for a while.
    case upstreamHeldOff(seconds: Int)
    case upstreamStatus(Int)
    case tileTooLarge(limit: Int)
    case notAnImage(contentType: String?)
    case tooManyRedirects
    case libcurlUnavailable(String)
    case libcurlRefused(option: String, code: Int)
    /// The cache file cannot be used; tiles are then served without being kept.
    case cacheUnusable(path: String, reason: String)

    /// The server cannot be reached at all, as opposed to answering badly.
    var meansOffline: Bool {
        switch self {
        case .upstreamUnreachable, .upstreamFailed, .upstreamTimedOut: return true
        default: return false
        }
    }

    public var description: String {
        switch self {
        case .invalidUpstream(let template):
            return
                "[web] tiles \"\(TerminalText.safe(template, limit: 200))\" is not an http or https URL with {z}, {x} and {y}; correct it"
        case .upstreamUnreachable(let detail):
            return
                "the tile server cannot be reached (\(TerminalText.safe(detail, limit: 200))); the map shows the tiles kept on the box"
        case .upstreamFailed(let detail):
            return
                "the connection to the tile server failed (\(TerminalText.safe(detail, limit: 200))); the map shows the tiles kept on the box"
        case .upstreamTimedOut(let seconds):
            return
                "the tile server did not answer within \(Bounds.show(seconds)) s; the map shows the tiles kept on the box"
        case .upstreamHeldOff(let seconds):
            return
                "the tile server failed moments ago and is asked again in \(seconds) s; the map shows the tiles kept on the box"
        case .upstreamStatus(let status):
            return
                "the tile server answered HTTP \(status); check [web] tiles, or the server's usage policy if it is 403 or 429"
        case .tileTooLarge(let limit):
            return
                "the tile server sent more than \(limit / 1_048_576) MiB for one tile; it was cut off and not kept: check [web] tiles"
        case .notAnImage(let type):
            return
                "the tile server answered with something that is not a PNG, JPEG or WebP image (\(TerminalText.safe(type ?? "no Content-Type", limit: 100))), such as a login or error page; it was not kept: check [web] tiles"
        case .tooManyRedirects:
            return "the tile server redirected more than 3 times (a redirect loop); check [web] tiles"
        case .libcurlUnavailable(let detail):
            return "libcurl cannot be loaded (\(detail)); install the libcurl4 package, 7.85 or later"
        case .libcurlRefused(let option, let code):
            return "libcurl refused \(option) (CURLcode \(code)); install a libcurl with OpenSSL, 7.85 or later"
        case .cacheUnusable(let path, let reason):
            return
                "the tile cache \(path) cannot be used (\(TerminalText.safe(reason, limit: 300))); remove it or name another file"
        }
    }
}

struct TileKey: Hashable, Sendable, CustomStringConvertible {
    let z: Int, x: Int, y: Int
    var description: String { "\(z)/\(x)/\(y)" }
}

private struct CachedTile: Sendable {
    var data: Data
    var type: String
    var expiresAt: Double
    var etag: String?
    var lastModified: String?
}

/// `[web] tiles`, checked: an http or https URL with the three placeholders and nothing odd in it.
struct UpstreamTemplate: Sendable {
    let text: String
    let scheme: String

    init(_ text: String) throws(TileCacheError) {
        let lower = text.lowercased()
        let scheme = lower.hasPrefix("https://") ? "https" : lower.hasPrefix("http://") ? "http" : ""
        let host = text.dropFirst(scheme.count + 3).prefix { $0 != "/" && $0 != "?" }
        guard !scheme.isEmpty, !host.isEmpty, text.utf8.count <= 2000, ["{z}", "{x}", "{y}"].allSatisfy(text.contains),
            !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
        else {
            throw .invalidUpstream(text)
        }
        self.text = text
        self.scheme = scheme
    }

    /// Leaflet's `{s}` (subdomain) becomes "a" and `{r}` (retina) nothing: one host, plain tiles.
    func url(for key: TileKey) -> String {
        text.replacingOccurrences(of: "{z}", with: String(key.z))
            .replacingOccurrences(of: "{x}", with: String(key.x))
            .replacingOccurrences(of: "{y}", with: String(key.y))
            .replacingOccurrences(of: "{s}", with: "a")
            .replacingOccurrences(of: "{r}", with: "")
    }
}

/// The answer of the tile server, with the headers that matter for keeping it (each cut to 1 KiB).
struct UpstreamAnswer: Sendable {
    var status: Int
    var body: Data
    var contentType: String?
    var cacheControl: String?
    var expires: String?
    var date: String?
    var age: String?
    var etag: String?
    var lastModified: String?
}

/// What the headers allow: keep the tile fresh until a time, or not keep it.
enum CachePolicy: Equatable {
    case keep(until: Date)
    case doNotStore

    init(answer: UpstreamAnswer, now: Date, minimum: TimeInterval) {
        self.init(
            cacheControl: answer.cacheControl, expires: answer.expires, date: answer.date, age: answer.age, now: now,
            minimum: minimum)
    }

    /// RFC 9111's freshness lifetime, from max-age less Age, else Expires less Date; raised to
    /// `minimum` and cut to a year. A value that does not parse counts as none (an Expires that does
    /// not parse, as expired), so the minimum then applies.
    init(cacheControl: String?, expires: String?, date: String?, age: String?, now: Date, minimum: TimeInterval) {
        var maxAge: Double?
        for directive in (cacheControl ?? "").split(separator: ",") {
            let parts = directive.split(separator: "=", maxSplits: 1).map {
                $0.trimmingCharacters(in: .whitespaces).lowercased()
            }
            guard let name = parts.first else { continue }
            if name == "no-store" {
                self = .doNotStore
                return
            }
            if name == "max-age", parts.count == 2 {
                maxAge = HTTPDate.seconds(parts[1].trimmingCharacters(in: CharacterSet(charactersIn: "\"")))
            }
            if name == "no-cache" { maxAge = 0 }
        }
        let lifetime: Double
        if let maxAge {
            lifetime = maxAge - (age.flatMap { HTTPDate.seconds($0) } ?? 0)
        } else if let expires {
            let origin = date.flatMap { HTTPDate.parse($0) } ?? now
            lifetime = HTTPDate.parse(expires).map { $0.timeIntervalSince(origin) } ?? 0
        } else {
            lifetime = 0
        }
        let kept = min(max(lifetime, minimum), TileCache.maximumFreshness)
        self = .keep(until: now.addingTimeInterval(kept))
    }
}

// MARK: - Fetching

/// Plain GETs for tiles over the one libcurl client: http or https as the template says, redirects
/// only to the same scheme and at most 3, the answer capped, the server verified for https. Handles
/// are kept between requests, so a page of tiles shares one connection and TLS session.
struct TileFetcher: Sendable {
    let userAgent: String
    let timeout: Double
    private let curl = CurlClient(idleHandles: 4)

    init(userAgent: String, timeout: Double) {
        self.userAgent = userAgent
        self.timeout = timeout
    }

    func get(_ url: String, etag: String?, lastModified: String?) async throws(TileCacheError) -> UpstreamAnswer {
        let seconds = timeout.isFinite ? min(max(timeout, 0.001), 60) : 5
        var request = CurlRequest(
            url: url, connectTimeout: min(seconds, 3), totalTimeout: seconds,
            maximumResponseBytes: TileCache.maximumTileBytes)
        request.scheme = url.lowercased().hasPrefix("https://") ? "https" : "http"
        // A tile server may move its tiles; a loop, or a move to another scheme, is refused.
        request.maximumRedirects = 3
        request.userAgent = userAgent
        request.headers = ["Accept: image/png,image/webp,image/jpeg,image/*;q=0.8"]
        // Validators are the server's own text, sent back as they came (cut at 1 KiB; one with a line
        // break is left out).
        if let etag { request.headers.append("If-None-Match: \(etag)") }
        if let lastModified { request.headers.append("If-Modified-Since: \(lastModified)") }
        request.responseHeaders = ["Content-Type", "Cache-Control", "Expires", "Date", "Age", "ETag", "Last-Modified"]
        let answer: CurlResponse
        do {
            answer = try await curl.send(request)
        } catch {
            throw Self.error(error, timeout: timeout)
        }
        let header = answer.headers
        return UpstreamAnswer(
            status: answer.status, body: answer.body, contentType: header["Content-Type"],
            cacheControl: header["Cache-Control"], expires: header["Expires"], date: header["Date"],
            age: header["Age"], etag: header["ETag"], lastModified: header["Last-Modified"])
    }

    private static func error(_ failure: CurlFailure, timeout: Double) -> TileCacheError {
        switch failure {
        case .unavailable(let detail): return .libcurlUnavailable(detail)
        case .refused(let option, let code): return .libcurlRefused(option: option, code: code)
        case .cannotStart: return .upstreamFailed("libcurl could not start a request")
        case .tooLarge(let limit): return .tileTooLarge(limit: limit)
        case .cancelled: return .upstreamFailed("cancelled")
        case .failed(.timedOut, _, _): return .upstreamTimedOut(seconds: timeout)
        case .failed(.tooManyRedirects, _, _): return .tooManyRedirects
        case .failed(.cannotConnect, let detail, _): return .upstreamUnreachable(detail)
        case .failed(_, let detail, _): return .upstreamFailed(detail)
        }
    }
}

/// The cache file read back as untrusted input: SQLite keeps a value of any type in any column (a
/// file edited, restored from elsewhere, damaged), and GRDB's converting subscripts (`row[0] as
/// String?`) stop the process on a value they cannot convert.
private extension Row {
    /// The value at `index` as `T` where GRDB converts it; nil when NULL or of a type that does not.
    func checked<T: DatabaseValueConvertible>(_ index: Int, as type: T.Type = T.self) -> T? {
        guard let value = try? decode(DatabaseValue.self, atIndex: index) else { return nil }
        return T.fromDatabaseValue(value)
    }
}
