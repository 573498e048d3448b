import Foundation
import GRDB
import TestSupport
import Testing

@testable import CabView

/// A file made here with whatever SQL a hostile exporter could have written into it.
func makeDatabase(at path: String, _ statements: [String], arguments: [[(any DatabaseValueConvertible)?]] = []) throws {
    let database = try DatabaseQueue(path: path)
    try database.writeWithoutTransaction { db in
        for (index, sql) in statements.enumerated() {
            try db.execute(sql: sql, arguments: StatementArguments(index < arguments.count ? arguments[index] : []))
        }
    }
}

/// Tables as the MBTiles spec has them, with no column types (so SQLite keeps any value's own type), and a good tile.
let untypedMBTiles = [
    "CREATE TABLE metadata (name, value)",
    "CREATE TABLE tiles (zoom_level, tile_column, tile_row, tile_data)",
    "INSERT INTO metadata VALUES ('format', 'png')",
    "INSERT INTO tiles VALUES (1, 0, 0, x'89504E470D0A1A0A00')",
]

/// A recursive query that never ends, and never yields a row that would let a LIMIT stop it.
let endless = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n WHERE i < 0"

/// Runs `body`, and fails the test unless it is over within `seconds`: what used to spin for ever is
/// stopped in a bounded time now.
@discardableResult
func within<T>(seconds: Int, _ what: String, _ body: () async throws -> T) async rethrows -> T {
    let clock = ContinuousClock()
    let start = clock.now
    let result = try await body()
    #expect(clock.now - start < .seconds(seconds), "\(what) took \(clock.now - start)")
    return result
}

@Suite("a hostile map file", .timeLimit(.minutes(1)))
struct HostileBasemapTests {
    let scratch = TemporaryDirectory("hostile-basemap")
    var directory: String { scratch.path }

