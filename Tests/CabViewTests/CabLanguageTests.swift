import CabView
import Foundation
import StateView
import TestSupport
import Testing

/// The page speaks German and English from one catalogue per language. A string missing in one,
/// a German string left in English by mistake, or a placeholder lost in translation fails here,
/// before anyone in a cab sees a key or an English word on a German page.
@Suite("the cab view's words in German and English")
struct CabLanguageTests {
    struct Catalogue {
        var language: String
        var same: Set<String>
        var strings: [String: String]

        init(_ language: String) throws {
            let path = Fixtures.root.appendingPathComponent("Sources/CabView/Page/lang/\(language).json").path
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
            self.language = try #require(object["language"] as? String)
            same = Set(object["same"] as? [String] ?? [])
            strings = try #require(object["strings"] as? [String: String])
        }
    }

    static func source(_ name: String) throws -> String {
        try String(
            contentsOfFile: Fixtures.root.appendingPathComponent("Sources/CabView/Page/\(name)").path, encoding: .utf8)
    }

    static func matches(_ pattern: String, in text: String) throws -> Set<String> {
        let expression = try NSRegularExpression(pattern: pattern)
        let range = NSRange(text.startIndex..., in: text)
        return Set(
            expression.matches(in: text, range: range).compactMap { match in
                Range(match.range(at: 1), in: text).map { String(text[$0]) }
            })
    }

    /// "{count} positions" → ["count"].
    static func placeholders(_ text: String) throws -> Set<String> {
        try matches(#"\{(\w+)\}"#, in: text)
    }

    /// Every key the page asks for by name: in the HTML's data-i18n attributes and app.js's t("…")
    /// calls. Keys made up at run time (a state's, a fix's) are checked by their families below.
    static func keysUsed() throws -> Set<String> {
        let html = try source("index.html")
        let script = try source("app.js").split(separator: "\n").filter {
            !$0.trimmingCharacters(in: .whitespaces).hasPrefix("//")
        }.joined(separator: "\n")
        return try matches(#"data-i18n(?:-label|-placeholder)?="([^"]+)""#, in: html)
            .union(matches(#"\bt\("([a-zA-Z_.]+)"\s*[,)]"#, in: script))
    }

    @Test("both catalogues hold the same keys, every key the page uses, and the same placeholders in each string")
    func complete() throws {
        let english = try Catalogue("en"), german = try Catalogue("de")
        #expect(english.language == "en" && german.language == "de")
        #expect(
            Set(english.strings.keys).subtracting(german.strings.keys).isEmpty,
            "missing in German: \(Set(english.strings.keys).subtracting(german.strings.keys).sorted())")
        #expect(
            Set(german.strings.keys).subtracting(english.strings.keys).isEmpty,
            "missing in English: \(Set(german.strings.keys).subtracting(english.strings.keys).sorted())")

        // A counted key is found under its ".one" or ".other" form.
        let known = { (catalogue: Catalogue, key: String) in
            catalogue.strings[key] != nil || catalogue.strings[key + ".other"] != nil
        }
        let used = try Self.keysUsed()
        #expect(used.count > 60, "the page's keys: \(used.count)")
        for catalogue in [english, german] {
            #expect(
                used.filter { !known(catalogue, $0) }.isEmpty,
                "\(catalogue.language) lacks \(used.filter { !known(catalogue, $0) }.sorted())")
            // The families the page builds keys for at run time.
            let family =
                SharingIndicator.State.allCases.flatMap { ["sharing.\($0.rawValue)", "advice.\($0.rawValue)"] }
                + [
                    "rtk_fixed", "rtk_float", "dgps", "autonomous", "none", "no_fix", "precise", "dead_reckoning",
                    "manual", "simulated",
                    "receiver_error", "no_receiver",
                ].map { "fix.\($0)" }
                + ["N", "NE", "E", "SE", "S", "SW", "W", "NW"].map { "compass.\($0)" }
                + ["rtk_fixed", "rtk_float", "dgps", "autonomous", "other"].map { "quality.\($0)" }
                + ["entered", "left", "stale", "back", "gone", "still", "resumed"].map { "notice.\($0)" }
                + ["production", "qa"].map { "env.\($0)" }
            #expect(
                family.filter { !known(catalogue, $0) }.isEmpty,
                "\(catalogue.language) lacks \(family.filter { !known(catalogue, $0) })")
        }
        for (key, words) in english.strings {
            let theirs = german.strings[key] ?? ""
            #expect(
                try Self.placeholders(words) == Self.placeholders(theirs),
                "\(key): \"\(words)\" and \"\(theirs)\" fill in different values")
        }
    }

    @Test("every German string differs from its English one, but for those the catalogue says are the same in both")
    func translated() throws {
        let english = try Catalogue("en"), german = try Catalogue("de")
        let untranslated = english.strings.keys.filter {
            german.strings[$0] == english.strings[$0] && !german.same.contains($0)
        }
        #expect(untranslated.isEmpty, "still English in German: \(untranslated.sorted())")
        // And the list of exceptions stays honest: each is in fact the same.
        let notSame = german.same.filter { german.strings[$0] != english.strings[$0] }
        #expect(notSame.isEmpty, "listed as the same but not: \(notSame.sorted())")
        #expect(english.same.isEmpty)
    }

    @Test("the page's own English and its catalogues hold none of the words a farmer does not use")
    func noJargon() throws {
        for language in ["en", "de"] {
            let words = try Catalogue(language).strings.values.joined(separator: "\n")
            for jargon in CabLanguageTests.jargon {
                #expect(
                    words.range(of: jargon, options: [.regularExpression, .caseInsensitive]) == nil,
                    "\(language): \(jargon)")
            }
        }
    }

    /// What the cab view once said and a farmer does not: protocol codes, status levels, our own
    /// words for agrirouter's parts, ISO week numbers, tenths of hours.
    static let jargon = [
        #"D_[A-Z_]+"#, #"GNSS 3D"#, #"\bCRITICAL\b"#, #"\bWARNING\b"#, #"HTTP \d{3}"#, #"\bendpoint\b"#,
        #"credentials"#,
        #"\bre-?onboard"#, #"\bonboard"#, #"went stale"#, #"\d{4}-W\d\d"#, #"\b0\.\d h\b"#, #"\bgpsd\b"#, #"spool"#,
    ]

    @Test("the box serves both catalogues, and says which it has when asked for another")
    func served() async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            for language in ["en", "de"] {
                let reply = try await fixture.get("/lang/\(language).json")
                #expect(
                    reply.status == 200 && reply.text.contains("\"language\": \"\(language)\""),
                    "\(reply.status) \(reply.text.prefix(80))")
            }
            let unknown = try await fixture.get("/lang/fr.json")
            #expect(unknown.status == 404 && unknown.text.contains("de, en"), "\(unknown.text)")
            #expect(try await fixture.get("/lang/../app.js").status != 200)
        }
    }
}

