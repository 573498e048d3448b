import AgrirouterLink
import AgrirouterWire
import Bounds
import Fields
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import JSONText
import Logging
import NIOCore
import ServiceLifecycle
import Spool
import StateDirectory
import StateView
import Synchronization
import Track

/// What `agrigps web` serves, and where.
public struct CabConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// A tile URL template ({z}/{x}/{y}), or nil for none: a plain background that needs no internet.
    public var tiles: String? = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
    /// An MBTiles file of raster tiles kept on the box, drawn instead of `tiles`: the map with no internet.
    public var basemap: String?
    /// The box fetches `tiles` for the page and keeps up to this many megabytes of them
    /// (STATE-DIR/tile-cache.sqlite), so that a map once seen is there with no internet; 0 leaves
    /// the tablet to fetch them itself.
    public var tileCacheMegabytes = 200
    /// For the tile cache's User-Agent, as tile servers ask.
    public var softwareVersion = "0.0.0"
    public var leafletDirectory = "/usr/share/javascript/leaflet"
    public var sessionLifetime: Double = 12 * 3600
    /// A connection that sends nothing for this long is closed (Hummingbird's own timer, behind
    /// `readTimeout`, which is the stricter).
    public var idleTimeout: Double = 20
    /// Connections kept at once; nil for half the process's file limit, at most 512.
    public var maxConnections: Int?
    /// A request's head must arrive whole within this many seconds of the connection opening or of
    /// the last answer, and its body within as long again plus a second for every 16 KiB of it; else
    /// the connection is closed (a client sending a byte every few seconds holds it no longer).
    public var readTimeout: Double = 10
    /// Event streams kept open at once; nil for a quarter of the connection cap, at most 32.
    public var maxEventStreams: Int?
    public var notMovingAfter: Double = 600
    /// Whether the driver's work switch counts ([machine] work_signals): the page offers it only then.
    public var workSwitchCounts = true
    /// Metres the implement works ([machine] working_width): Records show the worked area with it.
    /// Unset, the driver may give one in Settings.
    public var workingWidth: Double?
    public var paths: StatusSnapshot.Paths
    public var thresholds = StatusThresholds()
    /// Where onboarding from the page may go, by name, and with which application ids.
    public var environments: [String: AgrirouterEnvironment] = ["qa": .qa, "production": .production]
    public var onboardingSettings = OnboardingSettings(applicationID: "", certificationVersionID: "")
    /// Local days of the Records tab: [track] time_zone, else nil for TZ or the system's.
    public var trackTimeZone: TimeZone?
    /// The clock a wrong password's wait is kept by, in seconds: the wall clock, as the waits are kept
    /// in a file and outlast a restart. Tests hand in one they move on.
    public var loginClock: @Sendable () -> Double = { Date().timeIntervalSince1970 }

    public init(paths: StatusSnapshot.Paths) {
        self.paths = paths
    }

    /// The daemon's own track, beside the spool.
    public var trackPath: String { paths.stateDirectory + "/track.sqlite" }

    /// Loopback only: 127.0.0.0/8, ::1 or localhost.
    public var isLoopback: Bool {
        host.lowercased() == "localhost" || LocalHost.isIPv4Loopback(host) || LocalHost.isIPv6Loopback(host)
    }

    /// The event streams' cap: as set (at most the connection cap), else a quarter of the connection
    /// cap, at most 32; a page holds one, so the rest of the connections stay for the page's requests.
    func eventStreamCapacity(connections: Int) -> Int {
        if let maxEventStreams { return min(max(maxEventStreams, 1), connections) }
        return min(max(connections / 4, 1), 32)
    }

    /// The connection cap: as set, else half of the file limit (the rest is for the state files), 16 to 512.
    var connectionCapacity: Int {
        if let maxConnections { return min(max(maxConnections, 1), 4096) }
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 256 }
        let half = Int(clamping: limit.rlim_cur / 2)  // unlimited reads as the largest number
        return min(max(half, 16), 512)
    }

    public var passwordFile: PasswordFile { PasswordFile(directory: paths.stateDirectory) }

    /// Beyond loopback the page would let anyone on the cab's network pause sharing or disconnect:
    /// refused without a password.
    public func checkExposure() throws(PasswordError) {
        if !isLoopback && !passwordFile.exists {
            throw PasswordError(
                description: "[web] listen = \(host):\(port) reaches beyond this machine; set a password first "
                    + "with 'agrigps web set-password', or listen on 127.0.0.1")
        }
    }
}

/// The cab view's web server: the page, Leaflet from the system, the JSON API and the event stream.
public struct CabServer: Sendable {
    let configuration: CabConfiguration
    let monitor: CabMonitor
    let sessions: Sessions
    let records: CabRecords
    let logins: LoginThrottle
    let basemaps: BasemapSlot
    let tileCache: TileCache?
    let leafletFiles = LeafletFiles()
    let logger: Logger

