import Foundation
import GRDB
import TestSupport
import Testing

@testable import CabView

/// An MBTiles file made here: `tiles` by zoom, column and row counted from the bottom, as the spec has it.
func makeMBTiles(
    at path: String,
    metadata: [String: String] = ["name": "Farm", "format": "png", "attribution": "Farm map <b>2026</b>"],
    tiles: [(z: Int, x: Int, row: Int, data: Data)]
) throws {
    let database = try DatabaseQueue(path: path)
    try database.write { db in
        try db.execute(sql: "CREATE TABLE metadata (name TEXT, value TEXT)")
        try db.execute(
            sql: "CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)")
        for (name, value) in metadata {
            try db.execute(sql: "INSERT INTO metadata VALUES (?, ?)", arguments: [name, value])
        }
        for tile in tiles {
            try db.execute(
                sql: "INSERT INTO tiles VALUES (?, ?, ?, ?)", arguments: [tile.z, tile.x, tile.row, tile.data])
        }
    }
}

/// A PNG's signature and a marker, enough to be told apart and recognised as PNG.
func pngTile(_ marker: String) -> Data {
    Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(marker.utf8)
}

@Suite("the basemap kept on the box", .timeLimit(.minutes(1)))
struct BasemapTests {
    let scratchDirectory = TemporaryDirectory("basemap")
    var directory: String { scratchDirectory.path }

    @Test("tiles are asked for from the top and stored from the bottom; what is not there, or out of range, is nil")
    func rowsAreFlipped() async throws {
        let path = directory + "/farm.mbtiles"
        try makeMBTiles(
            at: path, tiles: [(2, 1, 3, pngTile("top")), (2, 1, 0, pngTile("bottom")), (4, 0, 0, pngTile("deep"))])
        let basemap = Basemap(path: path)
        let info = try await basemap.open()
        #expect(info == Basemap.Info(name: "Farm", attribution: "Farm map <b>2026</b>", minZoom: 2, maxZoom: 4))
        #expect(try await basemap.tile(z: 2, x: 1, y: 0)?.data == pngTile("top"))
        #expect(try await basemap.tile(z: 2, x: 1, y: 3)?.data == pngTile("bottom"))
        #expect(try await basemap.tile(z: 2, x: 1, y: 3)?.type == "image/png")
        #expect(try await basemap.tile(z: 2, x: 2, y: 0) == nil)
        for (z, x, y) in [(2, 4, 0), (2, 0, 4), (2, -1, 0), (25, 0, 0), (-1, 0, 0), (Int.max, 0, 0)] {
            #expect(try await basemap.tile(z: z, x: x, y: y) == nil, "\(z)/\(x)/\(y)")
        }
    }

    @Test("a file that is not a raster MBTiles is refused with a reason and what to do")
    func hostileFiles() async throws {
        let text = directory + "/notes.mbtiles"
        try Data("this is not a database, it is a shopping list\n".utf8 + Data(repeating: 0x41, count: 4096)).write(
            to: URL(fileURLWithPath: text))
        await #expect(throws: BasemapError.notMBTiles(path: text, reason: "it is not an SQLite file")) {
            try await Basemap(path: text).open()
        }

        let missing = directory + "/gone.mbtiles"
        await #expect(throws: BasemapError.missing(path: missing)) { try await Basemap(path: missing).open() }