/// The page in a real browser that asks for German, and for English: the words, numbers and times
/// of its language on every tab and in each state, a switch in Settings that is remembered, and
/// none of the jargon anywhere on the page. The screenshots, in both languages and both themes, are
/// the ones in docs/cab-view.md.
@Suite("the cab view in German and English, in a browser", .serialized, .timeLimit(.minutes(4)))
struct CabLanguageBrowserTests {
    /// States the fixture cannot reach by itself, drawn from the live state with a different sharing part.
    /// The sharing part is held until the next call, also against the box's own models meanwhile (a
    /// refresh every 5 s), by a wrapper around the page's `draw`. (The made-up machines are taken
    /// out, for the page's wrapped `draw` adds them again.) `drawState("{}")` gives the live state back.
    static func drawState(_ sharing: String) -> String {
        """
        window.liveSharing = window.liveSharing || cab.state.sharing;
        const forced = \(sharing);
        window.forcedSharing = Object.keys(forced).length ? Object.assign({}, window.liveSharing, forced) : null;
        if (!window.forcing) {
          const drawn = window.draw;
          window.draw = state => drawn(window.forcedSharing ? Object.assign({}, state, { sharing: window.forcedSharing }) : state);
          window.forcing = true;
        }
        draw(Object.assign({}, cab.state, { others: cab.state.others.filter(o => !String(o.id).startsWith('layout-')),
                                            sharing: window.forcedSharing || window.liveSharing }));
        """
    }

