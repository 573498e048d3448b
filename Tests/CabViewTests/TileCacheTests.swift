import Clocks
import Foundation
import GRDB
import Logging
import Synchronization
import TestSupport
import Testing

@testable import CabView

/// A tile server on loopback, on plain blocking sockets and threads of its own (never Swift's
/// cooperative pool, which the cache under test awaits on): each request is recorded and answered as
/// the test says, one connection per request.
final class LoopbackTileServer: Sendable {
    struct Request: Sendable {
        var path: String
        var headers: [String: String]
    }

    enum Reply: Sendable {
        case answer(status: Int, headers: [String], body: Data, delay: Double = 0)
        /// A body of this many bytes with no length declared (the connection's end delimits it).
        case endless(bytes: Int)
        /// Reads the request and says nothing until the server stops.
        case silence
    }

    let port: Int
    /// Closed by the accept loop as it ends, never by `stop()`: a second close, or an accept after
    /// the close, would hit whatever socket took the number since (in one CI run, swift-nio's, which
    /// then crashed the test process on EBADF).
    private let listener: Int32
    private let closed = DispatchSemaphore(value: 0)
    private let state = Mutex<(requests: [Request], stopped: Bool)>(([], false))
    private let reply: @Sendable (Request) -> Reply

    init(reply: @escaping @Sendable (Request) -> Reply) throws {
        self.reply = reply
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard bound, listen(listener, 64) == 0 else {
            close(listener)
            throw CocoaError(.fileWriteUnknown)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    var requests: [Request] { state.withLock { $0.requests } }
    var count: Int { state.withLock { $0.requests.count } }

    /// Closes the port: the next connection is refused, as when the internet is gone.
    func stop() {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        // Wakes the accept loop, which closes the socket; the port refuses connections from then on.
        shutdown(listener, Int32(SHUT_RDWR))
        _ = closed.wait(timeout: .now() + 5)
    }

    var template: String { "http://127.0.0.1:\(port)/{z}/{x}/{y}.png" }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func acceptLoop() {
        defer {
            close(listener)
            closed.signal()
        }
        while !stopped {
            let connection = accept(listener, nil, nil)
            if connection < 0 {
                if errno == EINTR { continue }
                return
            }
            let thread = Thread { [self] in serve(connection) }
            thread.start()
        }
    }

    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var wait = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !received.contains(subsequence: [13, 10, 13, 10]) {
            let count = recv(connection, &buffer, buffer.count, 0)
            guard count > 0 else { return }
            received += buffer[0..<count]
        }
        let lines = String(decoding: received, as: UTF8.self).components(separatedBy: "\r\n")
        let path = lines[0].split(separator: " ").dropFirst().first.map(String.init) ?? ""
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        let request = Request(path: path, headers: headers)
        state.withLock { $0.requests.append(request) }
        switch reply(request) {
        case .answer(let status, let extra, let body, let delay):
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            let head =
                (["HTTP/1.1 \(status) Status", "Content-Length: \(body.count)", "Connection: close"] + extra).joined(
                    separator: "\r\n") + "\r\n\r\n"
            write(connection, Data(head.utf8) + body)
        case .endless(let bytes):
            write(connection, Data("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nConnection: close\r\n\r\n".utf8))
            var sent = 0
            let chunk = tilePNG(size: 65536, "endless")
            while sent < bytes, write(connection, chunk) { sent += chunk.count }
        case .silence:
            for _ in 0..<100 where !stopped { Thread.sleep(forTimeInterval: 0.05) }
        }
    }

    @discardableResult
    private func write(_ connection: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == data.count
    }
}

fileprivate extension Array where Element == UInt8 {
    func contains(subsequence: [UInt8]) -> Bool {
        guard count >= subsequence.count else { return false }
        return (0...(count - subsequence.count)).contains {
            self[$0..<($0 + subsequence.count)].elementsEqual(subsequence)
        }
    }
}

/// A PNG's signature, a marker and padding to `size` bytes.
func tilePNG(size: Int = 64, _ marker: String) -> Data {
    var data = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) + Data(marker.utf8)
    if data.count < size { data += Data(repeating: 0x2E, count: size - data.count) }
    return data
}