    public init(configuration: CabConfiguration, logger: Logger = Logger(label: "agrigps.web")) {
        self.configuration = configuration
        self.logger = logger
        var settings = CabMonitor.Settings(
            paths: configuration.paths, thresholds: configuration.thresholds,
            environments: configuration.environments.keys.sorted())
        settings.notMovingAfter = configuration.notMovingAfter
        settings.workSwitchCounts = configuration.workSwitchCounts
        settings.workingWidth = configuration.workingWidth
        monitor = CabMonitor(settings: settings, logger: logger)
        sessions = Sessions(lifetime: configuration.sessionLifetime)
        records = CabRecords(path: configuration.trackPath, timeZone: configuration.trackTimeZone)
        logins = LoginThrottle(
            path: configuration.paths.stateDirectory + "/web-logins.json", now: configuration.loginClock)
        // The configured file, else one uploaded from Settings before.
        let uploaded = configuration.paths.stateDirectory + "/" + Self.uploadedBasemap
        basemaps = BasemapSlot(
            configuration.basemap.map(Basemap.init(path:))
                ?? (FileManager.default.fileExists(atPath: uploaded) ? Basemap(path: uploaded) : nil))
        tileCache = Self.tileCache(configuration, logger: logger)
    }

    /// The read-through cache of `[web] tiles`, when there are tiles to fetch and room for them.
    static func tileCache(_ configuration: CabConfiguration, logger: Logger) -> TileCache? {
        guard let upstream = configuration.tiles, configuration.tileCacheMegabytes > 0 else { return nil }
        do {
            try TileCache.check(upstream: upstream)
        } catch {
            logger.error("\(error.description); the page fetches the tiles itself")
            return nil
        }
        // At most 10,000 MB by the configuration's range, so this cannot overflow.
        return TileCache(
            upstream: upstream, path: configuration.paths.stateDirectory + "/tile-cache.sqlite",
            capacityBytes: min(configuration.tileCacheMegabytes, 100_000) * 1_048_576,
            userAgent: TileCache.userAgent(version: configuration.softwareVersion))
    }

    /// Serves until SIGTERM or SIGINT, or, without `handlingSignals` (tests), until cancelled;
    /// `onListening` gets the port actually bound (for port 0).
    public func run(handlingSignals: Bool = true, onListening: @escaping @Sendable (Int) -> Void = { _ in })
        async throws
    {
        try configuration.checkExposure()
        // A basemap that cannot be drawn leaves the page on its plain background (or the live
        // tiles), and says why there and here; the cab view itself still serves.
        if let basemap = await basemaps.basemap, case .failure(let error) = await basemap.describe() {
            logger.error("\(error.description)")
        }
        let router = Router(context: CabContext.self)
        router.add(middleware: Guard(configuration: configuration, sessions: sessions))
        addRoutes(to: router)
        let monitorService = MonitorService(monitor: monitor)
        var quiet = logger
        // Stopped by cancellation (tests), the server reports the cut connections as errors: not news.
        quiet.logLevel = handlingSignals ? .warning : .critical
        let capacity = configuration.connectionCapacity
        let table = ConnectionTable(
            capacity: capacity, streamCapacity: configuration.eventStreamCapacity(connections: capacity),
            limits: .init(readTimeout: configuration.readTimeout), logger: logger)
        let http = HTTP1Channel.Configuration(
            additionalChannelHandlers: [ConnectionShedder(table: table)],
            idleTimeout: .milliseconds(Int64(min(max(configuration.idleTimeout, 0.1), 3600) * 1000)))
        let server = CabHTTPService(
            responder: router.buildResponder(), server: .http1(configuration: http),
            configuration: ServerConfiguration(address: .hostname(configuration.host, port: configuration.port)),
            onServerRunning: { channel in onListening(channel.localAddress?.port ?? 0) }, logger: quiet)
        // Named here: by default each service is named by printing it whole, router and all, which
        // cost the start as much as reading the configuration.
        let services = [
            ServiceGroupConfiguration.ServiceConfiguration(service: monitorService, serviceName: "monitor"),
            .init(service: server, serviceName: "http"),
        ]
        let group = ServiceGroup(
            configuration: .init(
                services: services, gracefulShutdownSignals: handlingSignals ? [.sigterm, .sigint] : [],
                logger: quiet))
        try await group.run()
        await tileCache?.flush()  // the tiles' last-used times, kept in memory between writes
    }

