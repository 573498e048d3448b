// The farm's fields: which field a sample lies in, 1,000 fields drawn in the cab view by a real
// Chromium, and a basemap tile served from the box. Each figure beside a baseline of the same run.
import Clocks
import Fields
import Foundation
import GPSDReplay
import GRDB
import StateDirectory
import TestSupport

/// The three figures of `--only fields`, on one grid of 1,000 partfields.
func fieldBenchmarks(agrigps: String, work: String) async throws {
    let grid = try await FieldGrid.make(count: 1000, scratch: work + "/farmfacts.sqlite")
    fieldLookup(grid, lookups: 200_000)
    try await fieldsInChromium(grid, agrigps: agrigps, work: work)
    try await basemapTiles(agrigps: agrigps, work: work, around: grid, requests: 1000)
}

/// Real boundaries copied onto a grid: the FarmFacts export's 9 partfields (irregular, one with a
/// hole), each copy shifted into a cell of its own so that none overlaps another.
struct FieldGrid {
    static let farmFacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Fixtures/isoxml/farmfacts_2021-04-09T15_33_26_taskdata.zip").path

    var fields: [Field]
    var south: Double, west: Double, north: Double, east: Double

    static func make(count: Int, scratch: String) async throws -> FieldGrid {
        try? FileManager.default.removeItem(atPath: scratch)
        let originals = try await FieldStore(path: scratch).importTaskData(at: farmFacts).imported
        let boxes = originals.map(box)
        guard !originals.isEmpty, let south = boxes.map(\.south).min(), let west = boxes.map(\.west).min(),
            let tallest = boxes.map({ $0.north - $0.south }).max(), let widest = boxes.map({ $0.east - $0.west }).max()
        else {
            throw FieldBenchError("\(farmFacts) gave no field with a boundary; restore the fixture from git")
        }
        // A gap of a quarter of the largest field, wider for the smaller ones: most of the area lies
        // between fields, as on a farm's map, and most lookups are answered by bounding boxes alone.
        let (cellHeight, cellWidth) = (tallest * 1.25, widest * 1.25)
        let side = Int(Double(count).squareRoot().rounded(.up))
        var fields: [Field] = []
        for number in 0..<count {
            let original = originals[number % originals.count], own = boxes[number % originals.count]
            let (row, column) = number.quotientAndRemainder(dividingBy: side)
            let moved = shifted(
                original, latitude: south + Double(row) * cellHeight - own.south,
                longitude: west + Double(column) * cellWidth - own.west)
            guard var copy = moved else { continue }
            copy.partfieldID = "PFD\(number + 1)"
            copy.name = "\(original.name) #\(number + 1)"
            fields.append(copy)
        }
        precondition(fields.count == count, "only \(fields.count) of \(count) fields survived the shift")
        return FieldGrid(
            fields: fields, south: south, west: west,
            north: south + Double((count + side - 1) / side) * cellHeight, east: west + Double(side) * cellWidth)
    }

    static func box(_ field: Field) -> (south: Double, west: Double, north: Double, east: Double) {
        let points = field.boundaries.flatMap(\.points)
        return (
            points.map(\.latitude).min() ?? 0, points.map(\.longitude).min() ?? 0,
            points.map(\.latitude).max() ?? 0, points.map(\.longitude).max() ?? 0
        )
    }

    /// The field moved north and east by the degrees given; nil if a ring lost points on the way
    /// (rounding cannot merge points metres apart, but Ring is asked rather than assumed).
    static func shifted(_ field: Field, latitude: Double, longitude: Double) -> Field? {
        func move(_ points: [GeoPoint]) -> [GeoPoint] {
            points.map { GeoPoint(latitude: $0.latitude + latitude, longitude: $0.longitude + longitude) }
        }
        let boundaries = field.boundaries.compactMap { Ring(closing: move($0.points)) }
        let holes = field.holes.compactMap { Ring(closing: move($0.points)) }
        guard boundaries.count == field.boundaries.count, holes.count == field.holes.count else { return nil }
        var copy = field
        (copy.boundaries, copy.holes) = (boundaries, holes)
        copy.guidanceLines = field.guidanceLines.map { GuidanceLine(name: $0.name, points: move($0.points)) }
        return copy
    }

