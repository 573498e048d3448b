import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import CabView
import Foundation
import Spool
import StateView
import TestSupport
import Testing

/// The cab view in a real headless Chromium, against gateways that replay recorded logs through a
/// real gpsd and talk to the local agrirouter.
@Suite("Cab view in a browser", .serialized, .timeLimit(.minutes(5)))
struct CabBrowserTests {
    /// Where screenshots are kept for a person to look at (git-ignored).
    static let artefacts = Fixtures.root.appendingPathComponent(".build/artefacts/cab-view").path

    /// Two onboarded machines: the harvester has shared a log; the tractor replays telit-he910 in real
    /// time, moved to now, as a live receiver. The cab view serves the tractor's state directory.
    final class Field: @unchecked Sendable {
        let simulator: AgrirouterSimulator
        let scratch = TemporaryDirectory("field")
        let root: String
        let tractor: String
        let fixture: CabFixture
        var daemon: AgrigpsCommand?

        init() async throws {
            simulator = try await AgrirouterSimulator.start(
                SimConfiguration(tans: ["FIELD00001": "Tractor", "FIELD00002": "Harvester"]))
            root = scratch.path
            tractor = root + "/tractor"
            try simulator.caCertificatePEM.write(toFile: root + "/ca.pem", atomically: true, encoding: .utf8)
            try "[others]\nstale_after = 10\n".write(toFile: root + "/agrigps.conf", atomically: true, encoding: .utf8)
            fixture = try CabFixture(stateDirectory: tractor)
            fixture.configuration.thresholds.staleAfter = 10
        }

        func onboard(_ tan: String, _ directory: String) async throws {
            let result = try await AgrigpsCommand.run([
                "onboard", "--tan", tan, "--env", "local", "--onboarding-url", simulator.onboardingURL,
                "--ca-file", root + "/ca.pem", "--application-id", "app",
                "--certification-version-id", "version", "--state-dir", directory,
            ])
            #expect(result.code == 0, "\(result.stderr)")
        }

        func replay(_ log: String, _ directory: String) async throws {
            let result = try await AgrigpsCommand.run(
                [
                    "run", "--replay", Fixtures.log(log), "--spacing", "0.2", "--config", root + "/agrigps.conf",
                    "--state-dir", directory,
                ], timeout: 120)
            #expect(result.code == 0, "\(result.stderr.suffix(5))")
        }

        /// Sets the field up: the tractor subscribes, the harvester shares, the tractor runs live.
        func start() async throws {
            try await onboard("FIELD00001", tractor)
            try await onboard("FIELD00002", root + "/harvester")
            try await replay("ublox-lea-4h", tractor)
            try await replay("nmea-rtk", root + "/harvester")
            daemon = try AgrigpsCommand([
                "run", "--replay", Fixtures.log("telit-he910"), "--retime", "--spacing", "0.2", "--send-interval", "1",
                "--config", root + "/agrigps.conf", "--state-dir", tractor,
            ])
            try await fixture.start()
        }

        /// The daemon (and its gpsd), the page's server and the simulator, each stopped and awaited.
        func close() async {
            if let daemon {
                daemon.process.terminate(grace: 3)
                daemon.cleanUp()
            }
            await fixture.stop()
            scratch.remove()
            await simulator.shutdown()
        }

        var url: String { "http://127.0.0.1:\(fixture.port)/" }
    }

    /// Every position gpsd reported for `log`, from its expected output.
    static func replayedPositions(_ log: String) throws -> [(Double, Double)] {
        try TPVFields.fromCheckFile(Fixtures.log(log) + ".chk").compactMap { fields in
            guard let latitude = fields.lat, let longitude = fields.lon else { return nil }
            return (latitude, longitude)
        }
    }