    func addRoutes(to router: Router<CabContext>) {
        router.get("/") { _, _ in Self.asset(CabPage.html, type: "text/html; charset=utf-8") }
        router.get("/app.js") { _, _ in Self.asset(CabPage.script, type: "text/javascript; charset=utf-8") }
        router.get("/app.css") { _, _ in Self.asset(CabPage.style, type: "text/css; charset=utf-8") }
        router.get("/lang/:language") { _, context in
            let file = context.parameters.get("language") ?? ""
            guard file.hasSuffix(".json"), let catalogue = CabPage.languages[String(file.dropLast(5))] else {
                throw HTTPError(
                    .notFound,
                    message: "no such language; there are \(CabPage.languages.keys.sorted().joined(separator: ", "))")
            }
            return Self.asset(catalogue, type: "application/json; charset=utf-8")
        }
        router.get("/leaflet/**") { request, _ in try self.leaflet(request.uri.path) }
        router.get("/basemap/:z/:x/:y") { _, context in try await self.basemapTile(context.parameters) }
        router.post("/api/basemap") { request, _ in try await self.uploadBasemap(request) }
        router.get("/tiles/:z/:x/:y") { _, context in try await self.cachedTile(context.parameters) }
        router.get("/api/session") { request, context in try await self.session(request, client: context.client) }
        router.post("/api/login") { request, context in try await self.login(request, client: context.client) }
        router.post("/api/logout") { request, _ in
            await self.sessions.close(Guard.cookie(request))
            return Self.json(["ok": true], headers: [.setCookie: Guard.expiredCookie])
        }
        router.get("/api/state") { _, _ in try await self.state() }
        router.get("/api/track") { _, _ in try await self.track() }
        router.get("/api/fields") { _, _ in
            await self.monitor.refreshIfChanged()
            return Self.json(await self.monitor.fieldsGeoJSON())
        }
        router.post("/api/fields/import") { request, _ in try await self.importFields(request) }
        router.get("/api/events") { request, _ in self.events(request) }
        router.get("/api/records") { request, _ in try await self.recordsSummary(request) }
        router.get("/api/records/day") { request, _ in try await self.recordsDayTrack(request) }
        router.get("/api/records/export") { request, _ in try await self.recordsExport(request) }
        router.get("/api/records/fields") { request, _ in try await self.recordsFields(request) }
        router.post("/api/sharing") { request, _ in try await self.sharing(request) }
        router.post("/api/work") { request, _ in try await self.workSwitch(request) }
        router.post("/api/working-width") { request, _ in try await self.workingWidth(request) }
        router.post("/api/onboard") { request, _ in try await self.onboard(request) }
        router.post("/api/disconnect") { request, _ in try await self.disconnect(request) }
    }

    // MARK: - Reading

    func state() async throws -> Response {
        await monitor.refreshIfChanged()
        guard let model = await monitor.model else {
            throw HTTPError(.serviceUnavailable, message: "the state directory is not read yet")
        }
        return Self.jsonResponse(Data(model.json.utf8))
    }

    /// Our own trail (what the spool held and this process saw since it started) and each other machine's history.
    func track() async throws -> Response {
        await monitor.refreshIfChanged()  // a page opened at the server's start gets what the files hold
        var others: [String: [[Double]]] = [:]
        let store = OtherMachinesStore(readingOnly: configuration.paths.others)
        if let model = await monitor.model {
            for other in model.others.prefix(100) {
                let history = (try? await store.history(of: other.id)) ?? []
                others[other.id] = history.suffix(2000).compactMap { report in
                    both(report.latitude, report.longitude).map { [$0, $1] }
                }
            }
        }
        return Self.json(Trails(own: await monitor.track, others: others))
    }

    struct Trails: Codable {
        var own: [[Double]]
        var others: [String: [[Double]]]
    }

    /// Server-Sent Events: the model whenever it changes, notices as they happen, a comment every 15 s
    /// to keep proxies and the browser from giving up on a quiet stream.
    func events(_ request: Request) -> Response {
        let monitor = monitor
        let body = ResponseBody { writer in
            // On the monitor's thread: a new model wakes the stream there, with no switch to the pool and back.
            try await withTaskExecutorPreference(monitor.executor) {
                var seen = -1
                var noticeSeen = await monitor.lastNotice
                var quietSince = ContinuousClock.now
                while !Task.isCancelled && !Task.isShuttingDownGracefully {
                    // A shutdown lets every waiting stream go at once, so that it ends within the server's grace.
                    let update = await withGracefulShutdownHandler { [seen, noticeSeen] in
                        await monitor.update(after: seen, notice: noticeSeen)
                    } onGracefulShutdown: {
                        Task { await monitor.close() }
                    }
                    // One write per update: the model and its notices go out together.
                    var text = ""
                    if let model = update.model {
                        seen = update.version
                        text += "event: state\ndata: " + model.json + "\n\n"
                    }
                    for notice in update.notices {
                        noticeSeen = notice.sequence
                        text += "event: notice\ndata: " + Self.encode(notice) + "\n\n"
                    }
                    if text.isEmpty, ContinuousClock.now - quietSince > .seconds(15) { text = ": keep-alive\n\n" }
                    if !text.isEmpty {
                        try await writer.write(ByteBuffer(string: text))
                        quietSince = .now
                    }
                }
            }
            try await writer.finish(nil)
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: body)
    }