    @Test(
        "a value of another type than the spec's (a zoom level as text, a tile as a number, metadata as a number) is refused or left out, never a crash"
    )
    func wronglyTyped() async throws {
        let textZoom = directory + "/text-zoom.mbtiles"
        try makeDatabase(at: textZoom, untypedMBTiles + ["INSERT INTO tiles VALUES ('5', 0, 0, x'89504E470D0A1A0A00')"])
        await #expect(
            throws: BasemapError.notMBTiles(path: textZoom, reason: "its zoom levels are not all whole numbers")
        ) {
            try await Basemap(path: textZoom).open()
        }
        let realZoom = directory + "/real-zoom.mbtiles"
        try makeDatabase(at: realZoom, untypedMBTiles + ["INSERT INTO tiles VALUES (2.5, 0, 0, x'89504E470D0A1A0A00')"])
        await #expect(
            throws: BasemapError.notMBTiles(path: realZoom, reason: "its zoom levels are not all whole numbers")
        ) {
            try await Basemap(path: realZoom).open()
        }

        // Tiles that are a number or text are no image; metadata that is not text is left out.
        let odd = directory + "/odd.mbtiles"
        try makeDatabase(
            at: odd,
            untypedMBTiles + [
                "INSERT INTO tiles VALUES (1, 1, 0, 3.25)", "INSERT INTO tiles VALUES (1, 0, 1, 42)",
                "INSERT INTO tiles VALUES (1, 1, 1, '<html>')",
                "INSERT INTO metadata VALUES ('name', 42)", "INSERT INTO metadata VALUES (x'6E616D65', 'blob name')",
                "INSERT INTO metadata VALUES ('attribution', 1.5)", "INSERT INTO metadata VALUES (7, 'seven')",
            ])
        let basemap = Basemap(path: odd)
        #expect(try await basemap.open() == Basemap.Info(name: nil, attribution: nil, minZoom: 1, maxZoom: 1))
        await #expect(throws: BasemapError.unsupportedTile(path: odd, z: 1, x: 1, y: 1)) {
            try await basemap.tile(z: 1, x: 1, y: 1)
        }
        await #expect(throws: BasemapError.unsupportedTile(path: odd, z: 1, x: 0, y: 0)) {
            try await basemap.tile(z: 1, x: 0, y: 0)
        }
        await #expect(throws: BasemapError.unsupportedTile(path: odd, z: 1, x: 1, y: 0)) {
            try await basemap.tile(z: 1, x: 1, y: 0)
        }
        #expect(try await basemap.tile(z: 1, x: 0, y: 1)?.type == "image/png")
    }

    @Test(
        "no value larger than a tile is read into memory: a file holding one is refused, a tile that big is refused unread"
    )
    func nothingHuge() async throws {
        let huge = String(repeating: "x", count: Basemap.maximumTileBytes + 1)
        let longName = directory + "/long-name.mbtiles"
        try makeDatabase(
            at: longName, untypedMBTiles + ["INSERT INTO metadata VALUES ('name', ?)"],
            arguments: [[], [], [], [], [huge]])
        await #expect(
            throws: BasemapError.notMBTiles(path: longName, reason: "it holds a value larger than any map tile")
        ) {
            try await Basemap(path: longName).open()
        }
        let bigTiles = directory + "/big-tiles.mbtiles"
        try makeDatabase(
            at: bigTiles,
            untypedMBTiles + [
                "INSERT INTO tiles VALUES (1, 1, 0, zeroblob(100000000))", "INSERT INTO tiles VALUES (1, 1, 1, ?)",
            ],
            arguments: [[], [], [], [], [], [huge]])
        let basemap = Basemap(path: bigTiles)
        _ = try await basemap.open()
        await #expect(throws: BasemapError.tileTooLarge(path: bigTiles, z: 1, x: 1, y: 1, bytes: 100_000_000)) {
            try await basemap.tile(z: 1, x: 1, y: 1)
        }
        await #expect(throws: BasemapError.unsupportedTile(path: bigTiles, z: 1, x: 1, y: 0)) {
            try await basemap.tile(z: 1, x: 1, y: 0)
        }
    }

    @Test(
        "views, triggers, virtual tables and computed columns are refused before a tile is read, and the refusal says to export a plain MBTiles",
        arguments: [
            (
                "endless-tiles",
                [
                    "CREATE TABLE metadata (name TEXT, value TEXT)",
                    "CREATE VIEW tiles AS SELECT i AS zoom_level, i AS tile_column, i AS tile_row, x'00' AS tile_data FROM (\(endless))",
                ], "a view"
            ),
            (
                "endless-metadata",
                [
                    "CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)",
                    "INSERT INTO tiles VALUES (0, 0, 0, x'89504E470D0A1A0A')",
                    "CREATE VIEW metadata AS SELECT 'name' AS name, i AS value FROM (\(endless))",
                ], "a view"
            ),
            (
                "huge-tile",
                [
                    "CREATE VIEW tiles AS SELECT 0 AS zoom_level, 0 AS tile_column, 0 AS tile_row, zeroblob(100000000) AS tile_data"
                ], "a view"
            ),
            (
                "deduplicated",
                [
                    "CREATE TABLE map (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_id TEXT)",
                    "CREATE TABLE images (tile_id TEXT, tile_data BLOB)",
                    "INSERT INTO map VALUES (0, 0, 0, 'a')", "INSERT INTO images VALUES ('a', x'89504E470D0A1A0A')",
                    "CREATE VIEW tiles AS SELECT zoom_level, tile_column, tile_row, tile_data FROM map JOIN images USING (tile_id)",
                ], "a view"
            ),
            (
                "trigger", untypedMBTiles + ["CREATE TRIGGER stamp AFTER INSERT ON tiles BEGIN SELECT 1; END"],
                "a trigger"
            ),
            ("virtual", untypedMBTiles + ["CREATE VIRTUAL TABLE search USING fts5(words)"], "a virtual table"),
            (
                "computed",
                [
                    "CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB AS (zeroblob(100000000)))",
                    "INSERT INTO tiles (zoom_level, tile_column, tile_row) VALUES (0, 0, 0)",
                ], "a computed column"
            ),
        ])
    func programsAreRefused(name: String, schema: [String], holds: String) async throws {
        let path = directory + "/\(name).mbtiles"
        try makeDatabase(at: path, schema)
        let basemap = Basemap(path: path)
        await within(seconds: 10, name) {
            await #expect(throws: BasemapError.runsSQL(path: path, holds: holds)) { try await basemap.open() }
            await #expect(throws: BasemapError.runsSQL(path: path, holds: holds)) {
                try await basemap.tile(z: 0, x: 0, y: 0)
            }
        }
        #expect(
            BasemapError.runsSQL(path: path, holds: holds).description.contains("export it again as a plain MBTiles"))
    }

    @Test("every question to the file is bounded in time: a file too slow to answer is refused with what to do")
    func boundedInTime() async throws {
        // Tens of thousands of tiles and no index: every question reads them all.
        let path = directory + "/slow.mbtiles"
        try makeMBTiles(at: path, tiles: (0..<20_000).map { (z: 16, x: $0, row: $0, data: pngTile("\($0)")) })
        #expect(try await Basemap(path: path).open().maxZoom == 16)
        await within(seconds: 10, "a question stopped at once") {
            await #expect(throws: BasemapError.tooSlow(path: path, seconds: 0)) {
                try await Basemap(path: path, timeLimit: .zero).open()
            }
        }
        #expect(BasemapError.tooSlow(path: path, seconds: 5).description.contains("5 seconds"))
    }

    @Test(
        "a FIFO, a directory or a device at the basemap's path, or beside it where SQLite looks, is refused at once and said"
    )
    func notARegularFile() async throws {
        let fifo = directory + "/fifo.mbtiles"
        #expect(mkfifo(fifo, 0o600) == 0)
        let folder = directory + "/folder.mbtiles"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false)
        let journal = directory + "/journal.mbtiles"
        try makeMBTiles(at: journal, tiles: [(0, 0, 0, pngTile("x"))])
        #expect(mkfifo(journal + "-journal", 0o600) == 0)
        await within(seconds: 10, "refusing what is not a file") {
            await #expect(throws: BasemapError.notRegularFile(path: fifo)) { try await Basemap(path: fifo).open() }
            await #expect(throws: BasemapError.notRegularFile(path: folder)) { try await Basemap(path: folder).open() }
            await #expect(throws: BasemapError.notRegularFile(path: "/dev/null")) {
                try await Basemap(path: "/dev/null").open()
            }
            await #expect(throws: BasemapError.notRegularFile(path: journal + "-journal")) {
                try await Basemap(path: journal).open()
            }
        }
        #expect(BasemapError.notRegularFile(path: fifo).description.contains("[web] basemap"))

        // Configured, the cab view serves and says why there is no map.
        let fixture = try CabFixture()
        fixture.configuration.basemap = fifo
        try await within(seconds: 20, "the cab view with a FIFO for a basemap") {
            try await fixture.start()
            try await tearingDown({ await fixture.stop() }) {
                let session = try await fixture.get("/api/session")
                #expect(
                    (session.json?["basemapProblem"] as? String)?.contains("not a regular file") == true,
                    "\(session.text)")
                #expect(try await fixture.get("/basemap/0/0/0").status == 422)
            }
        }
    }

    @Test("what is said about a file quotes nothing from it: neither a damaged schema's text nor the metadata's format")
    func nothingQuoted() async throws {
        let damaged = directory + "/damaged.mbtiles"
        try makeDatabase(
            at: damaged,
            untypedMBTiles + [
                "PRAGMA writable_schema = ON",
                "INSERT INTO sqlite_master VALUES ('table', '<script>x</script>', '<script>x</script>', 0, 'CREATE TABLE \u{1B}[2J<script>(')",
                "PRAGMA writable_schema = OFF",
            ])
        let format = directory + "/format.mbtiles"
        try makeDatabase(
            at: format, untypedMBTiles + ["UPDATE metadata SET value = '\u{1B}[2J<b>pbf</b>' WHERE name = 'format'"])
        for path in [damaged, format] {
            do {
                _ = try await Basemap(path: path).open()
                Issue.record("\(path) was taken")
            } catch {
                let said = error.description
                #expect(!said.contains("<") && !said.contains("\u{1B}") && !said.contains("script"), "\(said)")
                #expect(said.contains(";"), "says what to do: \(said)")
            }
        }
    }

    @Test(
        "sent from Settings: a refused upload answers at once, is not kept, and leaves the map before it; a kept file with a bad tile serves on, then and after a restart"
    )
    func refusedAndNotKept() async throws {
        let good = directory + "/good.mbtiles"
        try makeMBTiles(at: good, tiles: [(0, 0, 0, pngTile("good"))])
        let looping = directory + "/looping.mbtiles"
        try makeDatabase(
            at: looping,
            [
                "CREATE VIEW tiles AS SELECT i AS zoom_level, i AS tile_column, i AS tile_row, x'00' AS tile_data FROM (\(endless))"
            ])
        // In WAL mode too, where SQLite makes files beside the one it reads.
        let loopingWAL = directory + "/looping-wal.mbtiles"
        try makeDatabase(
            at: loopingWAL,
            [
                "PRAGMA journal_mode = WAL",
                "CREATE VIEW tiles AS SELECT i AS zoom_level, i AS tile_column, i AS tile_row, x'00' AS tile_data FROM (\(endless))",
            ])
        let textZoom = directory + "/text-zoom.mbtiles"
        try makeDatabase(at: textZoom, untypedMBTiles + ["INSERT INTO tiles VALUES ('5', 0, 0, x'89504E470D0A1A0A00')"])
        let numberTile = directory + "/number-tile.mbtiles"
        try makeDatabase(at: numberTile, untypedMBTiles + ["INSERT INTO tiles VALUES (1, 1, 0, 3.25)"])

        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        try await tearingDown({ await fixture.stop(keepingDirectory: true) }) {
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            func upload(_ path: String) async throws -> HTTPReply {
                try await LoopbackHTTP.request(
                    "POST", port: fixture.port, path: "/api/basemap",
                    headers: session.headers.merging([
                        "X-CSRF-Token": session.csrfToken,
                        "Content-Type": "application/octet-stream",
                    ]) { $1 },
                    body: try Data(contentsOf: URL(fileURLWithPath: path)), timeout: 10)
            }
            #expect(try await upload(good).status == 200)
            for hostile in [looping, loopingWAL, textZoom] {
                let refused = try await within(seconds: 10, hostile) { try await upload(hostile) }
                #expect(refused.status == 422, "\(refused.text)")
                let kept = try FileManager.default.contentsOfDirectory(atPath: fixture.directory)
                #expect(!kept.contains { $0.hasPrefix(".basemap-upload") }, "\(kept)")
                #expect(try await fixture.get("/basemap/0/0/0").body == pngTile("good"), "the map before stays")
            }
            // Not a program and of the right types: taken, and its one bad tile refused when asked for.
            #expect(try await upload(numberTile).status == 200)
            #expect(try await fixture.get("/basemap/1/1/1").status == 422)
            #expect(try await fixture.get("/basemap/1/0/1").status == 200)
        }
        let restarted = try CabFixture(stateDirectory: fixture.directory)
        try await restarted.start()
        try await tearingDown({ await restarted.stop() }) {
            let session = try await restarted.get("/api/session")
            #expect(session.json?["map"] as? String == "offline")
            #expect(try await restarted.get("/basemap/1/1/1").status == 422)
            #expect(try await restarted.get("/basemap/1/0/1").status == 200)
        }
    }
}