        let vector = directory + "/vector.mbtiles"
        try makeMBTiles(at: vector, metadata: ["format": "pbf"], tiles: [(0, 0, 0, Data([0x1F, 0x8B, 0x08]))])
        await #expect(throws: BasemapError.unsupportedFormat(path: vector, format: "pbf")) {
            try await Basemap(path: vector).open()
        }

        let empty = directory + "/empty.mbtiles"
        try makeMBTiles(at: empty, tiles: [])
        await #expect(throws: BasemapError.notMBTiles(path: empty, reason: "it holds no tiles at zoom levels 0 to 24"))
        { try await Basemap(path: empty).open() }

        // A file whose metadata says png but whose tiles are HTML, or far too big.
        let lying = directory + "/lying.mbtiles"
        try makeMBTiles(
            at: lying,
            tiles: [(1, 0, 0, Data("<html>".utf8)), (1, 1, 0, pngTile("x") + Data(count: Basemap.maximumTileBytes))])
        let basemap = Basemap(path: lying)
        _ = try await basemap.open()
        await #expect(throws: BasemapError.unsupportedTile(path: lying, z: 1, x: 0, y: 1)) {
            try await basemap.tile(z: 1, x: 0, y: 1)
        }
        await #expect(
            throws: BasemapError.tileTooLarge(path: lying, z: 1, x: 1, y: 1, bytes: Int64(Basemap.maximumTileBytes + 9))
        ) {
            try await basemap.tile(z: 1, x: 1, y: 1)
        }
        for error in [
            BasemapError.notMBTiles(path: text, reason: "r"), .missing(path: missing),
            .unsupportedFormat(path: vector, format: "pbf"),
        ] {
            #expect(error.description.contains(";"), "says what to do: \(error)")
        }
    }

    @Test("served by the cab view: the page is told it has an offline map, and gets its tiles from the box")
    func servedByTheCabView() async throws {
        let path = directory + "/farm.mbtiles"
        try makeMBTiles(at: path, tiles: [(1, 0, 1, pngTile("north-west"))])
        let fixture = try CabFixture()
        fixture.configuration.tiles = "https://tile.example.org/{z}/{x}/{y}.png"
        fixture.configuration.basemap = path
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            let session = try await fixture.get("/api/session")
            #expect(session.json?["map"] as? String == "offline")
            #expect(session.json?["tiles"] as? String == "/basemap/{z}/{x}/{y}")
            #expect(session.json?["maxZoom"] as? Int == 1)
            #expect(session.json?["basemapProblem"] is NSNull)
            let tile = try await fixture.get("/basemap/1/0/0")
            #expect(
                tile.status == 200 && tile.body == pngTile("north-west") && tile.header("Content-Type") == "image/png")
            #expect(try await fixture.get("/basemap/1/1/1").status == 404)
            #expect(try await fixture.get("/basemap/one/0/0").status == 400)
        }
    }

    @Test("a basemap that cannot be read leaves the live map, says why, and the page still serves")
    func aBrokenBasemapIsSaid() async throws {
        let path = directory + "/broken.mbtiles"
        try Data("not sqlite".utf8 + Data(count: 2048)).write(to: URL(fileURLWithPath: path))
        let fixture = try CabFixture()
        fixture.configuration.tiles = nil
        fixture.configuration.basemap = path
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            let session = try await fixture.get("/api/session")
            #expect(session.json?["map"] as? String == "none")
            #expect((session.json?["basemapProblem"] as? String)?.contains("not an SQLite file") == true)
            #expect(try await fixture.get("/").status == 200)
            #expect(try await fixture.get("/basemap/0/0/0").status == 422)
        }
    }
}

@Suite("tiles through the box", .timeLimit(.minutes(1)))
struct CabTileCacheTests {
    @Test(
        "with [web] tiles the page gets its tiles from the box, which fetches each once and still serves it when the upstream is gone"
    )
    func throughTheBox() async throws {
        let upstream = try LoopbackTileServer { _ in
            .answer(status: 200, headers: ["Content-Type: image/png"], body: pngTile("upstream"))
        }
        let fixture = try CabFixture()
        fixture.configuration.tiles = upstream.template
        fixture.configuration.tileCacheMegabytes = 1
        try await fixture.start()
        try await tearingDown({
            await fixture.stop()
            upstream.stop()
        }) {
            let session = try await fixture.get("/api/session")
            #expect(session.json?["tiles"] as? String == "/tiles/{z}/{x}/{y}")
            #expect(session.json?["map"] as? String == "live")
            let first = try await fixture.get("/tiles/3/2/1")
            #expect(first.status == 200 && first.body == pngTile("upstream"), "\(first.text)")
            #expect(upstream.requests.map(\.path) == ["/3/2/1.png"])
            #expect(
                upstream.requests.first?.headers.first { $0.key.lowercased() == "user-agent" }?.value.hasPrefix(
                    "agrigps/") == true)
            upstream.stop()
            let again = try await fixture.get("/tiles/3/2/1")
            #expect(
                again.status == 200 && again.body == pngTile("upstream"), "served from the box with the upstream gone")
            let missing = try await fixture.get("/tiles/3/2/2")
            #expect(missing.status == 503 && missing.header("Retry-After") == "15", "\(missing.status) \(missing.text)")
            #expect(try await fixture.get("/tiles/3/9/0").status == 404)
            #expect(FileManager.default.fileExists(atPath: fixture.directory + "/tile-cache.sqlite"))
        }
    }
}