    // MARK: - Records

    /// The day a request names (`?date=2026-11-25`), else today; a clear 400 for anything else.
    func recordsDay(of request: Request, required: Bool = false) throws -> LocalDay {
        let text = request.uri.queryParameters["date"]
        if text == nil, !required { return LocalDay(Date(), in: records.calendar) }
        guard let day = CabRecords.day(text) else {
            throw HTTPError(
                .badRequest, message: "date must be a day of the calendar as YYYY-MM-DD, such as 2026-11-25")
        }
        return day
    }

    func recordsSummary(_ request: Request) async throws -> Response {
        let day = try recordsDay(of: request)
        let width = await recordsWidth()
        return Self.json(try await Self.fromTrack { try await records.summary(for: day, width: width) })
    }

    func recordsDayTrack(_ request: Request) async throws -> Response {
        let day = try recordsDay(of: request, required: true)
        return Self.json(try await Self.fromTrack { try await records.track(of: day) })
    }

    /// A day's track as a GPX or GeoJSON file, named after the day; with `&field=ID`, only the
    /// stretches inside that field, named after it too.
    func recordsExport(_ request: Request) async throws -> Response {
        let day = try recordsDay(of: request, required: true)
        guard let format = request.uri.queryParameters["format"].flatMap({ TrackFormat(rawValue: String($0)) }),
            format != .csv
        else {
            throw HTTPError(.badRequest, message: "format must be gpx or geojson")
        }
        let cut = try await exportField(of: request)
        let text = try await Self.fromTrack {
            try await records.export(day, as: format, field: cut?.field, of: cut?.work)
        }
        let fileName = CabRecords.fileName(day, field: cut?.field.field.name, format: format)
        return Response(
            status: .ok,
            headers: [
                .contentType: format.mediaType, .cacheControl: "no-store",
                .contentDisposition: CabRecords.contentDisposition(fileName),
            ],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// A day's hours, hours moving and kilometres in each field worked, and off them.
    func recordsFields(_ request: Request) async throws -> Response {
        let day = try recordsDay(of: request, required: true)
        let work = await fieldWork()
        let width = await recordsWidth()
        return Self.json(try await Self.fromTrack { try await records.fieldDay(day, work: work, width: width) })
    }

    /// The fields as the page process holds them (read again first if their store changed): the
    /// monitor's copy, so no second reader of the store is opened.
    func fieldWork() async -> FieldWork {
        await monitor.refreshIfChanged()
        return FieldWork(fields: await monitor.storedFields())
    }

    /// The field an export is cut to (`&field=ID`, as /api/records/fields gives it); nil without one.
    /// A field that is not stored is refused: an empty file would look like a day without work.
    func exportField(of request: Request) async throws -> (field: StoredField, work: FieldWork)? {
        guard let text = request.uri.queryParameters["field"] else { return nil }
        guard let id = Int64(String(text)), id > 0 else {
            throw HTTPError(.badRequest, message: "field must be a field's number, as /api/records/fields gives it")
        }
        let work = await fieldWork()
        guard let field = work.fields.first(where: { $0.id == id }) else {
            throw HTTPError(
                .notFound,
                message: work.fields.isEmpty
                    ? "no fields are stored; import them in Settings"
                    : "no field \(id) is stored (removed, or imported again since); open the Records tab again for the list"
            )
        }
        return (field, work)
    }

    /// A read of the track; a file that cannot be read is a 503 that says why.
    static func fromTrack<T>(_ read: () async throws -> T) async throws -> T {
        do {
            return try await read()
        } catch let error as TrackStoreError {
            throw HTTPError(.serviceUnavailable, message: error.description)
        }
    }

    // MARK: - Sessions

    /// What the page learns about this server with its session: whether it asks for a password, the
    /// tiles, the stale threshold, and, once logged in, the token its changes carry.
    struct SessionAnswer: Encodable {
        var passwordRequired: Bool
        var tiles: String
        /// "offline" (the basemap on the box), "live" (tiles from the internet) or "none".
        var map: String
        var maxZoom: Int
        @Nullable var attribution: String?
        /// Why the basemap configured is not drawn.
        @Nullable var basemapProblem: String?
        var staleAfterSeconds: Double
        var loggedIn = false
        @Nullable var csrfToken: String?
    }

    private func sessionAnswer(passwordSet: Bool) async -> SessionAnswer {
        var answer = SessionAnswer(
            passwordRequired: passwordSet, tiles: configuration.tiles ?? "none",
            map: configuration.tiles == nil ? "none" : "live",
            maxZoom: 19, attribution: configuration.tiles == nil ? nil : "© OpenStreetMap contributors",
            staleAfterSeconds: configuration.thresholds.staleAfter)
        if tileCache != nil { answer.tiles = "/tiles/{z}/{x}/{y}" }  // fetched and kept by the box
        switch await basemaps.basemap?.describe() {
        case .success(let info)?:
            answer.tiles = "/basemap/{z}/{x}/{y}"
            answer.map = "offline"
            answer.maxZoom = info.maxZoom
            answer.attribution = info.attribution
        case .failure(let error)?:
            answer.basemapProblem = error.description
        case nil:
            break
        }
        return answer
    }

    /// A tile of `[web] tiles`, through the box's cache. An upstream that cannot be reached, with
    /// no copy kept, is a 503 the page retries; one that answers badly a 502 saying how.
    func cachedTile(_ parameters: Parameters) async throws -> Response {
        guard let tileCache else { throw HTTPError(.notFound, message: "no tiles are configured ([web] tiles)") }
        guard let z = parameters.get("z", as: Int.self), let x = parameters.get("x", as: Int.self),
            let y = parameters.get("y", as: Int.self)
        else {
            throw HTTPError(.badRequest, message: "a tile is asked for as /tiles/ZOOM/X/Y, in whole numbers")
        }
        let tile: TileCache.Served?
        do {
            tile = try await tileCache.tile(z: z, x: x, y: y)
        } catch {
            // The cache logs its problems, once each: not again here for every tile.
            switch error {
            case .upstreamTimedOut: throw HTTPError(.gatewayTimeout, message: error.description)
            case .upstreamHeldOff, .upstreamUnreachable:
                throw HTTPError(.serviceUnavailable, headers: [.retryAfter: "15"], message: error.description)
            default: throw HTTPError(.badGateway, message: error.description)
            }
        }
        guard let tile else { throw HTTPError(.notFound, message: "there is no tile at \(z)/\(x)/\(y)") }
        return Response(
            status: .ok, headers: [.contentType: tile.type, .cacheControl: "private, max-age=86400"],
            body: .init(byteBuffer: ByteBuffer(bytes: tile.data)))
    }

    /// Where a basemap uploaded from Settings is kept, in the state directory.
    static let uploadedBasemap = "basemap.mbtiles"
    /// The largest basemap taken from the page: a region's raster tiles to zoom 16 or so.
    static let maximumBasemapUpload = 4 * 1_073_741_824

    /// POST /api/basemap: an MBTiles file sent from Settings, written to the disk as it arrives,
    /// checked as a basemap, and only then put in place of the one before (which stays if it is refused).
    func uploadBasemap(_ request: Request) async throws -> Response {
        guard configuration.basemap == nil else {
            throw HTTPError(
                .conflict,
                message:
                    "the basemap is set in the configuration ([web] basemap = \(configuration.basemap ?? "")); change it there"
            )
        }
        let directory = configuration.paths.stateDirectory
        let upload = UploadFile(path: directory + "/.basemap-upload")
        do {
            try await upload.open()
            for try await buffer in request.body {
                guard await upload.written + buffer.readableBytes <= Self.maximumBasemapUpload else {
                    await upload.discard()
                    throw HTTPError(
                        .contentTooLarge,
                        message: "a basemap here is at most 4 GiB; export a smaller area or fewer zoom levels")
                }
                try await upload.write(Array(buffer.readableBytesView))
            }
            try await upload.finish()
        } catch let error as HTTPError {
            throw error
        } catch {
            await upload.discard()
            throw HTTPError(
                .internalServerError,
                message: "the upload could not be written to \(directory) (\(error)); check that it has room")
        }
        let candidate = Basemap(path: upload.path)
        let info: Basemap.Info
        do {
            info = try await candidate.open()
        } catch {
            await upload.discard()
            throw HTTPError(.unprocessableContent, message: error.description)
        }
        let target = directory + "/" + Self.uploadedBasemap
        guard rename(upload.path, target) == 0 else {
            await upload.discard()
            throw HTTPError(
                .internalServerError, message: "the basemap could not be put in place at \(target) (errno \(errno))")
        }
        await basemaps.replace(with: Basemap(path: target))
        logger.notice("basemap uploaded from the cab view", metadata: ["zooms": "\(info.minZoom)-\(info.maxZoom)"])
        struct Uploaded: Encodable {
            var name: String?
            var minZoom: Int
            var maxZoom: Int
        }
        return Self.json(Uploaded(name: info.name, minZoom: info.minZoom, maxZoom: info.maxZoom))
    }

    /// A tile of the basemap, counted from the top as Leaflet asks.
    func basemapTile(_ parameters: Parameters) async throws -> Response {
        guard let basemap = await basemaps.basemap else {
            throw HTTPError(.notFound, message: "no basemap is configured ([web] basemap)")
        }
        guard let z = parameters.get("z", as: Int.self), let x = parameters.get("x", as: Int.self),
            let y = parameters.get("y", as: Int.self)
        else {
            throw HTTPError(.badRequest, message: "a tile is asked for as /basemap/ZOOM/X/Y, in whole numbers")
        }
        let tile: (data: Data, type: String)?
        do {
            tile = try await basemap.tile(z: z, x: x, y: y)
        } catch {
            logger.warning("\(error.description)")
            throw HTTPError(.unprocessableContent, message: error.description)
        }
        guard let tile else { throw HTTPError(.notFound, message: "the basemap has no tile at \(z)/\(x)/\(y)") }
        // Tiles of a file do not change while it is served: the tablet may keep them a day.
        return Response(
            status: .ok, headers: [.contentType: tile.type, .cacheControl: "private, max-age=86400"],
            body: .init(byteBuffer: ByteBuffer(bytes: tile.data)))
    }

    func session(_ request: Request, client: String) async throws -> Response {
        let passwordSet = configuration.passwordFile.exists
        var answer = await sessionAnswer(passwordSet: passwordSet)
        if let session = await sessions.session(Guard.cookie(request)) {
            (answer.loggedIn, answer.csrfToken) = (true, session.csrfToken)
            return Self.json(answer)
        }
        // Without a password the page is for this machine only (loopback): the browser gets a session at once.
        guard !passwordSet, configuration.isLoopback else {
            return Self.json(answer)
        }
        return try await opened(answer, client: client)
    }

    func login(_ request: Request, client: String) async throws -> Response {
        struct Login: Decodable { var password: String }
        let login = try await Self.decode(Login.self, from: request)
        let passwordFile = configuration.passwordFile
        guard passwordFile.exists else {
            throw HTTPError(
                .badRequest, message: "no password is set for this page; 'agrigps web set-password' sets one")
        }
        switch await logins.attempt(client, verify: { passwordFile.verify(login.password) }) {
        case .accepted:
            return try await opened(sessionAnswer(passwordSet: true), client: client)
        case .wrong(let retryAfter):
            logger.warning("a login to the cab view was refused: wrong password", metadata: ["client": "\(client)"])
            throw Self.refusedLogin(.unauthorized, "wrong password", retryAfter: retryAfter)
        case .tooSoon(let retryAfter):
            throw Self.refusedLogin(.tooManyRequests, "too many wrong passwords", retryAfter: retryAfter)
        }
    }

    /// A refused login that says when the next try will be checked.
    static func refusedLogin(_ status: HTTPResponse.Status, _ reason: String, retryAfter: Double) -> HTTPError {
        let seconds = Int(min(max(retryAfter.rounded(.up), 1), 86_400))
        let wait = seconds < 120 ? "\(seconds) s" : "\((seconds + 59) / 60) minutes"
        return HTTPError(status, headers: [.retryAfter: String(seconds)], message: "\(reason); try again in \(wait)")
    }

    private func opened(_ answer: SessionAnswer, client: String) async throws -> Response {
        guard let (id, session) = await sessions.open(client: client) else {
            throw HTTPError(.internalServerError, message: "no session could be made")
        }
        var answer = answer
        (answer.loggedIn, answer.csrfToken) = (true, session.csrfToken)
        let maxAge = Int(configuration.sessionLifetime.rounded())
        return Self.json(
            answer,
            headers: [.setCookie: "\(Guard.cookieName)=\(id); Path=/; HttpOnly; SameSite=Strict; Max-Age=\(maxAge)"])
    }

    // MARK: - Acting

    func sharing(_ request: Request) async throws -> Response {
        struct Sharing: Decodable { var paused: Bool }
        let paused = try await Self.decode(Sharing.self, from: request).paused
        // The same path as `agrigps pause` and `agrigps resume`.
        try await flip("sharing", to: paused ? "paused" : "resumed") { try await $0.setSharing(paused: paused) }
        return Self.json(["paused": paused])
    }

    func workSwitch(_ request: Request) async throws -> Response {
        struct WorkSwitch: Decodable { var on: Bool }
        let on = try await Self.decode(WorkSwitch.self, from: request).on
        // The same path as `agrigps work on|off`.
        try await flip("work switch", to: on ? "on" : "off") { try await $0.setWorkSwitch(on: on) }
        return Self.json(["on": on])
    }

    /// The width Records' worked area is counted with: the configuration's, else the driver's from
    /// Settings as the monitor last read the spool.
    func recordsWidth() async -> Double? {
        if let configured = configuration.workingWidth { return configured }
        await monitor.refreshIfChanged()  // a width just given, or Records asked before the first look
        return await monitor.model?.work.width
    }

    /// POST /api/working-width `{"metres": 6}` (or null to forget it): the implement's width, asked
    /// once in Settings, checked by the rule of [machine] working_width. A width the configuration
    /// sets is the integrator's and cannot be changed here.
    func workingWidth(_ request: Request) async throws -> Response {
        let metres = try await Self.decode(WorkingWidth.self, from: request).metres
        guard configuration.workingWidth == nil else {
            throw HTTPError(
                .conflict,
                message: "the working width is set in the configuration file ([machine] working_width); change it there"
            )
        }
        var checked: Double?
        if let metres {
            do {
                checked = try ConfigurationFile.checkFlag(
                    "working width", Bounds.show(metres), section: "machine", name: "working_width")
            } catch {
                throw HTTPError(.badRequest, message: error.description)
            }
        }
        try await flip("working width", to: checked.map { Bounds.show($0) + " m" } ?? "forgotten") {
            try await $0.setWorkingWidth(checked)
        }
        struct Answer: Encodable { var metres: Double? }
        return Self.json(Answer(metres: checked))
    }

    /// The body of /api/working-width: `metres` must be there, a number or null.
    struct WorkingWidth: Decodable {
        var metres: Double?

        enum CodingKeys: CodingKey { case metres }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.metres) else {
                throw DecodingError.keyNotFound(
                    CodingKeys.metres, .init(codingPath: [], debugDescription: "metres is missing"))
            }
            metres = try container.decodeIfPresent(Double.self, forKey: .metres)
        }
    }