    static func save(_ png: Data, as name: String) throws -> String {
        try FileManager.default.createDirectory(atPath: artefacts, withIntermediateDirectories: true)
        let path = artefacts + "/" + name
        try png.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test(
        "own marker at the replayed position; the other machine by name, grey once stale; pause and status agree both ways; screenshots not blank"
    )
    func mapPauseAndScreenshots() async throws {
        let field = try await Field()
        try await tearingDown({ await field.close() }) {
            try await field.start()
            let browser = try await WebDriver(width: 1280, height: 800)
            defer { browser.close() }
            try await browser.open(field.url)

            // Our marker appears, and it sits where gpsd said the replayed receiver was.
            #expect(
                try await browser.wait(
                    timeout: 30,
                    for: "return !!(window.cab && cab.own && cab.state && cab.state.sharing.state === 'sharing')"))
            let marker = try #require(
                try await browser.run("const p = cab.own.getLatLng(); return [p.lat, p.lng, cab.own.options.fix];")
                    as? [Any])
            let (latitude, longitude) = (try #require(marker[0] as? Double), try #require(marker[1] as? Double))
            let positions = try Self.replayedPositions("telit-he910")
            #expect(
                positions.contains { abs($0.0 - latitude) < 1e-7 && abs($0.1 - longitude) < 1e-7 },
                "marker at \(latitude), \(longitude)")
            #expect(marker[2] as? String != "none")

            // The harvester appears by name and, 10 s after its last message, turns grey.
            #expect(
                try await browser.wait(
                    timeout: 30,
                    for: """
                        return Object.values(cab.others).some(m => m.options.name === 'Harvester') &&
                               Array.from(document.querySelectorAll('.other-label')).some(e => e.textContent === 'Harvester')
                        """))
            #expect(
                try await browser.wait(
                    timeout: 40,
                    for: """
                        return Object.values(cab.others).some(m => m.options.name === 'Harvester' && m.options.stale && m.options.fillColor === '#9a9a9a') &&
                               Array.from(document.querySelectorAll('.other-label.stale')).some(e => e.textContent === 'Harvester')
                        """), "the harvester turned grey")

            // The page's pause shows in `agrigps status`; the CLI's resume shows on the page.
            try await browser.click("#pause")
            #expect(
                try await browser.wait(
                    timeout: 10, for: "return document.getElementById('sharing').dataset.state === 'paused'"))
            let paused = try await AgrigpsCommand.run([
                "status", "--state-dir", field.tractor, "--config", field.root + "/agrigps.conf",
            ])
            #expect(paused.stdout.contains { $0.hasPrefix("Sharing: PAUSED") }, "\(paused.stdout)")
            // The receipt: since when, and the positions of the pause kept on the box (the replay samples every second).
            let receipt = #"/^Paused since \d\d:\d\d · [1-9]\d* positions? kept on this box, not sent$/"#
            let receiptShown = try await browser.wait(
                timeout: 10, for: "return \(receipt).test(document.getElementById('sharing').textContent)")
            let receiptText = try await browser.text("#sharing")
            #expect(receiptShown, "\(receiptText)")
            try await browser.run(
                "window.notices = []; const shown = window.toast; window.toast = words => { notices.push(words); shown(words); };"
            )
            let resumed = try await AgrigpsCommand.run(["resume", "--state-dir", field.tractor])
            #expect(resumed.code == 0)
            #expect(
                try await browser.wait(
                    timeout: 10, for: "return document.getElementById('sharing').dataset.state === 'sharing'"))
            let resumeNoticed = try await browser.wait(
                timeout: 10,
                for:
                    "return notices.some(words => /^Sharing again · [1-9]\\d* positions? from the pause stays? here$/.test(words))"
            )
            let notices = try await browser.run("return notices")
            #expect(resumeNoticed, "\(String(describing: notices))")
            #expect(try await browser.text("#pause") == "Pause sharing")
            let active = try await AgrigpsCommand.run([
                "status", "--state-dir", field.tractor, "--config", field.root + "/agrigps.conf",
            ])
            #expect(active.stdout.contains("Sharing: active"), "\(active.stdout)")

            // The work switch of a machine without a bus: off and silent at first; on from the page, the
            // samples carry a work state, the header says it and status has it; off from the CLI.
            #expect(try await browser.text("#work-switch") == "Not working")
            #expect(
                try await browser.run("return document.getElementById('field').hidden") as? Bool == true,
                "nothing says what the machine does")
            try await browser.click("#work-switch")
            #expect(
                try await browser.wait(
                    timeout: 10,
                    for: "return document.getElementById('work-switch').getAttribute('aria-pressed') === 'true'"))
            #expect(try await browser.text("#work-switch") == "Working")
            let chipShown = try await browser.wait(
                timeout: 10,
                for: """
                    const chip = document.getElementById('field');
                    return !chip.hidden && ['Working', 'Not working'].includes(chip.textContent) && chip.dataset.work === cab.state.work.state;
                    """)
            let chip = try await browser.run(
                "const chip = document.getElementById('field'); return [chip.textContent, chip.dataset.work, cab.state.own && cab.state.own.speed]"
            )
            #expect(chipShown, "\(String(describing: chip))")
            let switched = try await AgrigpsCommand.run([
                "status", "--state-dir", field.tractor, "--config", field.root + "/agrigps.conf",
            ])
            #expect(
                switched.stdout.contains { $0.hasPrefix("Machine: ") && $0.contains("work switch on") },
                "\(switched.stdout)")
            #expect(try await AgrigpsCommand.run(["work", "off", "--state-dir", field.tractor]).code == 0)
            #expect(
                try await browser.wait(
                    timeout: 10,
                    for: """
                        return document.getElementById('work-switch').getAttribute('aria-pressed') === 'false' &&
                               document.getElementById('work-switch').textContent === 'Not working'
                        """))

            // The working width, asked once in Settings: kept on the box, where `agrigps stats` finds it.
            #expect(try await browser.openCabTab("settings"))
            try await browser.type("6,5", into: "#working-width")
            try await browser.click("#working-width-save")
            let widthNoted = try await browser.wait(
                timeout: 10,
                for: """
                    return document.getElementById('working-width-note').textContent === 'Working width 6.5 m: Records show the area worked.'
                    """)
            let note = try await browser.text("#working-width-note")
            #expect(widthNoted, "\(note)")
            let stats = try await AgrigpsCommand.run([
                "stats", "--json", "--by", "year", "--since", "2000-01-01", "--state-dir", field.tractor,
                "--config", field.root + "/agrigps.conf",
            ])
            let years =
                (try JSONSerialization.jsonObject(with: Data(stats.stdout.joined().utf8)) as? [String: Any])?["periods"]
                as? [[String: Any]]
            #expect(
                years?.isEmpty == false && years?.allSatisfy { $0["hectares_worked"] is Double } == true,
                "\(stats.stdout)")
            #expect(try await browser.openCabTab("map"))

            // Screenshots at the tablet's size here and the phone's in a second browser; neither blank.
            try await browser.click("#fit")
            try await Task.sleep(for: .milliseconds(500))
            let tablet = try Self.save(try await browser.screenshot(), as: "map-1280x800.png")
            let phoneBrowser = try await WebDriver(width: 360, height: 640)
            defer { phoneBrowser.close() }
            try await phoneBrowser.open(field.url)
            #expect(
                try await phoneBrowser.wait(
                    timeout: 20, for: "return !!(window.cab && cab.own && Object.keys(cab.others).length > 0)"))
            try await phoneBrowser.click("#fit")
            try await Task.sleep(for: .milliseconds(500))
            let phone = try Self.save(try await phoneBrowser.screenshot(), as: "map-360x640.png")
            let width = try await phoneBrowser.run("return [window.innerWidth, window.innerHeight]") as? [Int]
            #expect(width == [360, 640], "the phone's viewport: \(String(describing: width))")
            for path in [tablet, phone] {
                let variety = try await PNGCheck.variety(of: path)
                #expect(variety.dominantShare < 0.97 && variety.colours > 20, "\(path) is not blank: \(variety)")
            }
            await phoneBrowser.quit()
            await browser.quit()
        }
    }

    @Test(
        "settings: a bad TAN shows agrirouter's code and advice; a good one onboards; the choice locks; disconnect asks first"
    )
    func settings() async throws {
        let (fixture, simulator) = try await CabFixture.notOnboarded(localAgrirouterTAN: "SETTINGS01")
        try await tearingDown({
            await fixture.stop()
            await simulator.shutdown()
        }) {
            let browser = try await WebDriver(width: 1280, height: 800)
            defer { browser.close() }
            try await browser.open("http://127.0.0.1:\(fixture.port)/")
            #expect(try await browser.wait(timeout: 20, for: "return !!(window.cab && cab.state)"))
            try await browser.click("#tabs button[data-tab='settings']")
            #expect(try await browser.wait(timeout: 5, for: "return !document.getElementById('environment').disabled"))
            try await browser.run("document.getElementById('environment').value = 'local'")

            try await browser.type("WRONG12345", into: "#tan")
            try await browser.click("#onboard")
            #expect(try await browser.wait(timeout: 20, for: "return !document.getElementById('dialog').hidden"))
            // In words first; agrirouter's code and advice below, for whoever helps; the TAN kept to be corrected.
            let refusal = try await browser.text("#dialog-text")
            #expect(refusal.hasPrefix("agrirouter did not take this TAN"), "\(refusal)")
            let details = try await browser.text("#dialog-details")
            #expect(details.contains("0401") && details.contains("create a new one in the agrirouter UI"), "\(details)")
            #expect(!refusal.contains("WRONG12345") && !details.contains("WRONG12345"))
            #expect(
                try await browser.run("return document.getElementById('tan').value") as? String == "WRONG12345",
                "a refused TAN stays in its field")
            try await browser.click("#dialog-ok")

            try await browser.type("SETTINGS01", into: "#tan")
            try await browser.click("#onboard")
            // The running gateway (this fixture's heartbeat) has not taken the credentials, as one
            // replaying a recording never does: the page does not say "Connected".
            #expect(
                try await browser.wait(
                    timeout: 20,
                    for:
                        "return document.getElementById('endpoint').textContent.includes('the gateway has not started with it yet')"
                ))
            // as the daemon restarted with them writes it
            try fixture.writeHeartbeat(onboarded: true, environment: "local")
            #expect(
                try await browser.wait(
                    timeout: 20,
                    for:
                        "return document.getElementById('endpoint').textContent.includes('Connected to agrirouter (local)')"
                ))
            #expect(
                try await browser.run("return document.getElementById('environment').disabled") as? Bool == true,
                "locked while onboarded")
            #expect(
                try await browser.run("return document.getElementById('tan').value") as? String == "",
                "the TAN is not kept in the page")
            #expect(try CredentialStore(directory: fixture.directory).load()?.environment == "local")

            try await browser.click("#disconnect")
            #expect(try await browser.wait(timeout: 5, for: "return !document.getElementById('dialog').hidden"))
            #expect(try await browser.text("#dialog-text").contains("Disconnect this machine"))
            try await browser.click("#dialog-cancel")
            try await Task.sleep(for: .milliseconds(300))
            #expect(try CredentialStore(directory: fixture.directory).load() != nil, "cancel removes nothing")
            try await browser.click("#disconnect")
            #expect(try await browser.wait(timeout: 5, for: "return !document.getElementById('dialog').hidden"))
            try await browser.click("#dialog-ok")
            #expect(
                try await browser.wait(
                    timeout: 10,
                    for:
                        "return document.getElementById('endpoint').textContent.startsWith('Not connected to agrirouter')"
                ))
            #expect(try CredentialStore(directory: fixture.directory).load() == nil)
            _ = try Self.save(try await browser.screenshot(), as: "settings-1280x800.png")
            await browser.quit()
        }
    }
}