@Suite("a basemap sent from Settings", .timeLimit(.minutes(1)))
struct BasemapUploadTests {
    @Test(
        "an MBTiles file sent from Settings is checked, kept and drawn at once; a file that is not one changes nothing; a configured basemap is not replaced"
    )
    func uploaded() async throws {
        let temporary = TemporaryDirectory("basemap-upload")
        let scratch = temporary.path
        let good = scratch + "/farm.mbtiles"
        try makeMBTiles(at: good, tiles: [(2, 1, 3, pngTile("uploaded"))])
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        try await tearingDown({
            await fixture.stop()
            try? FileManager.default.removeItem(atPath: scratch)
        }) {
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            func upload(_ body: Data) async throws -> HTTPReply {
                try await LoopbackHTTP.request(
                    "POST", port: fixture.port, path: "/api/basemap",
                    headers: session.headers.merging([
                        "X-CSRF-Token": session.csrfToken,
                        "Content-Type": "application/octet-stream",
                    ]) { $1 },
                    body: body)
            }
            let refused = try await upload(Data("<html>not a map</html>".utf8) + Data(count: 4096))
            #expect(refused.status == 422 && refused.text.contains("not an SQLite file"), "\(refused.text)")
            #expect(try await fixture.get("/api/session").json?["map"] as? String == "none")

            let accepted = try await upload(try Data(contentsOf: URL(fileURLWithPath: good)))
            #expect(accepted.status == 200, "\(accepted.text)")
            #expect(accepted.json?["maxZoom"] as? Int == 2)
            #expect(try await fixture.get("/api/session").json?["map"] as? String == "offline")
            #expect(try await fixture.get("/basemap/2/1/0").body == pngTile("uploaded"))
            let kept = try FileManager.default.contentsOfDirectory(atPath: fixture.directory)
            #expect(kept.contains("basemap.mbtiles") && !kept.contains(".basemap-upload"), "\(kept)")
        }

        let configured = try CabFixture()
        configured.configuration.basemap = good
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        try makeMBTiles(at: good, tiles: [(1, 0, 0, pngTile("configured"))])
        try await configured.start()
        try await tearingDown({
            await configured.stop()
            try? FileManager.default.removeItem(atPath: scratch)
        }) {
            let session = try #require(CabFixture.session(from: try await configured.get("/api/session")))
            let reply = try await LoopbackHTTP.request(
                "POST", port: configured.port, path: "/api/basemap",
                headers: session.headers.merging(["X-CSRF-Token": session.csrfToken]) { $1 },
                body: Data(count: 10))
            #expect(reply.status == 409 && reply.text.contains("[web] basemap"), "\(reply.text)")
        }
    }
}

@Suite("tiles from the box, in a browser", .serialized, .timeLimit(.minutes(2)))
struct CabTileBrowserTests {
    /// A real 1×1 PNG, so that the browser decodes it and Leaflet marks the tile loaded.
    static let onePixel = Data(
        base64Encoded:
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")!

    /// Tiles Leaflet has drawn from the box.
    static func loadedTiles(_ browser: WebDriver) async throws -> Int {
        (try await browser.run("return document.querySelectorAll('img.leaflet-tile-loaded[src^=\"/tiles/\"]').length")
            as? Int) ?? 0
    }

    @Test("a browser draws the map from the box's tiles; after the upstream is gone, a new browser still draws them")
    func offlineAfterAVisit() async throws {
        let upstream = try LoopbackTileServer { _ in
            .answer(status: 200, headers: ["Content-Type: image/png"], body: Self.onePixel)
        }
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        fixture.configuration.tiles = upstream.template
        try await fixture.start()
        try await tearingDown({
            await fixture.stop()
            upstream.stop()
        }) {
            let first = try await WebDriver(width: 1280, height: 800)
            try await tearingDown({ await first.quit() }) {
                try await first.open("http://127.0.0.1:\(fixture.port)/")
                #expect(
                    try await first.wait(
                        timeout: 20, for: "return document.querySelectorAll('img.leaflet-tile-loaded').length > 4"))
            }
            let fetched = upstream.count
            #expect(fetched > 4)
            upstream.stop()
            let second = try await WebDriver(width: 1280, height: 800)
            try await tearingDown({ await second.quit() }) {
                try await second.open("http://127.0.0.1:\(fixture.port)/")
                #expect(
                    try await second.wait(
                        timeout: 20, for: "return document.querySelectorAll('img.leaflet-tile-loaded').length > 4"))
                #expect(try await Self.loadedTiles(second) > 4)
                #expect(try await second.text(".leaflet-control-attribution").contains("Live map"))
            }
            #expect(upstream.count == fetched, "nothing more reached the upstream")
        }
    }
}
