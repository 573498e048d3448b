import CabView
import Foundation
import GNSS
import GPSDReplay
import Spool
import StateDirectory
import StateView
import Synchronization
import TestSupport
import Testing

/// The page's red and status's CRITICAL are one rule, and the page's silence watch has a stream to
/// watch: the box sends the state at every look.
@Suite("the cab view's label and stream tell the truth")
struct CabTruthTests {
    static func source(_ name: String) throws -> String {
        try String(
            contentsOfFile: Fixtures.root.appendingPathComponent("Sources/CabView/Page/\(name)").path, encoding: .utf8)
    }

    @Test(
        "the label's red states in the style sheet and the banner's act-now states are those status calls CRITICAL, and the lost box"
    )
    func redIsCritical() throws {
        let critical = Set(SharingIndicator.State.allCases.filter { $0.health == .critical }.map(\.rawValue)).union([
            "lost"
        ])
        let css = try Self.source("app.css")
        let rule = try #require(
            css.split(separator: "\n").first { $0.contains("var(--state-alert-bg)") && $0.hasPrefix("#sharing") })
        let red = try CabLanguageTests.matches(#"data-state="([a-z_]+)""#, in: String(rule))
        #expect(red == critical, "\(rule)")
        let script = try Self.source("app.js")
        let list = try #require(
            script.range(of: #"const alarm = \[[^\]]*\]"#, options: .regularExpression).map { String(script[$0]) })
        #expect(try CabLanguageTests.matches(#""([a-z_]+)""#, in: list) == critical, "\(list)")
    }

    @Test(
        "with nothing changing, the event stream still sends the state every 5 s: the page's silence watch counts on it"
    )
    func streamNeverQuiet() async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        _ = await Spool(path: fixture.paths.spool).append(Samples.fix(latitude: 52.5, longitude: 13.4))
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            let arrivals = Mutex<[ContinuousClock.Instant]>([])
            let started = ContinuousClock.now
            _ = try await LoopbackHTTP.stream(
                port: fixture.port, path: "/api/events", headers: ["Accept": "text/event-stream"], timeout: 13
            ) { text in
                let states = text.components(separatedBy: "event: state\n").count - 1
                arrivals.withLock { seen in
                    while seen.count < states { seen.append(.now) }
                }
                return false
            }
            let times = [started] + arrivals.withLock { $0 }
            let gaps = zip(times, times.dropFirst()).map { ($1 - $0) / .seconds(1) }
            #expect(times.count >= 3, "\(gaps)")
            #expect(gaps.allSatisfy { $0 <= 6 }, "seconds between states: \(gaps)")
        }
    }
}

/// The page when the box stops answering without a word: its page process frozen (SIGSTOP), as a
/// box whose Wi-Fi drops silently leaves it. The connection stays open and nothing comes.
@Suite("the cab view when the box goes quiet, in a browser", .serialized, .timeLimit(.minutes(3)))
struct CabLostBoxTests {
    @Test(
        "frozen, the page says within 10 s, in red and in both languages, since when it has not heard the box, and hides the fix; it comes back by itself"
    )
    func frozenBox() async throws {
        let temporary = TemporaryDirectory("lost")
        let state = temporary.path
        try "[web]\ntiles = \"none\"\n".write(toFile: state + "/agrigps.conf", atomically: true, encoding: .utf8)
        // A daemon that is this process, and a fix at 9 km/h.
        var heartbeat = Heartbeat(pid: getpid(), startedAt: Date().addingTimeInterval(-60), onboarded: false)
        heartbeat.updatedAt = Date()
        try heartbeat.write(to: state + "/heartbeat.json")
        let moving = PositionSample(
            sampledAt: Date(), state: .fix(.threeD, .rtkFixed),
            report: PositionReport(
                time: Date(), gpsdMode: 3, gpsdStatus: 2, latitude: 52.5, longitude: 13.4,
                speed: 2.5, track: 90, satellitesUsed: 14))
        _ = await Spool(path: state + "/spool.sqlite").append(moving)

        let port = Int(try ReplayGPSD.freeLoopbackPort())
        let web = try AgrigpsCommand([
            "web", "--listen", "127.0.0.1:\(port)", "--config", state + "/agrigps.conf", "--state-dir", state,
        ])
        defer {
            kill(web.process.pid, SIGCONT)
            if web.process.isRunning() { web.process.terminate(grace: 1) }
            web.cleanUp()
        }
        #expect(await web.waitForOutput(timeout: 20) { $0.contains("serving the cab view at") }, "\(web.stderr)")
        let browser = try await WebDriver(width: 1280, height: 800)
        defer { browser.close() }
        try await browser.open("http://127.0.0.1:\(port)/")
        let live =
            "return !!(window.cab && cab.state) && document.getElementById('sharing').dataset.state !== 'lost' && /RTK.* · 9 km\\/h$/.test(document.getElementById('own-info').textContent) && !cab.own.options.old"
        let started = try await browser.wait(timeout: 20, for: live)
        let info = try await browser.text("#own-info")
        #expect(started, "\(info)")

        for (language, words) in [
            ("en", #"^Connection to the box lost since \d\d:\d\d$"#),
            ("de", #"^Verbindung zur Box verloren seit \d\d:\d\d$"#),
        ] {
            if language == "de" {
                try await browser.run("document.getElementById('language').value = 'de'; chooseLanguage();")
                #expect(
                    try await browser.wait(
                        timeout: 10,
                        for:
                            "return document.documentElement.lang === 'de' && /RTK Fix/.test(document.getElementById('own-info').textContent)"
                    ))
            }
            #expect(kill(web.process.pid, SIGSTOP) == 0)
            let frozen = ContinuousClock.now
            let said = try await browser.wait(
                timeout: 10, for: "return document.getElementById('sharing').dataset.state === 'lost'")
            let after = (ContinuousClock.now - frozen) / .seconds(1)
            let label = try await browser.text("#sharing")
            #expect(said, "\(language): still \"\(label)\" after \(after) s")
            #expect(label.range(of: words, options: .regularExpression) != nil, "\(language): \(label)")
            // The fix words were the box's last word, not the machine's state now: gone; the banner says what to check.
            let hidden = try await browser.text("#own-info")
            #expect(!hidden.contains("RTK") && !hidden.contains("km/h"), "\(language): \(hidden)")
            #expect(
                try await browser.run("return cab.own.options.old && cab.own.options.fix === 'none'") as? Bool == true,
                "the marker drawn as an old position")
            #expect(
                try await browser.run(
                    "return !document.getElementById('banner').hidden && document.getElementById('banner').className === ''"
                ) as? Bool == true)
            #expect(try await browser.run("return document.getElementById('pause').disabled") as? Bool == true)
            _ = try CabBrowserTests.save(try await browser.screenshot(), as: "lost-\(language)-1280x800.png")

            // Woken, the box's stream goes on where it stopped and the page with it.
            #expect(kill(web.process.pid, SIGCONT) == 0)
            let back = try await browser.wait(timeout: 10, for: live)
            let again = try await browser.text("#sharing")
            #expect(back, "\(language): \(again)")
        }
        await browser.quit()
    }
}
