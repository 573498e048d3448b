import Foundation
import GRDB
import TestSupport
import Testing

@testable import CabView

/// The tile cache's file read back as a file anyone could have edited: SQLite keeps a value of any
/// type in any column, and GRDB's converting subscripts (`row[0] as String?`) stop the process on one
/// they cannot convert. Each value of another type here was one such stop before the cache read its
/// rows through checked values.
@Suite("the tile cache's file read back with values of another type", .timeLimit(.minutes(1)))
struct TileCacheStoredValueTests {
    let scratch = TemporaryDirectory("tile-values")
    let clock = TileTestClock()
    let journal = TileTestJournal()

    var path: String { scratch.file("tile-cache.sqlite") }

    func cache(_ server: LoopbackTileServer, capacity: Int = 10_000_000) -> TileCache {
        let clock = clock
        return TileCache(
            upstream: server.template, path: path, capacityBytes: capacity,
            userAgent: TileCache.userAgent(version: "0.1.0"),
            logger: journal.logger, timeout: 2, now: { clock.now })
    }

    /// Changes the file as another program would, outside the cache.
    func edit(_ statements: [String]) throws {
        let database = try DatabaseQueue(path: path)
        try database.writeWithoutTransaction { db in
            for sql in statements { try db.execute(sql: sql) }
        }
    }

    func tilesInFile() throws -> Int {
        try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM tile") ?? 0 }
    }

    @Test(
        "a kept tile with a value of another type is a miss, fetched again and kept in its place; a validator of another type is none"
    )
    func wronglyTypedTile() async throws {
        let server = try LoopbackTileServer {
            .answer(
                status: 200, headers: ["Content-Type: image/png", "Cache-Control: max-age=3600", "ETag: \"e\""],
                body: tilePNG($0.path))
        }
        let first = cache(server)
        for x in 0..<5 { _ = try await first.tile(z: 5, x: x, y: 0) }
        await first.flush()
        try edit([
            "UPDATE tile SET type = x'FF' WHERE x = 0",  // not text, nor UTF-8
            "UPDATE tile SET expires_at = 'soon' WHERE x = 1",  // text where a time belongs
            "UPDATE tile SET data = 42 WHERE x = 2",  // a number where the image belongs
            "UPDATE tile SET etag = x'FF', last_modified = x'FE' WHERE x = 3",
        ])
        let tiles = cache(server)  // the service restarted: the file is read back
        for x in 0..<3 {
            let again = try #require(try await tiles.tile(z: 5, x: x, y: 0))
            #expect(!again.fromCache && again.data == tilePNG("/5/\(x)/0.png"), "\(x)")
        }
        #expect(server.count == 8)
        for x in 0..<5 {
            let kept = try #require(try await tiles.tile(z: 5, x: x, y: 0))
            #expect(kept.fromCache && kept.data == tilePNG("/5/\(x)/0.png") && kept.type == "image/png", "\(x)")
        }
        #expect(server.count == 8)

        // Stale, the tile whose validators could not be read is fetched whole, not revalidated.
        clock.advance(8 * 86_400)
        _ = try await tiles.tile(z: 5, x: 3, y: 0)
        _ = try await tiles.tile(z: 5, x: 4, y: 0)
        #expect(server.requests.suffix(2).map { $0.headers["if-none-match"] } == [nil, "\"e\""])
        #expect(try tilesInFile() == 5)
    }

    @Test("a tile's size of another type counts as none, and the least recently used tiles still go")
    func wronglyTypedSize() async throws {
        let server = try TileCacheTests.tileServer(size: 1000)
        let first = cache(server, capacity: 3500)
        for x in 0..<3 {
            _ = try await first.tile(z: 5, x: x, y: 0)
            clock.advance(1)
        }
        try edit(["UPDATE tile SET bytes = 'many' WHERE x = 0"])
        let tiles = cache(server, capacity: 3500)
        #expect(await tiles.stored().bytes == 2000)
        for x in 3..<6 {
            _ = try await tiles.tile(z: 5, x: x, y: 0)
            clock.advance(1)
        }
        #expect(await tiles.stored() == (3, 3000))
        #expect(try tilesInFile() == 3)
        #expect(await tiles.statistics.evicted == 3)
    }

    @Test("a tile's size out of any tile's range counts as none: the file still keeps within the cap")
    func sizeOutOfRange() async throws {
        let server = try TileCacheTests.tileServer(size: 1000)
        let first = cache(server, capacity: 3500)
        for x in 0..<3 {
            _ = try await first.tile(z: 5, x: x, y: 0)
            clock.advance(1)
        }
        // A negative size would hold the sum under the cap for ever; one near the largest integer
        // would overflow it.
        try edit([
            "UPDATE tile SET bytes = -9000000000000000000 WHERE x = 0",
            "UPDATE tile SET bytes = 9000000000000000000 WHERE x = 1",
            "UPDATE tile SET bytes = 1.5e300 WHERE x = 2",
        ])
        let tiles = cache(server, capacity: 3500)
        #expect(await tiles.stored() == (3, 0))
        for x in 3..<20 {
            _ = try await tiles.tile(z: 5, x: x, y: 0)
            clock.advance(1)
            let kept = await tiles.stored()
            #expect(kept.bytes <= 3500 + 1000 && kept.tiles <= 7, "\(kept)")
        }
        #expect(try tilesInFile() <= 4)
    }
}