    /// Sets one of the spool's switches, which the daemon reads at each sample, and shows it at once.
    private func flip(_ name: String, to position: String, _ set: (Spool) async throws -> Void) async throws {
        do {
            try await set(await Spool.opening(path: configuration.paths.spool))
        } catch {
            throw HTTPError(.serviceUnavailable, message: "the \(name) could not be set: \(error)")
        }
        logger.notice("\(name) \(position) from the cab view")
        await monitor.rebuildAfterWrite()
    }

    func onboard(_ request: Request) async throws -> Response {
        struct Onboard: Decodable {
            var tan: String
            var environment: String
        }
        let wanted = try await Self.decode(Onboard.self, from: request)
        guard OnboardingClient.isPlausibleTAN(wanted.tan) else {
            throw HTTPError(.badRequest, message: OnboardingError.invalidTAN.description)
        }
        guard let target = configuration.environments[wanted.environment] else {
            throw HTTPError(
                .badRequest,
                message:
                    "unknown environment; choose one of \(configuration.environments.keys.sorted().joined(separator: ", "))"
            )
        }
        let onboarder = Onboarder(
            store: CredentialStore(directory: configuration.paths.stateDirectory),
            settings: configuration.onboardingSettings)
        do {
            let response = try await onboarder.onboard(tan: wanted.tan, to: target)
            logger.notice("onboarded from the cab view", metadata: ["environment": "\(target.name)"])
            struct Onboarded: Encodable { var onboarded = true, environment: String, endpoint: String }
            return Self.json(Onboarded(environment: target.name, endpoint: response.deviceAlternateId))
        } catch {
            logger.warning("onboarding from the cab view failed: \(error.description)")
            throw HTTPError(Self.status(for: error), message: error.description)
        }
    }