/// What the cache wrote to the journal, line by line.
final class TileTestJournal: Sendable {
    let lines = Mutex<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var logger: Logger {
        Logger(label: "test") { _ in Sink(journal: self) }
    }

    struct Sink: LogHandler {
        let journal: TileTestJournal
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            journal.lines.withLock { $0.append("\(event.level) \(event.message)") }
        }
    }
}

/// A clock the test moves by hand.
final class TileTestClock: Sendable {
    private let time = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var now: Date { time.withLock { $0 } }
    func advance(_ seconds: TimeInterval) { time.withLock { $0 += seconds } }
}

@Suite("the tile cache between the cab's tablet and the tile server", .timeLimit(.minutes(1)))
struct TileCacheTests {
    let scratch = TemporaryDirectory("tiles")
    var directory: String { scratch.path }
    let clock = TileTestClock()

    let journal = TileTestJournal()

    func cache(
        _ server: LoopbackTileServer, capacity: Int = 10_000_000,
        minimumFreshness: TimeInterval = TileCache.minimumFreshness,
        timeout: Double = 2, file: String = "tile-cache.sqlite"
    ) -> TileCache {
        let clock = clock
        return TileCache(
            upstream: server.template, path: directory + "/" + file, capacityBytes: capacity,
            userAgent: TileCache.userAgent(version: "0.1.0"), logger: journal.logger,
            minimumFreshness: minimumFreshness,
            timeout: timeout, now: { clock.now })
    }

