import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Clocks
import Foundation
import NIOCore
import Spool
import StateDirectory
import StateView
import TestSupport
import Testing

@testable import CabView

@Suite("Cab view API", .serialized, .timeLimit(.minutes(3)))
struct CabAPITests {
    /// A running, onboarded-looking box with three samples in its spool.
    func servedBox(workingWidth: Double? = nil) async throws -> CabFixture {
        let fixture = try CabFixture()
        fixture.configuration.workingWidth = workingWidth
        let spool = Spool(path: fixture.paths.spool)
        for step in 0..<3 {
            _ = await spool.append(
                Samples.fix(
                    latitude: 52.5 + Double(step) * 0.0001, longitude: 13.4,
                    at: Date().addingTimeInterval(Double(step - 3))))
        }
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        return fixture
    }

    @Test("a browser on this machine gets a session at once; state shows our newest position and the sharing indicator")
    func sessionAndState() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let reply = try await fixture.get("/api/session")
            #expect(reply.status == 200)
            let session = try #require(CabFixture.session(from: reply), "\(reply.headers)")
            #expect(
                reply.header("Set-Cookie")?.contains("HttpOnly") == true
                    && reply.header("Set-Cookie")?.contains("SameSite=Strict") == true)
            let state = try await fixture.get("/api/state", session: session)
            #expect(state.status == 200)
            let object = try #require(state.json)
            let own = try #require(object["own"] as? [String: Any])
            #expect(own["latitude"] as? Double == 52.5002)
            #expect(own["fix"] as? String == "rtk_fixed")
            let sharing = try #require(object["sharing"] as? [String: Any])
            #expect(sharing["state"] as? String == "not_onboarded")
            #expect(state.header("Content-Security-Policy")?.contains("default-src 'self'") == true)
            #expect(state.header("X-Frame-Options") == "DENY")
        }
    }

    @Test(
        "the page, its script and Leaflet are served; nothing else from Leaflet's directory, and unknown paths are 404")
    func assets() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let page = try await fixture.get("/")
            #expect(
                page.status == 200 && page.text.contains("/leaflet/leaflet.js") && !page.text.contains("unpkg")
                    && !page.text.contains("cdn"))
            #expect(try await fixture.get("/app.js").status == 200)
            let leaflet = try await fixture.get("/leaflet/leaflet.js")
            #expect(
                leaflet.status == 200 && leaflet.text.contains("Leaflet"),
                "libjs-leaflet must be installed (script/bootstrap)")
            #expect(try await fixture.get("/leaflet/../../../etc/passwd").status == 404)
            #expect(try await fixture.get("/leaflet/leaflet.css.map").status == 404)
            #expect(try await fixture.get("/api/nothing").status == 404)
            // The Date header is made per response (no timer keeps it): RFC 9110's form, and now.
            for answer in [page, leaflet, try await fixture.get("/api/nothing")] {
                let date = try #require(
                    answer.header("Date").flatMap { HTTPDate.parse($0) }, "\(answer.header("Date") ?? "no Date header")"
                )
                #expect(abs(date.timeIntervalSinceNow) < 5)
            }
        }
    }

    @Test("state-changing requests need a session and its CSRF token; with both, pause reaches the spool")
    func csrf() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let noSession = try await fixture.post("/api/sharing", ["paused": true])
            #expect(noSession.status == 401)
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            let noToken = try await fixture.post("/api/sharing", ["paused": true], session: session, csrf: false)
            #expect(noToken.status == 403, "\(noToken.text)")
            var forged = session
            forged.csrfToken = String(repeating: "0", count: 64)
            #expect(try await fixture.post("/api/sharing", ["paused": true], session: forged).status == 403)
            #expect(
                try await SpoolReader(path: fixture.paths.spool).status().sharingPaused == false,
                "nothing refused changed anything")
            let paused = try await fixture.post("/api/sharing", ["paused": true], session: session)
            #expect(paused.status == 200, "\(paused.text)")
            #expect(try await SpoolReader(path: fixture.paths.spool).status().sharingPaused == true)
            #expect(try await fixture.post("/api/sharing", ["paused": false], session: session).status == 200)
            #expect(try await SpoolReader(path: fixture.paths.spool).status().sharingPaused == false)
            // The work switch the same way: refused without the token, set with it.
            #expect(try await fixture.post("/api/work", ["on": true], session: session, csrf: false).status == 403)
            #expect(try await SpoolReader(path: fixture.paths.spool).status().workSwitch == nil)
            #expect(try await fixture.post("/api/work", ["on": true], session: session).status == 200)
            #expect(try await SpoolReader(path: fixture.paths.spool).status().workSwitch == true)
            let state = try await fixture.get("/api/state", session: session)
            #expect((state.json?["work"] as? [String: Any])?["switchOn"] as? Bool == true, "\(state.text)")
            #expect((state.json?["work"] as? [String: Any])?["bus"] == nil, "no bus heard")
        }
    }

    @Test(
        "the working width asked in Settings: checked by the configuration key's rule, kept in the spool, shown in the state; the configuration's stands"
    )
    func workingWidth() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            #expect(
                try await fixture.post("/api/working-width", ["metres": 6.5], session: session, csrf: false).status
                    == 403)
            for metres in [0.05, 60.5, -3] {
                let refused = try await fixture.post("/api/working-width", ["metres": metres], session: session)
                #expect(
                    refused.status == 400 && (refused.json?["error"] as? String)?.contains("from 0.1 to 60") == true,
                    "\(metres): \(refused.text)")
            }
            #expect(
                try await SpoolReader(path: fixture.paths.spool).status().workingWidth == nil,
                "nothing refused was kept")
            let set = try await fixture.post("/api/working-width", ["metres": 6.5], session: session)
            #expect(set.status == 200 && set.json?["metres"] as? Double == 6.5, "\(set.text)")
            #expect(try await SpoolReader(path: fixture.paths.spool).status().workingWidth == 6.5)
            #expect(
                try await SpoolReader(path: fixture.paths.spool).workingWidth() == 6.5,
                "the one row `agrigps stats` reads")
            let work = (try await fixture.get("/api/state", session: session)).json?["work"] as? [String: Any]
            #expect(
                work?["width"] as? Double == 6.5 && work?["widthConfigured"] as? Bool == false,
                "\(String(describing: work))")
            let forgotten = try await fixture.post("/api/working-width", ["metres": NSNull()], session: session)
            #expect(forgotten.status == 200, "\(forgotten.text)")
            #expect(try await SpoolReader(path: fixture.paths.spool).status().workingWidth == nil)

            let configured = try await servedBox(workingWidth: 6)
            try await tearingDown({ await configured.stop() }) {
                let other = try #require(CabFixture.session(from: try await configured.get("/api/session")))
                let refused = try await configured.post("/api/working-width", ["metres": 3], session: other)
                #expect(
                    refused.status == 409
                        && (refused.json?["error"] as? String)?.contains("[machine] working_width") == true,
                    "\(refused.text)")
                let shown = (try await configured.get("/api/state", session: other)).json?["work"] as? [String: Any]
                #expect(
                    shown?["width"] as? Double == 6 && shown?["widthConfigured"] as? Bool == true,
                    "\(String(describing: shown))")
            }
        }
    }

    @Test(
        "what the tractor's bus gives reaches the page for Settings: its controllers, each signal, what was not heard")
    func machineBus() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            try fixture.writeHeartbeat(
                onboarded: false,
                machine: Heartbeat.MachineStatus(
                    work: "working", tractorECU: 240, engine: 0,
                    signals: [.init(signal: "rear-hitch", value: "in work, 8 % up", source: 240, ageSeconds: 0.1)],
                    notHeard: ["front-hitch"], busProblem: nil))
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            var bus: [String: Any]?
            for _ in 0..<50 where bus == nil {
                bus =
                    ((try await fixture.get("/api/state", session: session)).json?["work"] as? [String: Any])?["bus"]
                    as? [String: Any]
                if bus == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(
                bus?["tractorECU"] as? Int == 240 && bus?["engine"] as? Int == 0
                    && bus?["notHeard"] as? [String] == ["front-hitch"], "\(String(describing: bus))")
            let signal = (bus?["signals"] as? [[String: Any]])?.first
            #expect(
                signal?["signal"] as? String == "rear-hitch" && signal?["value"] as? String == "in work, 8 % up"
                    && signal?["source"] as? Int == 240)
        }
    }

    @Test("the trail holds our own samples in order; logging out ends the session for good")
    func trackAndLogout() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            let track = try await fixture.get("/api/track", session: session)
            #expect(track.status == 200)
            let own = try #require(track.json?["own"] as? [[Double]])
            #expect(own == [[52.5, 13.4], [52.5001, 13.4], [52.5002, 13.4]], "\(own)")
            #expect((track.json?["others"] as? [String: Any])?.isEmpty == true)

            let logout = try await fixture.post("/api/logout", [:], session: session)
            #expect(logout.status == 200)
            #expect(logout.header("Set-Cookie")?.contains("Max-Age=0") == true)
            let after = try await fixture.post("/api/sharing", ["paused": true], session: session)
            #expect(after.status == 401, "the old cookie opens nothing: \(after.text)")
        }
    }

    @Test("bad input on every endpoint is a 4xx with a message, never a crash")
    func badInput() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            let cases: [(String, Any, Int)] = [
                ("/api/sharing", ["paused": "yes"], 400),
                ("/api/sharing", [1, 2, 3], 400),
                ("/api/work", ["on": "yes"], 400),
                ("/api/work", ["switch": true], 400),
                ("/api/working-width", ["metres": "six"], 400),
                ("/api/working-width", ["width": 6], 400),
                ("/api/working-width", ["metres": 1000], 400),
                ("/api/onboard", ["tan": "ABC DEF", "environment": "qa"], 400),
                ("/api/onboard", ["tan": "<script>", "environment": "qa"], 400),
                ("/api/onboard", ["tan": "ABCDEF1234", "environment": "mars"], 400),
                ("/api/onboard", ["tan": String(repeating: "A", count: 200), "environment": "qa"], 400),
                ("/api/disconnect", ["confirm": false], 400),
                ("/api/disconnect", ["confirm": true], 409),
                ("/api/login", ["password": "whatever1"], 400),
            ]
            for (path, body, status) in cases {
                let reply = try await fixture.post(path, body, session: session)
                #expect(reply.status == status, "\(path) \(body): \(reply.status) \(reply.text)")
                let message = reply.json?["error"] as? String
                #expect(message?.isEmpty == false, "\(path) says why: \(reply.text)")
                #expect(!reply.text.contains("<script>"), "input is not echoed back")
            }
            let notJSON = try await LoopbackHTTP.request(
                "POST", port: fixture.port, path: "/api/sharing",
                headers: ["Cookie": session.cookie, "X-CSRF-Token": session.csrfToken],
                body: Data("paused=1".utf8))
            #expect(
                notJSON.status == 400 && (notJSON.json?["error"] as? String)?.contains("JSON") == true,
                "\(notJSON.text)")
            let huge = try await LoopbackHTTP.request(
                "POST", port: fixture.port, path: "/api/sharing",
                headers: ["Cookie": session.cookie, "X-CSRF-Token": session.csrfToken],
                body: Data(repeating: 0x20, count: 64 * 1024))
            #expect(huge.status == 413, "\(huge.text)")
            #expect(try await fixture.get("/api/state").status == 200, "still serving")
        }
    }

    @Test("without a password, a request naming another host is refused before a session is made (no DNS rebinding)")
    func foreignHost() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let port = fixture.port
            let rebound = [
                "attacker.example:\(port)", "127.attacker.example:\(port)", "127.attacker.example",
                "127.0.0.1.nip.io:\(port)",
                "localhost.attacker:\(port)", "localhost.:\(port)", "127.0.0.1.:\(port)", "127.1:\(port)",
                "0177.0.0.1:\(port)",
                "127.0.0.01:\(port)", "127.0.0.256:\(port)", "2130706433:\(port)", "[::ffff:127.0.0.1]:\(port)",
                "[::1%lo]:\(port)", "[::2]:\(port)", "[::1]x", "127.0.0.1:99999", "127.0.0.1:80x", "127.0.0.1:",
                ":\(port)",
            ]
            for host in rebound {
                let reply = try await fixture.get("/api/session", headers: ["Host": host])
                #expect(reply.status == 421, "Host: \(host) → \(reply.status) \(reply.text)")
                #expect(
                    reply.header("Set-Cookie") == nil && reply.json?["csrfToken"] == nil, "Host: \(host) got a session")
            }
            // With a session and token of a local name, a request under a rebound name still cannot pause.
            let local = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            let pause = try await LoopbackHTTP.post(
                port: port, path: "/api/sharing", json: ["paused": true],
                headers: [
                    "Host": "127.attacker.example:\(port)", "Cookie": local.cookie, "X-CSRF-Token": local.csrfToken,
                ])
            #expect(pause.status == 421, "\(pause.text)")
            #expect(await Spool(path: fixture.paths.spool).isSharingPaused() == false)
            let accepted = [
                "localhost:\(port)", "LOCALHOST", "127.0.0.1:\(port)", "127.0.0.1", "127.3.2.1:8080", "[::1]:\(port)",
                "[::1]",
                "[0:0:0:0:0:0:0:1]:\(port)", "localhost:9000",
            ]
            for host in accepted {
                #expect(try await fixture.get("/api/session", headers: ["Host": host]).status == 200, "Host: \(host)")
            }
        }
    }

    @Test("1,100 connections that send nothing neither lock the page out nor stay open past the idle timeout")
    func idleConnections() async throws {
        let fixture = try CabFixture()
        fixture.configuration.idleTimeout = 3
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            let idle = try IdleConnections(count: 1_100, port: fixture.port)
            defer { idle.close() }
            let clock = ContinuousClock()
            let started = clock.now
            let reply = try await fixture.get("/api/state", headers: ["Connection": "close"])
            let took = clock.now - started
            #expect(reply.status == 200, "\(reply.text)")
            #expect(took < .seconds(2), "answered after \(took) behind 1,100 idle connections")
            print(
                "cab view behind 1,100 idle connections: answered in \(took), \(idle.closedByServer()) of them closed at once by the cap"
            )
            // The cap closed the oldest at once; the idle timeout closes the rest.
            #expect(idle.closedByServer() >= 1_100 - 512)
            let deadline = clock.now + .seconds(15)
            while idle.closedByServer() < 1_100, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
            }
            #expect(idle.closedByServer() == 1_100, "silent connections still open after the 3 s idle timeout")
            #expect(try await fixture.get("/api/state").status == 200)
        }
    }

    @Test("the event stream sends the state at once and a new sample within a second or two")
    func events() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let spool = Spool(path: fixture.paths.spool)
            let appender = Task {
                try await Task.sleep(for: .milliseconds(600))
                _ = await spool.append(Samples.fix(latitude: 48.1234567, longitude: 11.5, quality: .rtkFloat))
            }
            let started = Date()
            let text = try await LoopbackHTTP.stream(
                port: fixture.port, path: "/api/events", headers: ["Accept": "text/event-stream"], timeout: 10
            ) {
                $0.contains("48.1234567")
            }
            _ = try await appender.value
            #expect(text.contains("event: state"))
            #expect(text.contains("48.1234567"), "the new sample reached the stream")
            #expect(text.contains("rtk_float"))
            #expect(Date().timeIntervalSince(started) < 5)
        }
    }

    @Test("with a password: reading needs a login, a wrong one is refused, the right one opens a session")
    func password() async throws {
        let fixture = try CabFixture()
        try await tearingDown({ await fixture.stop() }) {
            let time = ManualClock(startingAt: 1_800_000_000)
            fixture.configuration.loginClock = { time.now() }
            try PasswordFile(directory: fixture.directory).set("correct horse")
            let stored = try String(contentsOfFile: fixture.directory + "/web-password", encoding: .utf8)
            #expect(!stored.contains("correct horse") && stored.hasPrefix("pbkdf2-sha256$"))
            let mode =
                try FileManager.default.attributesOfItem(atPath: fixture.directory + "/web-password")[.posixPermissions]
                as? Int
            #expect(mode == 0o600)
            try await fixture.start()
            #expect(try await fixture.get("/api/state").status == 401)
            let anonymous = try await fixture.get("/api/session")
            #expect(anonymous.json?["loggedIn"] as? Bool == false && anonymous.header("Set-Cookie") == nil)
            let wrong = try await fixture.post("/api/login", ["password": "wrong horse"])
            #expect(wrong.status == 401 && wrong.header("Retry-After") == "1", "\(wrong.headers)")
            let tooSoon = try await fixture.post("/api/login", ["password": "correct horse"])
            #expect(
                tooSoon.status == 429 && tooSoon.header("Set-Cookie") == nil,
                "a try within the wait is not even checked")
            time.advance(by: 1)
            let right = try await fixture.post("/api/login", ["password": "correct horse"])
            #expect(right.status == 200, "\(right.text)")
            let session = try #require(CabFixture.session(from: right))
            #expect(try await fixture.get("/api/state", session: session).status == 200)
            #expect(
                try await fixture.get(
                    "/api/state", headers: ["Cookie": "agrigps_session=" + String(repeating: "a", count: 64)]
                ).status == 401)
        }
    }

    @Test(
        "1,000 parallel wrong logins cost one hash each wait, get nowhere, survive a restart, and leave the driver's session alone"
    )
    func guessingFlood() async throws {
        let fixture = try CabFixture()
        try await tearingDown({ await fixture.stop() }) {
            // The waits are kept by a clock that stands still unless moved: none runs out by itself.
            let time = ManualClock(startingAt: 1_800_000_000)
            fixture.configuration.loginClock = { time.now() }
            try PasswordFile(directory: fixture.directory).set("correct horse")
            try await fixture.start()
            let driver = try #require(
                CabFixture.session(from: try await fixture.post("/api/login", ["password": "correct horse"])))
            let before = CPUTime.ofThisProcess()
            let clock = ContinuousClock()
            let started = clock.now
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for guess in 0..<1_000 {
                    group.addTask {
                        // Beyond the server's connection cap, a connection not yet asking is shed: the
                        // guess is reset before it is read (0 here), which gets it nowhere either.
                        do {
                            return try await fixture.post("/api/login", ["password": "guess \(guess)"]).status
                        } catch let error as LoopbackHTTPError
                            where ["recv: 104", "send: 104", "send: 32"].contains(error.description)
                        {
                            return 0
                        }
                    }
                }
                return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
            }
            let took = clock.now - started
            let cpu = CPUTime.ofThisProcess() - before
            #expect(statuses[200] == nil, "a guess got in: \(statuses)")
            // One guess is checked, then one after each wait; the waits' clock stood still, so exactly one.
            #expect(
                statuses[401] == 1
                    && (statuses[401] ?? 0) + (statuses[429] ?? 0) + (statuses[0] ?? 0) == 1_000,
                "\(statuses) in \(took)")
            #expect((statuses[429] ?? 0) > (statuses[0] ?? 0), "most guesses are answered, not shed: \(statuses)")
            #expect(cpu < 5, "1,000 wrong logins took \(cpu) s of CPU in \(took)")
            print(
                "1,000 parallel wrong logins: \(statuses), \(took), \(String(format: "%.2f", cpu)) s of CPU (server and client)"
            )
            // The guesser must wait even with the right password; the driver's session goes on.
            #expect(try await fixture.post("/api/login", ["password": "correct horse"]).status == 429)
            #expect(try await fixture.get("/api/state", session: driver).status == 200)
            // A restart of the server forgets nothing.
            await fixture.stop(keepingDirectory: true)
            try await fixture.start()
            let afterRestart = try await fixture.post("/api/login", ["password": "correct horse"])
            #expect(
                afterRestart.status == 429 && Int(afterRestart.header("Retry-After") ?? "") ?? 0 >= 1,
                "\(afterRestart.text)")
        }
    }

    @Test(
        "a client that guessed waits longer with each failure; another client still logs in; the global cap spares clean clients"
    )
    func throttleRules() async throws {
        let temporary = TemporaryDirectory("login")
        let directory = temporary.path
        let time = ManualClock(startingAt: 1_800_000_000)
        let throttle = LoginThrottle(
            path: directory + "/web-logins.json", globalFailuresPerMinute: 3, now: { time.now() })
        #expect(await throttle.attempt("10.0.0.9", verify: { false }) == .wrong(retryAfter: 1))
        time.advance(by: 1)
        #expect(await throttle.attempt("10.0.0.9", verify: { false }) == .wrong(retryAfter: 2))
        time.advance(by: 1)
        #expect(
            await throttle.attempt("10.0.0.9", verify: { true }) == .tooSoon(retryAfter: 1),
            "the right password within the wait is not checked")
        time.advance(by: 1)
        #expect(await throttle.attempt("10.0.0.9", verify: { false }) == .wrong(retryAfter: 4))
        #expect(await throttle.attempt("10.0.0.7", verify: { true }) == .accepted, "another client is not held up")
        // Three failures this minute: the global cap is reached. A client that guessed before waits; a clean one is checked.
        time.advance(by: 4)
        if case .tooSoon = await throttle.attempt("10.0.0.9", verify: { true }) {
        } else {
            Issue.record("the cap let a known guesser be checked")
        }
        #expect(await throttle.attempt("10.0.0.8", verify: { true }) == .accepted)
        #expect(LoginThrottle.delay(after: 30) == 900, "at most 15 minutes")
        // Written down: a new throttle on the same file remembers.
        let again = LoginThrottle(path: directory + "/web-logins.json", now: { time.now() })
        #expect(await again.failures(of: "10.0.0.9") == 3)
        let mode =
            try FileManager.default.attributesOfItem(atPath: directory + "/web-logins.json")[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test(
        "a global IPv6 /64 elsewhere is one client to the throttle and the sessions; the box's own links, IPv4, loopback and mapped addresses are their own"
    )
    func clientsByNetwork() throws {
        let client = { (address: String) throws in CabContext.client(try SocketAddress(ipAddress: address, port: 8080))
        }
        #expect(try client("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64")
        #expect(
            try client("2001:db8:1:2:ffff:1234:5678:9abc") == "2001:db8:1:2::/64", "another host part, the same network"
        )
        #expect(try client("2001:db8:1:3::1") == "2001:db8:1:3::/64")
        #expect(try client("fe80::1") == "fe80::1", "a link-local peer is on the box's own link")
        #expect(try client("fd12:3456:789a:1::5") == "fd12:3456:789a:1::5", "a unique local address too")
        let local = try SocketAddress(ipAddress: "2001:db8:1:2::1", port: 8080)
        #expect(
            CabContext.client(try SocketAddress(ipAddress: "2001:db8:1:2:aaaa::1", port: 1), local: local)
                == "2001:db8:1:2:aaaa::1",
            "a peer in the box's own /64 is the cab's Wi-Fi: each device its own client")
        #expect(try client("::1") == "::1")
        #expect(try client("::ffff:192.168.1.20") == "::ffff:192.168.1.20")
        #expect(try client("192.168.1.20") == "192.168.1.20")
        #expect(CabContext.client(nil) == "unknown")
    }

    @Test("300 new sessions from this machine do not push out the session the cab's browser is using")
    func sessionFlood() async throws {
        let fixture = try await servedBox()
        try await tearingDown({ await fixture.stop() }) {
            let driver = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            #expect(try await fixture.get("/api/state", session: driver).status == 200)
            for _ in 0..<300 {
                #expect(try await fixture.get("/api/session").status == 200)
            }
            let still = try await fixture.get("/api/session", session: driver)
            #expect(still.json?["csrfToken"] as? String == driver.csrfToken, "the driver's session was pushed out")
        }
    }

    @Test("the listener refuses to bind beyond loopback without a password, and says how to set one")
    func exposure() throws {
        let temporary = TemporaryDirectory("cab")
        let directory = temporary.path
        var configuration = CabConfiguration(
            paths: StatusSnapshot.Paths(stateDirectory: directory, spool: "", others: "", heartbeat: ""))
        configuration.host = "0.0.0.0"
        #expect(throws: PasswordError.self) { try configuration.checkExposure() }
        do {
            try configuration.checkExposure()
        } catch {
            #expect(error.description.contains("agrigps web set-password"))
        }
        try PasswordFile(directory: directory).set("a long enough one")
        try configuration.checkExposure()
        configuration.host = "127.0.0.1"
        try FileManager.default.removeItem(atPath: directory + "/web-password")
        try configuration.checkExposure()
        #expect(throws: PasswordError.self) { try PasswordFile(directory: directory).set("short") }
    }

    @Test("the password file's hex is lower case, two digits a byte, and reads back")
    func passwordHex() {
        let bytes: [UInt8] = [0x00, 0x0F, 0xA5, 0xFF, 0x10]
        #expect(PasswordFile.hex(bytes) == "000fa5ff10")
        #expect(PasswordFile.bytes(hex: PasswordFile.hex(bytes)) == bytes)
        #expect(PasswordFile.hex([]) == "")
        #expect(Sessions.token()?.count == 64)
    }

    @Test(
        "onboarding through the page stores the credentials as the CLI does; a bad TAN gets agrirouter's code and advice; no secret in any answer"
    )
    func onboarding() async throws {
        let (fixture, simulator) = try await CabFixture.notOnboarded(localAgrirouterTAN: "CAB0000001")
        try await tearingDown({
            await fixture.stop()
            await simulator.shutdown()
        }) {
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            var answers: [String] = []

            let refused = try await fixture.post(
                "/api/onboard", ["tan": "WRONG00001", "environment": "local"], session: session)
            answers.append(refused.text)
            #expect(refused.status == 422, "\(refused.text)")
            let message = refused.json?["error"] as? String ?? ""
            #expect(message.contains("0401") && message.contains("create a new one in the agrirouter UI"), "\(message)")
            #expect(!message.contains("WRONG00001"), "the TAN is never echoed back")

            let onboarded = try await fixture.post(
                "/api/onboard", ["tan": "CAB0000001", "environment": "local"], session: session)
            answers.append(onboarded.text)
            #expect(onboarded.status == 200, "\(onboarded.text)")
            let stored = try #require(try CredentialStore(directory: fixture.directory).load())
            #expect(stored.environment == "local")
            let secret = stored.response.authentication.secret
            #expect(secret.count > 8)

            // The page's state now says onboarded, with the certificate's date and the QA/Production choice
            // locked: as soon as the monitor's next look sees the credentials (every 0.25 s; later on a
            // busy machine).
            var state = try await fixture.get("/api/state", session: session)
            let deadline = ContinuousClock.now + .seconds(10)
            while (state.json?["settings"] as? [String: Any])?["onboarded"] as? Bool != true,
                ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(100))
                state = try await fixture.get("/api/state", session: session)
            }
            answers.append(state.text)
            let settings = try #require(state.json?["settings"] as? [String: Any])
            #expect(settings["onboarded"] as? Bool == true && settings["environment"] as? String == "local")
            #expect((settings["certificateValidUntil"] as? String)?.count == 10)

            let other = try await fixture.post(
                "/api/onboard", ["tan": "CAB0000002", "environment": "qa"], session: session)
            #expect(other.status == 409, "onboarded elsewhere: disconnect first: \(other.text)")
            let disconnected = try await fixture.post("/api/disconnect", ["confirm": true], session: session)
            answers.append(disconnected.text)
            #expect(disconnected.status == 200)
            #expect(try CredentialStore(directory: fixture.directory).load() == nil)
            answers.append(try await fixture.get("/api/track", session: session).text)
            answers.append(try await fixture.get("/", session: session).text)
            for answer in answers {
                #expect(!answer.contains(secret), "the key's secret is in no answer")
                #expect(!answer.contains("PRIVATE KEY") && !answer.contains("CAB0000001"), "no key, no TAN")
            }
        }
    }
}