    /// Positions spread evenly over the grid's area, the same ones every run.
    func positions(_ count: Int, seed: UInt64 = 42) -> [(latitude: Double, longitude: Double)] {
        var random = SplitMix64(seed: seed)
        func unit() -> Double { Double(random.next() >> 11) / Double(UInt64(1) << 53) }
        return (0..<count).map { _ in (south + unit() * (north - south), west + unit() * (east - west)) }
    }
}

/// The baseline of the lookup: every field's rings tested in turn, no bounding boxes.
struct BruteForceFields {
    private let rings: [(boundaries: [[(x: Double, y: Double)]], holes: [[(x: Double, y: Double)]])]

    init(_ fields: [Field]) {
        func plain(_ ring: Ring) -> [(x: Double, y: Double)] { ring.points.map { (x: $0.longitude, y: $0.latitude) } }
        rings = fields.map { ($0.boundaries.map(plain), $0.holes.map(plain)) }
    }

    func field(containing latitude: Double, longitude: Double) -> Int? {
        rings.firstIndex { field in
            field.boundaries.contains { Self.crosses(longitude, latitude, $0) }
                && !field.holes.contains { Self.crosses(longitude, latitude, $0) }
        }
    }

    /// Crossing number, as the index does it: a ray eastwards crosses the ring an odd number of times.
    static func crosses(_ x: Double, _ y: Double, _ ring: [(x: Double, y: Double)]) -> Bool {
        guard var previous = ring.last else { return false }
        var inside = false
        for current in ring {
            if (current.y > y) != (previous.y > y),
                x < previous.x + (y - previous.y) * (current.x - previous.x) / (current.y - previous.y)
            {
                inside.toggle()
            }
            previous = current
        }
        return inside
    }
}

/// Why the fields benchmark could not measure, with where to look.
struct FieldBenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted.count % 2 == 1
        ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// 1. The daemon asks which field each sample is in, once a second: FieldIndex against ray casting
/// every field. The brute force takes every 200th position (it would take minutes for them all);
/// both answers are compared on those.
func fieldLookup(_ grid: FieldGrid, lookups: Int) {
    let index = FieldIndex(grid.fields.enumerated().map { (value: $0.offset, field: $0.element) })
    let brute = BruteForceFields(grid.fields)
    let positions = grid.positions(lookups)
    let sampled = stride(from: 0, to: positions.count, by: 200).map { positions[$0] }
    var inside = 0, bruteInside = 0
    var indexRounds: [Double] = [], bruteRounds: [Double] = []
    for _ in 0..<3 {
        (inside, bruteInside) = (0, 0)
        indexRounds.append(
            timed {
                for position in positions
                where index.field(containing: position.latitude, longitude: position.longitude) != nil { inside += 1 }
            }
                / Double(positions.count))
        bruteRounds.append(
            timed {
                for position in sampled
                where brute.field(containing: position.latitude, longitude: position.longitude) != nil {
                    bruteInside += 1
                }
            }
                / Double(sampled.count))
    }
    let disagreements = sampled.filter {
        index.field(containing: $0.latitude, longitude: $0.longitude)
            != brute.field(containing: $0.latitude, longitude: $0.longitude)
    }.count
    precondition(
        disagreements == 0, "FieldIndex and ray casting disagree on \(disagreements) of \(sampled.count) positions")
    let points = grid.fields.reduce(0) { $0 + $1.pointCount }
    let perLookup = median(indexRounds), perBrute = median(bruteRounds)
    print(
        String(
            format:
                "current-field lookup, %d partfields (%d boundary points), %d lookups spread over %.0f × %.0f km, %.0f %% inside a field:",
            grid.fields.count, points, positions.count, (grid.north - grid.south) * 111.2,
            (grid.east - grid.west) * 111.2 * cos((grid.north + grid.south) / 2 * .pi / 180),
            Double(inside) * 100 / Double(positions.count)))
    print(
        String(
            format:
                "   FieldIndex %.1f µs per lookup (median of 3 rounds)   baseline ray casting every field %.1f µs (%d lookups)   ratio %.3f;"
                + " %.4f %% of the 1 s between samples",
            perLookup * 1e6, perBrute * 1e6, sampled.count, perLookup / perBrute, perLookup * 100))
}

