import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Foundation
import GPSDReplay
import TestSupport
import Testing

/// `agrigps web` as the unit runs it: its refusals, its password command, its logs kept free of
/// secrets, and a clean stop on SIGTERM.
@Suite("agrigps web", .serialized, .timeLimit(.minutes(2)))
struct WebCommandTests {
    @Test("beyond loopback without a password it refuses to start (78), and says how to set one")
    func refusesExposure() async throws {
        let scratch = TemporaryDirectory("web")
        let directory = scratch.path
        let result = try await AgrigpsCommand.run(
            ["web", "--listen", "0.0.0.0:0", "--state-dir", directory], timeout: 20)
        #expect(result.code == 78, "\(result.stderr)")
        #expect(result.stderr.joined().contains("agrigps web set-password"))
        let bad = try await AgrigpsCommand.run(
            ["web", "--listen", "nowhere:port", "--state-dir", directory], timeout: 20)
        #expect(bad.code == 64 && bad.stderr.joined().contains("--listen"), "\(bad.stderr)")
    }

    @Test("set-password reads standard input, refuses a short one, and stores only a hash")
    func setPassword() async throws {
        let scratch = TemporaryDirectory("web")
        let directory = scratch.path
        let short = try await AgrigpsCommand.run(["web", "set-password", "--state-dir", directory], input: "short\n")
        #expect(short.code == 64 && short.stderr.joined().contains("at least 8"), "\(short.stderr)")
        let set = try await AgrigpsCommand.run(
            ["web", "set-password", "--state-dir", directory], input: "tractor-cab-2026\n")
        #expect(set.code == 0, "\(set.stderr)")
        let stored = try String(contentsOfFile: directory + "/web-password", encoding: .utf8)
        #expect(stored.hasPrefix("pbkdf2-sha256$") && !stored.contains("tractor-cab-2026"))
    }

    @Test(
        "served beyond loopback with a password: login, onboarding, and no TAN, secret or password in its output; SIGTERM stops it cleanly, an open page too"
    )
    func servesWithoutLeaking() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["WEBTAN0001": "Tractor"]))
        let scratch = TemporaryDirectory("web")
        let directory = scratch.path
        let state = directory + "/state"
        try simulator.caCertificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        try """
        [agrirouter]
        application_id = "app"
        certification_version_id = "version"
        onboarding_url = "\(simulator.onboardingURL)"
        ca_file = "\(directory)/ca.pem"
        [web]
        tiles = "none"
        """.write(toFile: directory + "/agrigps.conf", atomically: true, encoding: .utf8)
        #expect(
            try await AgrigpsCommand.run(["web", "set-password", "--state-dir", state], input: "tractor-cab-2026\n")
                .code == 0)
        let port = Int(try ReplayGPSD.freeLoopbackPort())
        let web = try AgrigpsCommand([
            "web", "--listen", "0.0.0.0:\(port)", "--config", directory + "/agrigps.conf", "--state-dir", state,
        ])
        defer {
            if web.process.isRunning() { web.process.terminate(grace: 1) }
            web.cleanUp()
        }
        #expect(
            await web.waitForOutput(timeout: 20) { $0.contains("serving the cab view at http://0.0.0.0:\(port)/") },
            "\(web.stderr)")

        let login = try await LoopbackHTTP.post(port: port, path: "/api/login", json: ["password": "tractor-cab-2026"])
        #expect(login.status == 200, "\(login.text)")
        let cookie = try #require(login.header("Set-Cookie")?.split(separator: ";").first.map(String.init))
        let token = try #require(login.json?["csrfToken"] as? String)
        let headers = ["Cookie": cookie, "X-CSRF-Token": token]
        let refused = try await LoopbackHTTP.post(
            port: port, path: "/api/onboard", json: ["tan": "NOTATAN999", "environment": "local"], headers: headers)
        #expect(refused.status == 422, "\(refused.text)")
        let onboarded = try await LoopbackHTTP.post(
            port: port, path: "/api/onboard", json: ["tan": "WEBTAN0001", "environment": "local"], headers: headers)
        #expect(onboarded.status == 200, "\(onboarded.text)")
        let secret = try #require(try CredentialStore(directory: state).load()?.response.authentication.secret)

        // A page left open: its event stream waits for the next change, and the stop lets it go.
        let page = Task {
            try await LoopbackHTTP.stream(
                port: port, path: "/api/events", headers: ["Cookie": cookie, "Accept": "text/event-stream"],
                timeout: 30
            ) { _ in false }
        }
        try await Task.sleep(for: .seconds(1))
        let stopping = Date()
        kill(web.process.pid, SIGTERM)
        let code = await web.process.wait(timeout: 10)
        #expect(code == 0, "a graceful stop")
        #expect(Date().timeIntervalSince(stopping) < 5)
        let streamed = try await page.value
        #expect(streamed.contains("event: state"), "\(streamed.prefix(300))")
        #expect(Date().timeIntervalSince(stopping) < 5, "the open event stream ended with the server")
        let output = (web.stdout + web.stderr).joined(separator: "\n")
        #expect(output.contains("onboarded from the cab view"), "the journal says what happened: \(output)")
        for secretText in ["WEBTAN0001", "NOTATAN999", secret, "tractor-cab-2026", "PRIVATE KEY"] {
            #expect(!output.contains(secretText), "no \(secretText.prefix(4))… in the log")
        }
        await simulator.shutdown()
    }
}
