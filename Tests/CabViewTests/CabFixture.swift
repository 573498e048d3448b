import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import CabView
import Fields
import Foundation
import GNSS
import Spool
import StateDirectory
import StateView
import TestSupport

/// A state directory and a cab view serving it in this process, on a free loopback port.
final class CabFixture: @unchecked Sendable {
    /// The state directory made for this fixture, when none was given: removed with it.
    private let scratch: TemporaryDirectory?
    let directory: String
    let paths: StatusSnapshot.Paths
    var configuration: CabConfiguration
    private var task: Task<Void, any Error>?
    private(set) var port = 0

    init(stateDirectory: String? = nil) throws {
        if let stateDirectory {
            scratch = nil
            directory = stateDirectory
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } else {
            let made = TemporaryDirectory("cab")
            scratch = made
            directory = made.path
        }
        paths = StatusSnapshot.Paths(
            stateDirectory: directory, spool: directory + "/spool.sqlite", others: directory + "/others.sqlite",
            heartbeat: directory + "/heartbeat.json")
        configuration = CabConfiguration(paths: paths)
        configuration.host = "127.0.0.1"
        configuration.port = 0
        configuration.tiles = nil
        // The daemon is often this process, whose heartbeat a test writes once: a test that runs past
        // status's 2 min (on a loaded machine) must not find it stalled, which the label shows as stopped.
        configuration.thresholds.heartbeatLimit = 86_400
    }

    /// Starts serving; returns once the port is bound.
    func start() async throws {
        let bound = PortBox()
        let server = CabServer(configuration: configuration)
        task = Task { try await server.run(handlingSignals: false) { port in bound.set(port) } }
        let deadline = Date().addingTimeInterval(10)
        while bound.port == 0 && Date() < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        guard bound.port != 0 else { throw LoopbackHTTPError(description: "the cab view did not start listening") }
        port = bound.port
    }

    func stop(keepingDirectory: Bool = false) async {
        task?.cancel()
        _ = await task?.result
        if !keepingDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// A box not onboarded yet, whose page may onboard to a local agrirouter that takes `tan`; started.
    static func notOnboarded(localAgrirouterTAN tan: String) async throws -> (CabFixture, AgrirouterSimulator) {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: [tan: "Cab-Tractor"]))
        let fixture = try CabFixture()
        fixture.configuration.environments["local"] = .local(
            onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM)
        fixture.configuration.onboardingSettings = OnboardingSettings(
            applicationID: "app", certificationVersionID: "version")
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        return (fixture, simulator)
    }

    /// A heartbeat from a daemon that is this process: "running".
    func writeHeartbeat(
        onboarded: Bool, lastFix: PositionSample? = nil, environment: String? = nil,
        machine: Heartbeat.MachineStatus? = nil
    ) throws {
        var heartbeat = Heartbeat(pid: getpid(), startedAt: Date().addingTimeInterval(-60), onboarded: onboarded)
        heartbeat.environment = environment
        heartbeat.machine = machine
        if let lastFix {
            heartbeat.lastFix = Heartbeat.Sample(lastFix)
            heartbeat.lastSample = Heartbeat.Sample(lastFix)
        }
        try heartbeat.write(to: paths.heartbeat)
    }

    func get(_ path: String, session: Session? = nil, headers: [String: String] = [:]) async throws -> HTTPReply {
        try await LoopbackHTTP.request(
            "GET", port: port, path: path, headers: (session?.headers ?? [:]).merging(headers) { $1 })
    }

    func post(_ path: String, _ json: Any, session: Session? = nil, csrf: Bool = true) async throws -> HTTPReply {
        var headers = session.map { ["Cookie": $0.cookie] } ?? [:]
        if csrf, let session { headers["X-CSRF-Token"] = session.csrfToken }
        return try await LoopbackHTTP.post(port: port, path: path, json: json, headers: headers)
    }

    struct Session {
        var cookie: String
        var csrfToken: String
        var headers: [String: String] { ["Cookie": cookie] }
    }

    /// The session a browser on this machine gets from GET /api/session (or after a login).
    static func session(from reply: HTTPReply) -> Session? {
        guard let setCookie = reply.header("Set-Cookie"), let token = reply.json?["csrfToken"] as? String,
            let pair = setCookie.split(separator: ";").first
        else { return nil }
        return Session(cookie: String(pair), csrfToken: token)
    }
}

/// A field for the tests: the box between two latitudes and two longitudes, and a test of whether a
/// point lies in it written here, apart from the field index under test.
struct FieldBox: Sendable {
    var name: String
    var south: Double
    var west: Double
    var north: Double
    var east: Double

    func contains(_ coordinate: Coordinate?) -> Bool {
        guard let coordinate else { return false }
        return coordinate.latitude > south && coordinate.latitude < north && coordinate.longitude > west
            && coordinate.longitude < east
    }

    func field() throws -> Field {
        let corners = [(south, west), (south, east), (north, east), (north, west)].map {
            GeoPoint(latitude: $0.0, longitude: $0.1)
        }
        guard let ring = Ring(closing: corners) else {
            throw LoopbackHTTPError(description: "\(name) is not a box: \(self)")
        }
        return Field(partfieldID: "PFD-" + name, name: name, boundaries: [ring])
    }
}

extension CabFixture {
    /// Stores `boxes` in STATE-DIR/fields.sqlite as one import would; returns them as stored, with
    /// their numbers, in the boxes' order.
    @discardableResult
    func storeFields(_ boxes: [FieldBox]) async throws -> [StoredField] {
        let store = FieldStore(path: directory + "/fields.sqlite")
        try await store.replace(source: "file: test.zip", with: try boxes.map { try $0.field() }, importedAt: Date())
        let stored = try await store.fields()
        return try boxes.map { box in
            guard let field = stored.first(where: { $0.field.name == box.name }) else {
                throw LoopbackHTTPError(description: "\(box.name) was not stored")
            }
            return field
        }
    }
}

private final class PortBox: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    var port: Int { lock.withLock { value } }
    func set(_ port: Int) { lock.withLock { value = port } }
}

extension WebDriver {
    /// Opens a tab of the cab view and waits until it shows. On a wide screen the map is always
    /// shown beside the other tabs and its tab button is hidden: it is clicked through the page.
    /// Returns once the tab has settled (Records: its week drawn), or false if it never showed.
    func openCabTab(_ tab: String) async throws -> Bool {
        let button = "#tabs button[data-tab='\(tab)']"
        if try await run("return document.querySelector(\"\(button)\").getClientRects().length > 0") as? Bool == true {
            try await click(button)
        } else {
            try await run("document.querySelector(\"\(button)\").click()")
        }
        guard
            try await wait(
                timeout: 10, for: "return document.getElementById('tab-\(tab)').classList.contains('active')")
        else { return false }
        // Records draws its week once the records have come; then a moment for layout and transitions.
        if tab == "records",
            try await !wait(
                timeout: 10,
                for: "return !!cab.records && document.querySelectorAll('#records-week .column').length === 7")
        {
            return false
        }
        try await Task.sleep(for: .milliseconds(400))
        return true
    }
}