func timed(_ work: () -> Void) -> Double {
    let start = uptime()
    work()
    return uptime() - start
}

/// `agrigps web` on a state directory of its own, as a measured process, once it answers.
func startCabView(agrigps: String, state: String, config: String, output: String) async throws -> (
    process: MeasuredProcess, port: Int
) {
    let port = Int(try ReplayGPSD.freeLoopbackPort())
    let process = try MeasuredProcess(
        agrigps, ["web", "--config", config, "--state-dir", state, "--listen", "127.0.0.1:\(port)"], output: output)
    let answering = await waitUntil(timeout: 30) {
        (try? await LoopbackHTTP.request("GET", port: port, path: "/api/session", timeout: 2))?.status == 200
    }
    guard answering else {
        _ = process.stop()
        throw FieldBenchError("agrigps web did not answer within 30 s; see \(output).err")
    }
    return (process, port)
}

/// A state directory the page can open: a heartbeat (the gateway "running"), and the fields if any.
func fieldsState(_ directory: String, fields: [Field]) async throws {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    try Heartbeat(pid: getpid(), startedAt: Date().addingTimeInterval(-60), onboarded: false).write(
        to: directory + "/heartbeat.json")
    if !fields.isEmpty {
        try await FieldStore(path: directory + "/fields.sqlite").replace(
            source: "file: bench-grid.zip", with: fields, importedAt: Date())
    }
}

/// One GET's time in seconds, checked to be a 200 of the expected size.
func timedGET(port: Int, path: String, bytes expected: Int? = nil) async throws -> (seconds: Double, bytes: Int) {
    let start = uptime()
    let reply = try await LoopbackHTTP.request("GET", port: port, path: path)
    let elapsed = uptime() - start
    guard reply.status == 200, expected.map({ $0 == reply.body.count }) ?? true else {
        throw FieldBenchError("GET \(path): HTTP \(reply.status), \(reply.body.count) bytes: \(reply.text.prefix(200))")
    }
    return (elapsed, reply.body.count)
}