    @Test(
        "a screen of tiles asked at once of a server that cannot be reached tries it once per slot, and holds the rest off"
    )
    func screenOffline() async throws {
        let server = try Self.tileServer()
        server.stop()
        let tiles = cache(server)
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for x in 0..<12 {
                group.addTask {
                    do {
                        _ = try await tiles.tile(z: 5, x: x, y: 10)
                        return false
                    } catch {
                        return true
                    }
                }
            }
            return await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(outcomes == 12, "every tile fails: none is kept and the server is gone")
        let figures = await tiles.statistics
        #expect(figures.upstreamRequests >= 1 && figures.upstreamRequests <= TileCache.concurrentFetches, "\(figures)")
        #expect(
            figures.unreachable == figures.upstreamRequests && figures.heldOff == 12 - figures.upstreamRequests,
            "\(figures)")
        #expect(
            !FileManager.default.fileExists(atPath: directory + "/tile-cache.sqlite"),
            "nothing to keep: no cache file is made")
    }

    /// Each tile's path as its marker, so a test can tell which tile it got.
    static func tileServer(
        size: Int = 64, headers: [String] = ["Content-Type: image/png", "Cache-Control: max-age=3600"]
    ) throws -> LoopbackTileServer {
        try LoopbackTileServer { .answer(status: 200, headers: headers, body: tilePNG(size: size, $0.path)) }
    }

    @Test(
        "the first ask fetches, the second is served from the file, and with the server gone the kept tile is still served"
    )
    func readThrough() async throws {
        let server = try Self.tileServer()
        let tiles = cache(server)
        let first = try #require(try await tiles.tile(z: 12, x: 2100, y: 1400))
        #expect(first.data == tilePNG("/12/2100/1400.png") && first.type == "image/png" && !first.fromCache)
        #expect(server.count == 1)
        #expect(server.requests[0].headers["user-agent"] == "agrigps/0.1.0 (+farm gateway; cab view tile cache)")
        let second = try #require(try await tiles.tile(z: 12, x: 2100, y: 1400))
        #expect(second.data == first.data && second.fromCache)
        #expect(server.count == 1)

        // Past the 7 days every tile is kept for, with no internet: the old tile, not nothing.
        server.stop()
        clock.advance(8 * 86_400)
        let offline = try #require(try await tiles.tile(z: 12, x: 2100, y: 1400))
        #expect(offline.data == first.data && offline.fromCache)
        // A tile never fetched cannot be had; right after a failure the server is not even asked.
        await #expect(throws: TileCacheError.upstreamHeldOff(seconds: 15)) {
            try await tiles.tile(z: 12, x: 2101, y: 1400)
        }
        let figures = await tiles.statistics
        #expect(
            figures.hits == 1 && figures.fetched == 1 && figures.staleServed == 1 && figures.unreachable == 1
                && figures.heldOff == 1)

        // A new cache on the same file (the service restarted) still has it, offline.
        let restarted = cache(server)
        #expect(try await restarted.tile(z: 12, x: 2100, y: 1400)?.data == first.data)
    }

    @Test("z, x and y outside the world are nil and never asked for")
    func outOfRange() async throws {
        let server = try Self.tileServer()
        let tiles = cache(server)
        for (z, x, y) in [
            (-1, 0, 0), (20, 0, 0), (Int.max, 0, 0), (Int.min, 0, 0), (2, 4, 0), (2, 0, 4), (2, -1, 0), (0, 0, 1),
            (19, 1 << 19, 0),
        ] {
            #expect(try await tiles.tile(z: z, x: x, y: y) == nil, "\(z)/\(x)/\(y)")
        }
        #expect(try await tiles.tile(z: 19, x: (1 << 19) - 1, y: 0) != nil)
        #expect(server.count == 1)
    }

    @Test(
        "the least recently used tiles go when the cap is passed; the file never holds more than the cap and one tile")
    func leastRecentlyUsedGoFirst() async throws {
        let server = try Self.tileServer(size: 1000)
        let tiles = cache(server, capacity: 3500)
        for x in 0..<3 {
            _ = try await tiles.tile(z: 5, x: x, y: 0)
            clock.advance(1)
        }
        _ = try await tiles.tile(z: 5, x: 0, y: 0)  // used again: now tile 1 is the oldest used
        clock.advance(1)
        _ = try await tiles.tile(z: 5, x: 3, y: 0)  // 4000 bytes: one must go
        #expect(await tiles.stored().tiles == 3)
        #expect(server.count == 4)
        #expect(try await tiles.tile(z: 5, x: 0, y: 0)?.fromCache == true)
        #expect(try await tiles.tile(z: 5, x: 2, y: 0)?.fromCache == true)
        #expect(server.count == 4)
        #expect(try await tiles.tile(z: 5, x: 1, y: 0)?.fromCache == false)
        #expect(server.count == 5)

        // A drive across many tiles: the file stays within the cap plus one tile throughout.
        for x in 4..<40 {
            clock.advance(1)
            _ = try await tiles.tile(z: 6, x: x, y: 7)
            let kept = await tiles.stored()
            #expect(kept.bytes <= 3500 + 1000)
            let inFile = try await DatabaseQueue(path: directory + "/tile-cache.sqlite").read { db in
                try Int.fetchOne(db, sql: "SELECT sum(bytes) FROM tile")
            }
            #expect(inFile == kept.bytes)
        }
        #expect(await tiles.statistics.evicted >= 36)
    }

    @Test(
        "an HTML page, a status other than 200, an oversized answer, a redirect loop and a silent server are refused and never kept"
    )
    func hostileServer() async throws {
        let server = try LoopbackTileServer { request in
            let big = 3 * 1_048_576
            switch request.path.split(separator: "/").first {
            case "1":
                return .answer(
                    status: 200, headers: ["Content-Type: text/html"],
                    body: Data("<html><body>Please log in to the hotspot</body></html>".utf8))
            case "2": return .answer(status: 500, headers: [], body: tilePNG("error"))
            case "3":
                return .answer(status: 200, headers: ["Content-Type: image/png"], body: tilePNG(size: big, "huge"))
            case "4": return .endless(bytes: big)
            case "5": return .answer(status: 302, headers: ["Location: \(request.path)"], body: Data())
            case "6": return .silence
            default:
                return .answer(
                    status: 200, headers: ["Content-Type: image/png", "Cache-Control: max-age=60"],
                    body: tilePNG(request.path))
            }
        }
        defer { server.stop() }
        let tiles = cache(server, timeout: 0.5)
        await #expect(throws: TileCacheError.notAnImage(contentType: "text/html")) {
            try await tiles.tile(z: 1, x: 0, y: 0)
        }
        await #expect(throws: TileCacheError.notAnImage(contentType: "text/html")) {
            try await tiles.tile(z: 1, x: 0, y: 0)
        }
        #expect(server.count == 2)  // not kept: asked again
        await #expect(throws: TileCacheError.upstreamStatus(500)) { try await tiles.tile(z: 2, x: 0, y: 0) }
        // A failing server is left alone for a while: the next miss is not even asked.
        await #expect(throws: TileCacheError.upstreamHeldOff(seconds: 15)) { try await tiles.tile(z: 3, x: 0, y: 0) }
        clock.advance(16)
        await #expect(throws: TileCacheError.tileTooLarge(limit: 2 * 1_048_576)) {
            try await tiles.tile(z: 3, x: 0, y: 0)
        }
        await #expect(throws: TileCacheError.tileTooLarge(limit: 2 * 1_048_576)) {
            try await tiles.tile(z: 4, x: 0, y: 0)
        }
        await #expect(throws: TileCacheError.tooManyRedirects) { try await tiles.tile(z: 5, x: 0, y: 0) }
        let started = ContinuousClock.now
        await #expect(throws: TileCacheError.upstreamTimedOut(seconds: 0.5)) { try await tiles.tile(z: 6, x: 0, y: 0) }
        #expect(ContinuousClock.now - started < .seconds(3))
        // A server that did not answer is left alone for a while, then asked again.
        clock.advance(1)
        await #expect(throws: TileCacheError.upstreamHeldOff(seconds: 15)) { try await tiles.tile(z: 7, x: 0, y: 0) }
        clock.advance(20)
        #expect(try await tiles.tile(z: 7, x: 0, y: 0)?.fromCache == false)
        #expect(await tiles.stored().tiles == 1)
        let figures = await tiles.statistics
        #expect(
            figures.notAnImage == 2 && figures.badStatus == 1 && figures.tooLarge == 2 && figures.redirectLoops == 1
                && figures.timedOut == 1)
        #expect(figures.heldOff == 2 && figures.fetched == 1)
        #expect(figures.upstreamRequests == 8)
        #expect(server.count == 11)  // the loop's first request and its 3 redirects followed
    }

    @Test("with a tile kept, a bad answer to its refresh serves the kept tile and keeps it as it was")
    func badRefreshKeepsTheTile() async throws {
        let broken = Mutex(false)
        let server = try LoopbackTileServer { request in
            broken.withLock { $0 }
                ? .answer(
                    status: 200, headers: ["Content-Type: text/html"], body: Data("<html>captive portal</html>".utf8))
                : .answer(status: 200, headers: ["Content-Type: image/png"], body: tilePNG(request.path))
        }
        defer { server.stop() }
        let tiles = cache(server, minimumFreshness: 0)
        let kept = try #require(try await tiles.tile(z: 9, x: 1, y: 2))
        broken.withLock { $0 = true }
        clock.advance(60)
        let again = try #require(try await tiles.tile(z: 9, x: 1, y: 2))
        #expect(again.data == kept.data && again.fromCache)
        #expect(server.count == 2)
        #expect(await tiles.statistics.notAnImage == 1)
        // A captive portal answering every tile is one line in the journal, not one per tile.
        clock.advance(60)
        _ = try await tiles.tile(z: 9, x: 1, y: 2)
        await #expect(throws: TileCacheError.notAnImage(contentType: "text/html")) {
            try await tiles.tile(z: 9, x: 3, y: 3)
        }
        #expect(journal.all.count == 1)
        #expect(
            journal.all.first?.hasPrefix(
                "warning tile 9/1/2 not kept: the tile server answered with something that is not a PNG") == true)
    }

    @Test(
        "Cache-Control max-age is honoured above the minimum, revalidated with ETag and If-Modified-Since, and no-store keeps nothing"
    )
    func freshness() async throws {
        let server = try LoopbackTileServer { request in
            if request.path.hasPrefix("/3/") {
                return .answer(
                    status: 200, headers: ["Content-Type: image/png", "Cache-Control: no-store"],
                    body: tilePNG(request.path))
            }
            if request.headers["if-none-match"] == "\"v1\"" {
                return .answer(status: 304, headers: ["Cache-Control: max-age=3600", "ETag: \"v1\""], body: Data())
            }
            return .answer(
                status: 200,
                headers: [
                    "Content-Type: image/png", "Cache-Control: public, max-age=3600", "ETag: \"v1\"",
                    "Last-Modified: Sun, 06 Nov 2022 08:49:37 GMT",
                ], body: tilePNG(request.path))
        }
        defer { server.stop() }
        // Without the 7-day minimum, the header's hour rules.
        let hourly = cache(server, minimumFreshness: 0)
        _ = try await hourly.tile(z: 4, x: 1, y: 1)
        clock.advance(1800)
        #expect(try await hourly.tile(z: 4, x: 1, y: 1)?.fromCache == true)
        #expect(server.count == 1)
        clock.advance(1900)
        let revalidated = try #require(try await hourly.tile(z: 4, x: 1, y: 1))
        #expect(revalidated.fromCache && revalidated.data == tilePNG("/4/1/1.png"))
        #expect(server.count == 2)
        #expect(server.requests[1].headers["if-none-match"] == "\"v1\"")
        #expect(server.requests[1].headers["if-modified-since"] == "Sun, 06 Nov 2022 08:49:37 GMT")
        #expect(await hourly.statistics.revalidated == 1)
        clock.advance(1800)  // fresh again for the 304's hour
        #expect(try await hourly.tile(z: 4, x: 1, y: 1)?.fromCache == true)
        #expect(server.count == 2)

        // With the default minimum, an hour's max-age still keeps the tile for 7 days.
        let weekly = cache(server, file: "weekly.sqlite")
        _ = try await weekly.tile(z: 4, x: 2, y: 2)
        clock.advance(6 * 86_400)
        #expect(try await weekly.tile(z: 4, x: 2, y: 2)?.fromCache == true)
        #expect(server.count == 3)
        clock.advance(2 * 86_400)
        _ = try await weekly.tile(z: 4, x: 2, y: 2)
        #expect(server.count == 4)

        // no-store: served, not kept.
        #expect(try await weekly.tile(z: 3, x: 1, y: 1)?.fromCache == false)
        #expect(try await weekly.tile(z: 3, x: 1, y: 1)?.fromCache == false)
        #expect(server.count == 6)
    }

    @Test("the policy reads max-age less Age, Expires less Date, and raises them to the minimum")
    func cachePolicy() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        #expect(HTTPDate.parse("Thu, 29 Feb 2024 23:59:60 GMT") == Date(timeIntervalSince1970: 1_709_251_200))
        for bad in [
            "", "0", "-1", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:49:37 GMT", "Sun, 06 Nov 99999999999999999999 08:49:37 GMT",
        ] {
            #expect(HTTPDate.parse(bad) == nil, "\(bad)")
        }
        #expect(HTTPDate.seconds("99999999999999999999") == 2_147_483_648)
        #expect(
            HTTPDate.format(784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT"
                && HTTPDate.format(0) == "Thu, 01 Jan 1970 00:00:00 GMT")
        for second in [951_782_400, 1_709_251_199, 4_102_444_800] {
            #expect(HTTPDate.parse(HTTPDate.format(second)) == Date(timeIntervalSince1970: Double(second)))
        }
        #expect(HTTPDate.seconds("-5") == nil && HTTPDate.seconds("1e9") == nil)
        #expect(
            CachePolicy(cacheControl: "max-age=600", expires: nil, date: nil, age: "100", now: now, minimum: 0)
                == .keep(until: now + 500))
        #expect(
            CachePolicy(cacheControl: "max-age=600", expires: nil, date: nil, age: nil, now: now, minimum: 7 * 86_400)
                == .keep(until: now + 7 * 86_400))
        #expect(
            CachePolicy(cacheControl: "max-age=99999999999", expires: nil, date: nil, age: nil, now: now, minimum: 0)
                == .keep(until: now + 365 * 86_400))
        #expect(
            CachePolicy(cacheControl: "public, No-Store", expires: nil, date: nil, age: nil, now: now, minimum: 86_400)
                == .doNotStore)
        #expect(
            CachePolicy(
                cacheControl: nil, expires: "Sun, 06 Nov 1994 10:49:37 GMT", date: "Sun, 06 Nov 1994 08:49:37 GMT",
                age: nil, now: now, minimum: 0)
                == .keep(until: now + 7200))
        #expect(
            CachePolicy(cacheControl: nil, expires: "0", date: nil, age: nil, now: now, minimum: 0) == .keep(until: now)
        )
        #expect(
            CachePolicy(cacheControl: nil, expires: nil, date: nil, age: nil, now: now, minimum: 86_400)
                == .keep(until: now + 86_400))
        #expect(throws: TileCacheError.invalidUpstream("ftp://example.org/{z}/{x}/{y}.png")) {
            try TileCache.check(upstream: "ftp://example.org/{z}/{x}/{y}.png")
        }
        #expect(throws: TileCacheError.invalidUpstream("https://example.org/{z}/{x}.png")) {
            try TileCache.check(upstream: "https://example.org/{z}/{x}.png")
        }
        #expect(throws: TileCacheError.invalidUpstream("https:///{z}/{x}/{y}")) {
            try TileCache.check(upstream: "https:///{z}/{x}/{y}")
        }
        #expect(throws: Never.self) { try TileCache.check(upstream: "https://tile.openstreetmap.org/{z}/{x}/{y}.png") }
    }

    @Test("many asks for one tile at once make one request")
    func concurrentAsksShareOneFetch() async throws {
        let server = try LoopbackTileServer {
            .answer(status: 200, headers: ["Content-Type: image/png"], body: tilePNG($0.path), delay: 0.3)
        }
        defer { server.stop() }
        let tiles = cache(server)
        let answers = try await withThrowingTaskGroup(of: Data?.self) { group in
            for _ in 0..<20 { group.addTask { try await tiles.tile(z: 10, x: 500, y: 300)?.data } }
            return try await group.reduce(into: [Data?]()) { $0.append($1) }
        }
        #expect(answers.count == 20 && answers.allSatisfy { $0 == tilePNG("/10/500/300.png") })
        #expect(server.count == 1)
    }

    @Test("a damaged cache file is moved aside and a new one started; another program's database is left alone")
    func damagedFile() async throws {
        let server = try Self.tileServer()
        defer { server.stop() }
        let path = directory + "/tile-cache.sqlite"
        let garbage = Data("not a database at all\n".utf8) + Data(repeating: 0x41, count: 8192)
        try garbage.write(to: URL(fileURLWithPath: path))
        let tiles = cache(server)
        #expect(try await tiles.tile(z: 3, x: 1, y: 1)?.fromCache == false)
        #expect(try await tiles.tile(z: 3, x: 1, y: 1)?.fromCache == true)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path + ".corrupt")) == garbage)
        #expect(await tiles.statistics.filesMovedAside == 1)
        #expect(
            journal.all == [
                "error the tile cache \(path) is damaged (file is not a database); moved it to \(path).corrupt and started a new one"
            ])

        let other = directory + "/spool.sqlite"
        try await DatabaseQueue(path: other).write { db in
            try db.execute(sql: "CREATE TABLE sample (id INTEGER PRIMARY KEY)")
        }
        let misplaced = cache(server, file: "spool.sqlite")
        #expect(try await misplaced.tile(z: 3, x: 1, y: 1)?.fromCache == false)  // served, not kept
        #expect(try await misplaced.tile(z: 3, x: 1, y: 1)?.fromCache == false)
        let tables = try await DatabaseQueue(path: other).read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        #expect(tables == ["sample"])
        #expect(!FileManager.default.fileExists(atPath: other + ".corrupt"))
        #expect(
            journal.all.last
                == "error the tile cache \(other) cannot be used (it is another program's database); remove it or name another file; tiles are fetched and not kept"
        )
    }

    @Test("figures: a hit from the file, and a miss through the loopback server")
    func figures() async throws {
        let server = try Self.tileServer(size: 20_000)
        defer { server.stop() }
        let tiles = cache(server)
        var misses: [Duration] = []
        for x in 0..<20 {
            let started = ContinuousClock.now
            _ = try await tiles.tile(z: 14, x: x, y: 5000)
            misses.append(ContinuousClock.now - started)
        }
        var hits: [Duration] = []
        for i in 0..<1000 {
            let started = ContinuousClock.now
            _ = try await tiles.tile(z: 14, x: i % 20, y: 5000)
            hits.append(ContinuousClock.now - started)
        }
        hits.sort()
        misses.sort()
        print(
            "tile cache: hit p50 \(hits[500]) p99 \(hits[990]) over 1000 (20 KB tiles); miss p50 \(misses[10]) max \(misses[19]) over 20 (loopback)"
        )
        #expect(server.count == 20)
        #expect(hits[990] < .milliseconds(50))
    }
}