    static let states: [(name: String, script: String)] = [
        ("paused", drawState("{ state: 'paused', pausedSince: '2026-11-27T14:05:00Z', kept: 1234, waiting: 0 }")),
        ("offline", drawState("{ state: 'offline', waiting: 154 }")),
        ("no-fix", drawState("{ state: 'no_fix' }")),
        (
            "stopped",
            drawState(
                "{ state: 'daemon_stopped', since: new Date(new Date(cab.state.takenAt) - 750000).toISOString() }")
        ),
    ]

    /// Visible text matching the jargon list, and keys shown for want of words.
    static let jargonCheck = """
        const words = document.body.innerText;
        const found = arguments[0].filter(pattern => new RegExp(pattern, 'i').test(words));
        const keys = words.match(/\\b(?:tab|map|own|fix|sharing|advice|nearby|records|settings|notice|unit|field)\\.[a-z_]+\\b/g) || [];
        return found.concat(keys);
        """

    @Test(
        "German from the browser's languages, English by the switch in Settings: words, numbers and times of each, no jargon on any tab or in any state",
        arguments: [(360, 640), (1280, 800)])
    func languages(size: (width: Int, height: Int)) async throws {
        let (fixture, browser) = try await CabLayoutTests.started(
            width: size.width, height: size.height, language: "de-DE", fields: [CabThemeTests.field])
        let at = "\(size.width)x\(size.height)"
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            #expect(
                try await browser.run("return [document.documentElement.lang, navigator.languages[0]]") as? [String]
                    == ["de", "de-DE"])
            #expect(try await browser.text("#tabs button[data-tab='settings']") == "Einstellungen")
            #expect(try await browser.text("#sharing") == "Nicht mit agrirouter verbunden")
            #expect(try await browser.text("#own-info") == "RTK Fix · 14 Satelliten")