/// 2. From navigation to every field drawn and named in a headless Chromium at 1280×800, against
/// the same page with no fields (its state drawn), loads alternating; and GET /api/fields itself.
func fieldsInChromium(_ grid: FieldGrid, agrigps: String, work: String) async throws {
    guard WebDriver.isInstalled else {
        print("fields in Chromium: skipped, chromium and chromium-driver are not installed (script/bootstrap)")
        return
    }
    let config = work + "/fields.conf"
    // No map tiles: the figure is the fields, and a tile server would make it the internet's.
    try "[web]\ntiles = \"none\"\n".write(toFile: config, atomically: true, encoding: .utf8)
    try await fieldsState(work + "/fields-state", fields: grid.fields)
    try await fieldsState(work + "/fields-empty-state", fields: [])
    let full = try await startCabView(
        agrigps: agrigps, state: work + "/fields-state", config: config, output: work + "/fields-web.out")
    let empty = try await startCabView(
        agrigps: agrigps, state: work + "/fields-empty-state", config: config, output: work + "/fields-empty-web.out")
    var loads: [Double] = [], baselines: [Double] = []
    var fieldsGET: [Double] = [], emptyGET: [Double] = []
    var sizes = (full: 0, empty: 0)
    do {
        for _ in 0..<10 {
            let answer = try await timedGET(port: full.port, path: "/api/fields"),
                none = try await timedGET(port: empty.port, path: "/api/fields")
            fieldsGET.append(answer.seconds)
            emptyGET.append(none.seconds)
            sizes = (answer.bytes, none.bytes)
        }
        let browser = try await WebDriver(width: 1280, height: 800)
        do {
            // One load each first: the figures are of a page whose Leaflet and script the browser has cached, as in the cab.
            _ = try await drawnAfterNavigation(browser, port: full.port, fields: grid.fields.count)
            _ = try await drawnAfterNavigation(browser, port: empty.port, fields: 0)
            for _ in 0..<3 {
                loads.append(try await drawnAfterNavigation(browser, port: full.port, fields: grid.fields.count))
                baselines.append(try await drawnAfterNavigation(browser, port: empty.port, fields: 0))
            }
        } catch {
            browser.close()
            throw error
        }
        await browser.quit()
    } catch {
        _ = full.process.stop()
        _ = empty.process.stop()
        throw error
    }
    let cost = full.process.stop(), emptyCost = empty.process.stop()
    print(
        String(
            format:
                "%d partfields in headless Chromium at 1280×800, navigation to all drawn and named: median %.2f s of 3 (%@)"
                + "   baseline the same page with no fields, to its state drawn: %.2f s   difference %.2f s",
            grid.fields.count, median(loads), loads.map { String(format: "%.2f", $0) }.joined(separator: ", "),
            median(baselines), median(loads) - median(baselines)))
    print(
        String(
            format: "   GET /api/fields: %.2f MB, median %.1f ms of 10   baseline with no fields: %d bytes, %.1f ms;"
                + " agrigps web peak RSS %.1f MiB (%.1f MiB with no fields)",
            Double(sizes.full) / 1e6, median(fieldsGET) * 1000, sizes.empty, median(emptyGET) * 1000, cost.peakMiB,
            emptyCost.peakMiB))
}