    /// The largest TaskData export taken from the page; a farm's fields zip to well under a megabyte.
    static let maximumUpload = 64 * 1_048_576

    /// POST /api/fields/import?name=FILE: a TaskData export (a zip, or TASKDATA.XML) sent from the
    /// Settings tab. It replaces the fields an export of the same name brought before, as
    /// `agrigps fields import` does.
    func importFields(_ request: Request) async throws -> Response {
        let name = Self.uploadName(request.uri.queryParameters.get("name"))
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: Self.maximumUpload)
        } catch {
            throw HTTPError(
                .contentTooLarge,
                message:
                    "a TaskData export here is at most 64 MiB; export only the fields (partfields) from the farm software"
            )
        }
        let store = FieldStore(path: CabMonitor.fieldsPath(configuration.paths))
        do {
            let report = try await store.importTaskData(bytes: Data(buffer.readableBytesView), named: name)
            logger.notice(
                "fields imported from the cab view",
                metadata: [
                    "file": "\(name)", "fields": "\(report.imported.count)",
                    "skipped": "\(report.skipped.count)",
                ])
            struct Imported: Encodable {
                var imported: Int
                var replaced: Int
                var skipped: [String]
                var names: [String]
            }
            return Self.json(
                Imported(
                    imported: report.imported.count, replaced: report.replaced,
                    skipped: report.skipped.map { $0.description }, names: report.imported.map { $0.name }))
        } catch {
            logger.warning("fields from the cab view refused: \(error.description)")
            throw HTTPError(
                error.kind == .store ? .internalServerError : .unprocessableContent, message: error.description)
        }
    }

    /// The uploaded file's name as the page gives it, kept to a plain file name (it names the source,
    /// and a zip from a TASKDATA.XML is told apart by it); "upload.zip" when it gives none that will do.
    static func uploadName(_ given: String?) -> String {
        let base = given.map { String($0.split(separator: "/").last ?? "") } ?? ""
        let plain = base.filter { $0.isASCII && ($0.isLetter || $0.isNumber || "._- ".contains($0)) }
        guard !plain.isEmpty, plain.count <= 100, !plain.hasPrefix(".") else { return "upload.zip" }
        return plain
    }

    func disconnect(_ request: Request) async throws -> Response {
        struct Disconnect: Decodable { var confirm: Bool }
        let wanted = try await Self.decode(Disconnect.self, from: request)
        guard wanted.confirm else {
            throw HTTPError(.badRequest, message: "disconnect removes the credentials; confirm it")
        }
        let store = CredentialStore(directory: configuration.paths.stateDirectory)
        do {
            guard try store.load() != nil else { throw HTTPError(.conflict, message: "this machine is not onboarded") }
            try store.delete()
        } catch let error as OnboardingError {
            throw HTTPError(.internalServerError, message: error.description)
        }
        logger.notice("disconnected from agrirouter from the cab view")
        struct Disconnected: Encodable { var onboarded = false, advice: String }
        return Self.json(
            Disconnected(advice: "Now delete this endpoint in the agrirouter UI too, or it stays listed there."))
    }

    static func status(for error: OnboardingError) -> HTTPResponse.Status {
        switch error {
        case .invalidTAN, .missingSettings: return .badRequest
        case .alreadyOnboarded, .transportFixed: return .conflict
        case .agrirouter: return .unprocessableContent
        case .transport, .unreadableResponse: return .badGateway
        case .storage, .mqttSetup, .configuration: return .internalServerError
        }
    }

    // MARK: - Plumbing

    /// A request body as JSON of the expected shape: at most 16 KiB, and a clear 400 otherwise.
    static func decode<T: Decodable>(_ type: T.Type, from request: Request) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: 16 * 1024)
        } catch {
            throw HTTPError(.contentTooLarge, message: "a request body here is at most 16 KiB")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(buffer.readableBytesView))
        } catch {
            throw HTTPError(.badRequest, message: "the body must be JSON of the form \(Self.shape(of: T.self))")
        }
    }

    static func shape(of type: Any.Type) -> String {
        switch "\(type)" {
        case let name where name.contains("Sharing"): return #"{"paused": true|false}"#
        case let name where name.contains("WorkSwitch"): return #"{"on": true|false}"#
        case let name where name.contains("WorkingWidth"): return #"{"metres": 0.1 to 60, or null to forget it}"#
        case let name where name.contains("Onboard"): return #"{"tan": "…", "environment": "qa"|"production"}"#
        case let name where name.contains("Disconnect"): return #"{"confirm": true}"#
        case let name where name.contains("Login"): return #"{"password": "…"}"#
        default: return "{…}"
        }
    }

    static func encode<T: Encodable>(_ value: T) -> String {
        (try? JSONWriter.encode(value)) ?? "null"
    }

    /// Every JSON answer, success or refusal: typed as such and never cached.
    static func jsonResponse(_ data: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        headers[.cacheControl] = "no-store"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func json<T: Encodable>(_ value: T, headers: HTTPFields = [:]) -> Response {
        jsonResponse(Data(encode(value).utf8), headers: headers)
    }

    static func asset(_ text: String, type: String) -> Response {
        Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// Leaflet's own files from the system package, and nothing else from that directory.
    static let leafletFiles: [String: String] = [
        "leaflet.js": "text/javascript", "leaflet.css": "text/css",
        "images/marker-icon.png": "image/png", "images/marker-icon-2x.png": "image/png",
        "images/marker-shadow.png": "image/png",
        "images/layers.png": "image/png", "images/layers-2x.png": "image/png",
    ]

    func leaflet(_ path: String) throws -> Response {
        let name = String(path.dropFirst("/leaflet/".count))
        guard let type = Self.leafletFiles[name] else { throw HTTPError(.notFound, message: "no such file") }
        guard let bytes = leafletFiles.file(configuration.leafletDirectory + "/" + name) else {
            throw HTTPError(
                .notFound,
                message:
                    "Leaflet is not installed at \(configuration.leafletDirectory) (Debian: apt install libjs-leaflet)")
        }
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "max-age=86400"], body: .init(byteBuffer: bytes))
    }
}

/// Leaflet's files, read from the disk once each: every page load asks for them, and the package
/// changes them only with an upgrade, which restarts the service.
final class LeafletFiles: Sendable {
    private let read = Mutex<[String: ByteBuffer]>([:])

    func file(_ path: String) -> ByteBuffer? {
        if let bytes = read.withLock({ $0[path] }) { return bytes }
        // Not kept when missing: installing the package later serves it without a restart.
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        let bytes = ByteBuffer(bytes: data)
        read.withLock { $0[path] = bytes }
        return bytes
    }
}

/// Runs the monitor's polling for as long as the server runs.
struct MonitorService: Service {
    let monitor: CabMonitor

    func run() async throws {
        await cancelWhenGracefulShutdown {
            // The monitor's own thread for whatever its loop awaits that is nobody's: a wake-up from the
            // watch then comes straight back to it, where Swift's pool would take it first.
            await withTaskExecutorPreference(monitor.executor) {
                await monitor.run()
            }
        }
    }
}