            for language in ["de", "en"] {
                if language == "en" {
                    // The switch in Settings: English at once, and still after a reload.
                    #expect(try await browser.openCabTab("settings"))
                    try await browser.run(
                        "const s = document.getElementById('language'); s.value = 'en'; s.dispatchEvent(new Event('change'));"
                    )
                    #expect(try await browser.wait(timeout: 5, for: "return document.documentElement.lang === 'en'"))
                    try await browser.open("http://127.0.0.1:\(fixture.port)/")
                    #expect(
                        try await browser.wait(
                            timeout: 20,
                            for:
                                "return !!(window.cab && cab.own && cab.state) && document.documentElement.lang === 'en'"
                        ))
                    #expect(
                        try await browser.run(
                            "return [localStorage.getItem('agrigps.language'), document.getElementById('language').value]"
                        ) as? [String] == ["en", "en"])
                    try await browser.run(CabLayoutTests.otherMachines)
                    #expect(try await browser.text("#sharing") == "Not connected to agrirouter")
                }
                try await checkTabs(browser, language: language, at: at)
                try await checkStates(browser, language: language, at: at)
            }
        }
    }

    func checkTabs(_ browser: WebDriver, language: String, at: String) async throws {
        for tab in ["map", "nearby", "records", "settings"] {
            #expect(try await browser.openCabTab(tab), "\(language): the \(tab) tab opens")
            let jargon = try #require(try await browser.run(Self.jargonCheck, [CabLanguageTests.jargon]) as? [String])
            #expect(jargon.isEmpty, "\(language), \(tab), \(at): \(jargon)")
            switch tab {
            case "nearby":
                let baler = try await browser.text("#nearby button[data-id='layout-3'] .where")
                #expect(baler.hasSuffix(language == "de" ? "3,6 km NO 51°" : "3.6 km NE 51°"), "\(language): \(baler)")
            case "records":
                // The day in the page's language whatever the browser's (a de-DE browser here), and
                // no day after today to step to.
                let weekdays =
                    language == "de"
                    ? ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag", "Samstag", "Sonntag"]
                    : ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
                let day = try await browser.text("#records-day-button")
                #expect(weekdays.contains { day.hasPrefix($0) } && !day.contains("/"), "\(language): \(day)")
                #expect(
                    try await browser.run("return document.getElementById('records-next').disabled") as? Bool == true)
                let figures = try await browser.text("#records-day-figures")
                #expect(
                    figures.contains(language == "de" ? "mit GPS-Empfang" : "with a fix")
                        && figures.contains(language == "de" ? "0,0 km" : "0.0 km"),
                    "\(language): \(figures)")
                // No track recorded here (the daemon keeps it): the words, with nothing in them.
                let delivery = try await browser.text("#records-delivery")
                #expect(
                    delivery.hasPrefix(
                        language == "de"
                            ? "Aufgezeichnete Positionen: 0 · an agrirouter gesendet: 0 · auf dieser Box behalten: 0"
                            : "Positions recorded: 0 · sent to agrirouter: 0 · kept on this box: 0"), "\(delivery)")
            case "settings":
                #expect(
                    try await browser.run("return document.getElementById('environment').value") as? String == "",
                    "no system chosen for the driver")
                let help = try await browser.text("#tan-help")
                #expect(help.contains(language == "de" ? "Einmal-Code" : "one-time code"), "\(help)")
                #expect(
                    try await browser.run("return document.getElementById('tan-link-production').href") as? String
                        == "https://app.agrirouter.com/")
            default:
                break
            }
            for theme in ["light", "dark"] {
                // The longer German words keep every text at 4.5:1 in both themes too.
                try await browser.run("document.documentElement.dataset.theme = '\(theme)'")
                CabThemeTests.check(
                    try await CabThemeTests.readings(browser), "\(language), \(tab), \(theme), \(at)", theme: theme)
                _ = try CabBrowserTests.save(
                    try await browser.screenshot(), as: "words-\(language)-\(theme)-\(tab)-\(at).png")
            }
            try await browser.run("applyTheme(chosenTheme() || 'light')")
        }
    }

    func checkStates(_ browser: WebDriver, language: String, at: String) async throws {
        #expect(try await browser.openCabTab("map"))
        for (name, script) in Self.states {
            try await browser.run(script)
            let label = try await browser.text("#sharing")
            let jargon = try #require(try await browser.run(Self.jargonCheck, [CabLanguageTests.jargon]) as? [String])
            #expect(jargon.isEmpty, "\(language), \(name), \(at): \(jargon)")
            let banner = try await browser.text("#banner")
            switch name {
            case "paused":
                // A 24-hour clock in either language, and the count as the language writes it.
                let pattern =
                    language == "de"
                    ? #"^Pausiert seit \d\d:\d\d · 1\.234 Positionen bleiben auf dieser Box, nicht gesendet$"#
                    : #"^Paused since \d\d:\d\d · 1,234 positions kept on this box, not sent$"#
                #expect(label.range(of: pattern, options: .regularExpression) != nil, "\(language): \(label)")
            case "offline":
                #expect(
                    label
                        == (language == "de"
                            ? "Offline · 154 Positionen warten auf dieser Box"
                            : "Offline · 154 positions waiting on this box"))
                #expect(banner.hasPrefix(language == "de" ? "Bitte prüfen:" : "Check:"), "\(banner)")
            case "stopped":
                // How long, by the box's clock: 750 s before the state was taken.
                #expect(
                    label == (language == "de" ? "Gateway gestoppt · 12 min" : "Gateway stopped · 12 min"), "\(label)")
                #expect(
                    try await browser.run("return document.getElementById('pause').disabled") as? Bool == true,
                    "pause waits for the gateway")
                #expect(
                    banner.hasPrefix(language == "de" ? "Sofort handeln:" : "Act now:")
                        && banner.contains(language == "de" ? "neu starten" : "restart"), "\(banner)")
            default:
                #expect(label == (language == "de" ? "Kein GPS-Empfang" : "No fix"))
            }
            for theme in ["light", "dark"] {
                try await browser.run("document.documentElement.dataset.theme = '\(theme)'")
                _ = try CabBrowserTests.save(
                    try await browser.screenshot(), as: "words-\(language)-\(theme)-state-\(name)-\(at).png")
            }
            try await browser.run("applyTheme(chosenTheme() || 'light')")
            try await browser.run(Self.drawState("{}"))
        }
    }
}