/// Seconds from the navigation's start (the page's own clock) to the first animation frame after
/// all `fields` are in the map with their names, or with none expected, after its state is drawn.
/// The page is looked at every 10 ms or so, each look a round trip through chromedriver; a blank
/// page before each load makes every load a whole one.
func drawnAfterNavigation(_ browser: WebDriver, port: Int, fields: Int) async throws -> Double {
    try await browser.open("about:blank")
    try await browser.open("http://127.0.0.1:\(port)/")
    let look = """
        const wanted = arguments[0];
        const done = wanted > 0
          ? !!(window.cab && cab.fieldsLayer && cab.fieldsLayer.getLayers().length === wanted
               && document.querySelectorAll('.field-name').length === wanted)
          : !!(window.cab && cab.state);
        if (!done) return null;
        return new Promise(resolve => requestAnimationFrame(() => resolve(performance.now())));
        """
    let deadline = uptime() + 120
    while uptime() < deadline {
        // JSON gives a whole number of milliseconds as an integer: NSNumber takes either.
        if let milliseconds = (try await browser.run(look, [fields]) as? NSNumber)?.doubleValue {
            // The page's clock, checked like any number from outside: a load takes between nothing and the deadline.
            guard milliseconds.isFinite, (0...120_000).contains(milliseconds) else {
                throw FieldBenchError(
                    "the page's clock said \(milliseconds) ms since its navigation; run again, and if it recurs, check Chromium's version"
                )
            }
            return milliseconds / 1000
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    throw FieldBenchError(
        "the page did not draw \(fields) fields within 120 s; open it by hand and look at the browser's console")
}

/// A raster MBTiles file as QGIS or gdal make one: tiles at zoom 15 over the fields' corner, a
/// unique index on their address, each tile `tileBytes` of PNG signature and noise (a tile of a
/// photo does not compress). The basemap tests make theirs the same way; none is kept in Fixtures.
func makeBasemap(at path: String, around grid: FieldGrid, side: Int, tileBytes: Int) throws -> [(
    z: Int, x: Int, y: Int
)] {
    try? FileManager.default.removeItem(atPath: path)
    let zoom = 15, scale = Double(1 << zoom)
    let latitude = grid.south * .pi / 180
    let firstX = Int((grid.west + 180) / 360 * scale), firstY = Int((1 - asinh(tan(latitude)) / .pi) / 2 * scale) - side
    var random = SplitMix64(seed: 7)
    var tiles: [(z: Int, x: Int, y: Int)] = []
    let database = try DatabaseQueue(path: path)
    try database.write { db in
        try db.execute(sql: "CREATE TABLE metadata (name TEXT, value TEXT)")
        try db.execute(
            sql: "CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)")
        try db.execute(sql: "CREATE UNIQUE INDEX tile_index ON tiles (zoom_level, tile_column, tile_row)")
        for (name, value) in ["name": "Bench farm", "format": "png", "minzoom": "\(zoom)", "maxzoom": "\(zoom)"] {
            try db.execute(sql: "INSERT INTO metadata VALUES (?, ?)", arguments: [name, value])
        }
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        for x in firstX..<firstX + side {
            for y in firstY..<firstY + side {
                let noise = (0..<(tileBytes - signature.count)).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                // MBTiles counts rows from the bottom; the page asks from the top.
                try db.execute(
                    sql: "INSERT INTO tiles VALUES (?, ?, ?, ?)",
                    arguments: [zoom, x, (1 << zoom) - 1 - y, Data(signature + noise)])
                tiles.append((zoom, x, y))
            }
        }
    }
    try database.close()
    return tiles
}

/// One kept-alive HTTP/1.1 connection to a loopback port, as a browser holds one to the box:
/// requests one after another, each answer read to its Content-Length. Blocking: used on a thread
/// of its own, never on Swift's cooperative pool.
final class KeptAliveConnection {
    private let descriptor: Int32
    private let port: Int
    private var buffer = [UInt8](repeating: 0, count: 65536)
    private var pending: [UInt8] = []

    init(port: Int) throws {
        self.port = port
        do {
            descriptor = try LoopbackHTTP.connectedSocket(port: port)
        } catch {
            throw FieldBenchError("\(error); is agrigps web still running?")
        }
        // A read that hangs means the server stopped answering: give up after 10 s rather than wait for ever.
        var wait = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(descriptor) }

    /// GET `path`; its status and body size. A body of unknown length (no Content-Length) is refused.
    func get(_ path: String) throws -> (status: Int, bytes: Int) {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n".utf8)
        guard send(descriptor, request, request.count, Int32(MSG_NOSIGNAL)) == request.count else {
            throw FieldBenchError("send to 127.0.0.1:\(port): errno \(errno); the server closed the connection")
        }
        let end: [UInt8] = Array("\r\n\r\n".utf8)
        while pending.firstRange(of: end) == nil { try receive(path) }
        guard let split = pending.firstRange(of: end) else {
            throw FieldBenchError("GET \(path): no end of the answer's head")
        }
        let head = String(decoding: pending[..<split.lowerBound], as: UTF8.self).lowercased().components(
            separatedBy: "\r\n")
        let status = head.first?.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let lengthLine = head.first { $0.hasPrefix("content-length:") }
        // The server's own answer, still checked: a length beyond 16 MiB is not a tile's.
        guard
            let length = lengthLine.flatMap({
                Int($0.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
            }),
            (0...16 * 1_048_576).contains(length)
        else {
            throw FieldBenchError(
                "GET \(path): HTTP \(status) without a usable Content-Length; the benchmark reads only answers of known length"
            )
        }
        let whole = split.upperBound + length
        while pending.count < whole { try receive(path) }
        pending.removeFirst(whole)
        return (status, length)
    }

    private func receive(_ path: String) throws {
        let count = recv(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else {
            throw FieldBenchError(
                "GET \(path): the connection ended (recv \(count), errno \(errno)) before the whole answer")
        }
        pending.append(contentsOf: buffer[0..<count])
    }
}

/// 3. Sequential GETs of tiles from `[web] basemap` on one kept-alive connection, as the page's
/// browser makes them, against GETs of the page's stylesheet on the same connection (served from
/// memory: the floor of one HTTP round trip through the server's guard), the two alternating.
func basemapTiles(agrigps: String, work: String, around grid: FieldGrid, requests: Int) async throws {
    let tileBytes = 16 * 1024
    let side = Int(Double(requests).squareRoot().rounded(.up))
    let tiles = try makeBasemap(at: work + "/bench.mbtiles", around: grid, side: side, tileBytes: tileBytes)
    let config = work + "/basemap.conf"
    try "[web]\ntiles = \"none\"\nbasemap = \"\(work)/bench.mbtiles\"\n".write(
        toFile: config, atomically: true, encoding: .utf8)
    try await fieldsState(work + "/basemap-state", fields: [])
    let web = try await startCabView(
        agrigps: agrigps, state: work + "/basemap-state", config: config, output: work + "/basemap-web.out")
    let paths = tiles.prefix(requests).map { "/basemap/\($0.z)/\($0.x)/\($0.y)" }
    let measured: (tiles: [Double], floor: [Double], floorBytes: Int)
    do {
        measured = try await onThreadOfItsOwn {
            try alternatingGETs(port: web.port, tiles: paths, tileBytes: tileBytes, floor: "/app.css")
        }
    } catch {
        _ = web.process.stop()
        throw error
    }
    let (tileTimes, floorTimes, floorBytes) = measured
    let cost = web.process.stop()
    print(
        String(
            format:
                "a basemap tile from the box (%d KiB, MBTiles at zoom 15), %d sequential GETs over loopback on one kept-alive connection:"
                + " p50 %.2f ms, p99 %.2f ms   baseline GET /app.css (%d bytes from memory) on the same server: p50 %.2f ms, p99 %.2f ms   ratio p50 %.2f",
            tileBytes / 1024, tileTimes.count, percentile(tileTimes, 0.5) * 1000, percentile(tileTimes, 0.99) * 1000,
            floorBytes, percentile(floorTimes, 0.5) * 1000, percentile(floorTimes, 0.99) * 1000,
            percentile(tileTimes, 0.5) / percentile(floorTimes, 0.5)))
    print(
        String(
            format: "   agrigps web: CPU %.2f s for the %d GETs, peak RSS %.1f MiB", cost.cpu,
            tileTimes.count + floorTimes.count, cost.peakMiB))
}

/// Each tile, then the floor, on one connection; the seconds of every GET, and the floor's size.
func alternatingGETs(port: Int, tiles: [String], tileBytes: Int, floor: String) throws -> (
    tiles: [Double], floor: [Double], floorBytes: Int
) {
    let connection = try KeptAliveConnection(port: port)
    var tileTimes: [Double] = [], floorTimes: [Double] = []
    var floorBytes = 0
    for path in tiles {
        var start = uptime()
        let tile = try connection.get(path)
        tileTimes.append(uptime() - start)
        guard tile.status == 200, tile.bytes == tileBytes else {
            throw FieldBenchError("GET \(path): HTTP \(tile.status), \(tile.bytes) bytes; see the server's journal")
        }
        start = uptime()
        let answer = try connection.get(floor)
        floorTimes.append(uptime() - start)
        guard answer.status == 200 else {
            throw FieldBenchError("GET \(floor): HTTP \(answer.status); see the server's journal")
        }
        floorBytes = answer.bytes
    }
    return (tileTimes, floorTimes, floorBytes)
}

/// Blocking work on a thread of its own, away from Swift's cooperative pool.
func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
