import CabView
import Foundation
import Spool
import TestSupport
import Testing

/// The cab view is read at night as well as by day: a night theme, switched in the header and
/// remembered, and every text legible in both, 4.5:1 at least against what it is drawn on (WCAG 2.x).
@Suite("night theme and contrast in the cab view, in a browser", .serialized, .timeLimit(.minutes(3)))
struct CabThemeTests {
    /// WCAG 2.x, level AA, for text of any size.
    static let minimum = 4.5

    /// Colour arithmetic in the page: parsing computed colours, compositing, relative luminance and the
    /// contrast ratio, and `check(root)`, which walks every visible element under `root` that draws text
    /// of its own and returns [description, text, text colour, background colour, ratio, background's
    /// luminance] for each.
    ///
    /// The background is found by walking up the ancestors, compositing each one's background colour
    /// (its alpha times the opacity it is drawn with) until one is opaque; the map's area counts as the
    /// map container's colour (what lies under its controls and labels where no tile is), and text in
    /// Leaflet's tile pane (drawn on the tiles themselves) is left out. Form fields count with their
    /// value or, when empty, their placeholder; a file field with its button's text and its own.
    static let library = """
        const parse = value => {
          let match = /rgba?\\(([^)]*)\\)/.exec(value);
          if (match) {
            const parts = match[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
            return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
          }
          match = /color\\(srgb ([^)]*)\\)/.exec(value);
          if (match) {
            const parts = match[1].split(/[\\s\\/]+/).filter(Boolean).map(Number);
            return [parts[0] * 255, parts[1] * 255, parts[2] * 255, parts.length > 3 ? parts[3] : 1];
          }
          throw new Error('a colour not understood: ' + value);
        };
        const over = (top, bottom) => [0, 1, 2].map(i => top[i] * top[3] + bottom[i] * (1 - top[3])).concat([1]);
        const channel = c => { c /= 255; return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
        const luminance = c => 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2]);
        const ratio = (a, b) => { const [x, y] = [luminance(a), luminance(b)]; return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05); };
        const hex = c => '#' + c.slice(0, 3).map(v => Math.round(v).toString(16).padStart(2, '0')).join('');
        const opacities = new Map();
        const opacity = element => {
          if (!element || element.nodeType !== 1) return 1;
          if (!opacities.has(element)) opacities.set(element, Number(getComputedStyle(element).opacity) * opacity(element.parentElement));
          return opacities.get(element);
        };
        const map = document.getElementById('map');
        // The colour under `element`'s text: its own background and its ancestors', composited.
        const background = (element, own) => {
          const layers = [];
          for (let node = element; node && node.nodeType === 1; node = node.parentElement) {
            let colour = node === element && own ? own : parse(getComputedStyle(node).backgroundColor);
            if (colour[3] === 0 && node.id === 'tab-map') colour = parse(getComputedStyle(map).backgroundColor);
            colour = colour.slice(0, 3).concat([colour[3] * opacity(node)]);
            if (colour[3] > 0) layers.push(colour);
            if (colour[3] >= 1) break;
          }
          return layers.reverse().reduce((below, layer) => over(layer, below), [255, 255, 255, 1]);
        };
        const name = element => element.tagName.toLowerCase() + (element.id ? '#' + element.id : '')
          + (typeof element.className === 'string' && element.className.trim() ? '.' + element.className.trim().split(/\\s+/).join('.') : '')
          + (element.dataset && element.dataset.state ? '[data-state=' + element.dataset.state + ']' : '');
        // A bare element is named with its parent: "div.leaflet-tooltip.other-label.stale > span".
        const describe = element => !element.id && !(typeof element.className === 'string' && element.className.trim()) && element.parentElement
          ? name(element.parentElement) + ' > ' + name(element) : name(element);
        const shown = element => element.getClientRects().length > 0 && getComputedStyle(element).visibility !== 'hidden' && opacity(element) > 0;
        const measure = (element, words, colour, own) => {
          const below = background(element, own);
          const text = parse(colour);
          const drawn = over(text.slice(0, 3).concat([text[3] * opacity(element)]), below);
          return [describe(element), words.trim().replace(/\\s+/g, ' ').slice(0, 40), hex(drawn), hex(below),
                  ratio(drawn, below), luminance(below)];
        };
        const skipped = new Set(['SCRIPT', 'STYLE', 'TEMPLATE', 'NOSCRIPT', 'OPTION', 'OPTGROUP']);
        const check = root => {
          const rows = [];
          for (const element of [root].concat(Array.from(root.querySelectorAll('*')))) {
            // SVG text is painted with its fill on the shapes drawn for it (this machine's letter on its white disc).
            if (skipped.has(element.tagName) || element.closest('.leaflet-tile-pane') || element.closest('svg')) continue;
            const style = getComputedStyle(element);
            if (element.tagName === 'INPUT' || element.tagName === 'SELECT' || element.tagName === 'TEXTAREA') {
              if (!shown(element) || element.type === 'hidden') continue;
              if (element.type === 'file') {
                const button = getComputedStyle(element, '::file-selector-button');
                const own = parse(button.backgroundColor);
                rows.push(measure(element, 'file button: Choose file', button.color, own[3] > 0 ? over(own, background(element)) : null));
                rows.push(measure(element, 'file: ' + (element.files && element.files.length ? element.files[0].name : 'No file chosen'), style.color));
              } else if (element.tagName === 'SELECT') {
                const option = element.selectedOptions[0];
                if (option) rows.push(measure(element, option.textContent, style.color));
              } else if (['checkbox', 'radio', 'range', 'color'].includes(element.type)) {
                continue;
              } else if (element.value) {
                rows.push(measure(element, element.value, style.color));
              } else if (element.placeholder) {
                rows.push(measure(element, 'placeholder: ' + element.placeholder, getComputedStyle(element, '::placeholder').color));
              } else if (element.type === 'date') {
                rows.push(measure(element, 'empty date', style.color));
              }
              continue;
            }
            const words = Array.from(element.childNodes).filter(node => node.nodeType === 3).map(node => node.data).join('');
            if (!words.trim() || !shown(element)) continue;
            const boxes = Array.from(element.childNodes).filter(node => node.nodeType === 3 && node.data.trim()).some(node => {
              const range = document.createRange();
              range.selectNode(node);
              return Array.from(range.getClientRects()).some(box => box.width > 0 && box.height > 0);
            });
            if (!boxes) continue;
            rows.push(measure(element, words, style.color));
          }
          return rows;
        };
        """

    static let states = [
        "unknown", "sharing", "paused", "offline", "daemon_stopped", "not_onboarded", "no_fix", "no_receiver",
        "gpsd_unreachable",
        "lost",
    ]

    /// What each state's colour means, by the hue of its background: green all well, amber attention,
    /// red act now (grey and slate blue for the rest).
    static let meaning: [String: ClosedRange<Double>] = [
        "sharing": 90...170, "paused": 30...55, "no_fix": 30...55, "offline": 30...55,
        "no_receiver": 0...15, "gpsd_unreachable": 0...15, "daemon_stopped": 0...15, "lost": 0...15,
    ]

    struct Reading: CustomStringConvertible {
        var element: String
        var text: String
        var colour: String
        var background: String
        var ratio: Double
        var backgroundLuminance: Double
        var description: String {
            "\(element) \"\(text)\": \(colour) on \(background), \(String(format: "%.2f", ratio)):1"
        }
    }

    /// `check(within)` run in the page after `prepare` and before `restore`, in one script, so that no
    /// redraw comes between.
    static func readings(_ browser: WebDriver, within: String = "body", prepare: String = "", restore: String = "")
        async throws -> [Reading]
    {
        let script =
            "\(library)\n\(prepare);\nconst rows = check(document.querySelector(arguments[0]));\n\(restore);\nreturn rows;"
        let rows = try #require(try await browser.run(script, [within]) as? [[Any]])
        return rows.map { row in
            Reading(
                element: row[0] as? String ?? "?", text: row[1] as? String ?? "", colour: row[2] as? String ?? "?",
                background: row[3] as? String ?? "?", ratio: (row[4] as? NSNumber)?.doubleValue ?? 0,
                backgroundLuminance: (row[5] as? NSNumber)?.doubleValue ?? 1)
        }
    }

    /// Every reading at 4.5:1 at least; at night, every background dark but the coloured labels'.
    static func check(_ readings: [Reading], _ place: String, theme: String) {
        let poor = readings.filter { $0.ratio < minimum }
        #expect(poor.isEmpty, "\(place): under \(minimum):1: \(poor.map(\.description).joined(separator: "; "))")
        if theme == "dark" {
            let light = readings.filter {
                $0.backgroundLuminance >= 0.2 && !$0.element.hasPrefix("span#sharing")
                    && !$0.element.hasPrefix("span#field")
            }
            #expect(
                light.isEmpty,
                "\(place): light backgrounds in the dark theme: \(light.map(\.description).joined(separator: "; "))")
        }
    }

    /// Other machines, made up and added to every state the page draws: the fixture has none, and
    /// the stale and gone ones are drawn grey.
    static let otherMachines = """
        const made = [
          { id: 'theme-1', name: 'Tractor 2', latitude: 52.4990, longitude: 13.4030, state: 'active', fix: 'RTK fixed', ageSeconds: 2, age: '2 s', distance: '120 m', distanceMetres: 120 },
          { id: 'theme-2', name: 'Harvester', latitude: 52.5025, longitude: 13.3965, state: 'stale', fix: 'DGPS', ageSeconds: 70, age: '1 min', distance: '130 m', distanceMetres: 130 },
          { id: 'theme-3', name: 'Sprayer', latitude: null, longitude: null, state: 'gone', fix: null, ageSeconds: 7200, age: '2 h', distance: null, distanceMetres: null },
        ];
        const drawn = window.draw;
        window.draw = state => drawn(Object.assign({}, state, { others: state.others.concat(made) }));
        if (cab.state) draw(cab.state);
        """

    static let field = FieldBox(name: "Long Acre", south: 52.4985, west: 13.3955, north: 52.5045, east: 13.4065)

    @Test(
        "both themes at a phone's and a tablet's size: the switch works and is remembered; every text on every tab 4.5:1 at least; the map dims at night",
        arguments: [(360, 640), (1280, 800)], ["light", "dark"])
    func theme(size: (width: Int, height: Int), theme: String) async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.storeFields([Self.field])
        _ = await Spool(path: fixture.paths.spool).append(Samples.fix(latitude: 52.5, longitude: 13.4))
        try await fixture.start()
        let browser = try await WebDriver(width: size.width, height: size.height)
        let at = "\(theme) at \(size.width)×\(size.height)"
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            let url = "http://127.0.0.1:\(fixture.port)/"
            let ready = "return !!(window.cab && cab.map && cab.own && cab.state && cab.fieldsLayer)"
            try await browser.open(url)
            #expect(try await browser.wait(timeout: 20, for: ready))

            // A fresh browser on a light system: the light theme, the switch not pressed.
            let themeNow =
                "return [document.documentElement.dataset.theme, document.getElementById('theme').getAttribute('aria-pressed'), localStorage.getItem('agrigps.theme') || 'none']"
            #expect(
                try await browser.run(themeNow) as? [String] == ["light", "false", "none"], "\(at): the first theme")
            #expect(
                try await browser.run("return document.getElementById('theme').getAttribute('aria-label')") as? String
                    == "Night theme")

            // The switch, clicked: night; clicked again, day. Each choice is kept in localStorage.
            try await browser.click("#theme")
            #expect(try await browser.run(themeNow) as? [String] == ["dark", "true", "dark"], "\(at): after one click")
            if theme == "light" {
                try await browser.click("#theme")
                #expect(
                    try await browser.run(themeNow) as? [String] == ["light", "false", "light"],
                    "\(at): after two clicks")
            }
            // …and outlives a reload.
            try await browser.open(url)
            #expect(try await browser.wait(timeout: 20, for: ready))
            let pressed = theme == "dark" ? "true" : "false"
            #expect(try await browser.run(themeNow) as? [String] == [theme, pressed, theme], "\(at): after a reload")
            try await browser.run(Self.otherMachines)
            #expect(
                try await browser.wait(
                    timeout: 10,
                    for:
                        "return document.querySelectorAll('.other-label').length === 2 && document.querySelectorAll('#nearby li.gone').length === 1"
                ))

            // The map's picture dims at night, and only the picture.
            let panes = try #require(
                try await browser.run(
                    """
                    const filter = selector => getComputedStyle(document.querySelector(selector)).filter;
                    const body = getComputedStyle(document.body).backgroundColor.match(/[\\d.]+/g).map(Number);
                    const channel = c => { c /= 255; return c <= 0.04045 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
                    return [filter('#map .leaflet-tile-pane'),
                            ['#map', '#map .leaflet-map-pane', '#map .leaflet-overlay-pane', '#map .leaflet-marker-pane', '#map .leaflet-tooltip-pane',
                             '#map .leaflet-fields-pane', '#map .leaflet-control-container'].filter(s => filter(s) !== 'none'),
                            0.2126 * channel(body[0]) + 0.7152 * channel(body[1]) + 0.0722 * channel(body[2])];
                    """) as? [Any])
            let tileFilter = panes[0] as? String ?? "?"
            let bodyLuminance = (panes[2] as? NSNumber)?.doubleValue ?? -1
            #expect((panes[1] as? [String])?.isEmpty == true, "\(at): filtered besides the tiles: \(panes[1])")
            if theme == "dark" {
                #expect(tileFilter.contains("brightness"), "\(at): the tile pane's filter: \(tileFilter)")
                #expect(bodyLuminance < 0.1, "\(at): the page's luminance \(bodyLuminance)")
            } else {
                #expect(tileFilter == "none", "\(at): the tile pane's filter: \(tileFilter)")
                #expect(bodyLuminance > 0.8, "\(at): the page's luminance \(bodyLuminance)")
            }

            for tab in ["map", "nearby", "records", "settings"] {
                #expect(try await browser.openCabTab(tab), "the \(tab) tab opens")
                if tab == "records" {
                    #expect(try await browser.wait(timeout: 10, for: "return !!cab.fieldDay"))
                }
                let place = "\(tab), \(at)"
                let readings = try await Self.readings(browser)
                let seen = Set(readings.map(\.element))
                let onTab: [String] =
                    switch tab {
                    case "map":
                        [
                            "span#own-info", "button#pause", "a.leaflet-control-zoom-in",
                            "div.leaflet-tooltip.own-label", "div.leaflet-tooltip.other-label",
                            "div.leaflet-tooltip.field-name", "div.leaflet-control-scale-line",
                            "div.leaflet-control-attribution",
                        ]
                    case "nearby": ["span.name", "span.where", "span.facts", "p#last-update"]
                    case "records":
                        ["button#records-day-button", "div.label", "a#records-gpx.download", "h3#records-week-title"]
                    default:
                        ["input#tan", "select#environment", "input#fields-file", "button#onboard", "div#account > h2"]
                    }
                for expected in ["span#sharing[data-state=not_onboarded]", "span#field", "button#theme"] + onTab {
                    #expect(
                        seen.contains { $0.hasPrefix(expected) },
                        "\(place): not measured: \(expected) among \(seen.sorted())")
                }
                if tab == "map" {
                    // The map's labels: the machines' (one of them stale) and the field's.
                    #expect(
                        readings.contains { $0.text == "Harvester" && $0.element.contains("stale") },
                        "\(place): \(readings)")
                    #expect(readings.contains { $0.text == "Tractor 2" }, "\(place): \(readings)")
                    #expect(readings.contains { $0.text == "Long Acre" }, "\(place): \(readings)")
                    #expect(readings.contains { $0.text == "This machine" }, "\(place): \(readings)")
                }
                Self.check(readings, place, theme: theme)
                _ = try CabBrowserTests.save(
                    try await browser.screenshot(), as: "theme-\(theme)-\(tab)-\(size.width)x\(size.height).png")
            }

            // The sharing label in each state it can take, from its style sheet alone.
            let colours = try #require(
                try await browser.run(
                    """
                    \(Self.library)
                    const label = document.getElementById('sharing');
                    const was = label.dataset.state;
                    const rows = arguments[0].map(state => {
                      label.dataset.state = state;
                      const style = getComputedStyle(label);
                      const [fore, back] = [parse(style.color), over(parse(style.backgroundColor), background(label.parentElement))];
                      const [r, g, b] = back.slice(0, 3).map(v => v / 255);
                      const [most, least] = [Math.max(r, g, b), Math.min(r, g, b)];
                      const hue = most === least ? -1 : most === r ? (60 * ((g - b) / (most - least)) + 360) % 360
                        : most === g ? 60 * ((b - r) / (most - least)) + 120 : 60 * ((r - g) / (most - least)) + 240;
                      return [state, hex(fore), hex(back), ratio(over(fore, back), back), hue];
                    });
                    label.dataset.state = was;
                    return rows;
                    """, [Self.states]) as? [[Any]])
            #expect(colours.count == Self.states.count)
            for row in colours {
                let state = row[0] as? String ?? "?"
                let ratio = (row[3] as? NSNumber)?.doubleValue ?? 0
                let hue = (row[4] as? NSNumber)?.doubleValue ?? -1
                let shown = "\(state): \(row[1]) on \(row[2]), \(String(format: "%.2f", ratio)):1, hue \(Int(hue))"
                #expect(ratio >= Self.minimum, "\(at): the sharing label \(shown)")
                if let range = Self.meaning[state] {
                    #expect(
                        range.contains(hue) || (range.lowerBound == 0 && hue >= 345),
                        "\(at): the sharing label's colour means the wrong thing: \(shown)")
                }
            }

            // Back on the map (on a phone, a tab of its own).
            try await browser.run("document.querySelector(\"#tabs button[data-tab='map']\").click()")
            #expect(
                try await browser.wait(
                    timeout: 10, for: "return document.getElementById('tab-map').classList.contains('active')"))

            // For a person to look at: the label amber, as when sharing is paused (until the next redraw).
            try await browser.run(
                "const label = document.getElementById('sharing'); label.dataset.state = 'paused'; label.textContent = 'Sharing paused'"
            )
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "theme-\(theme)-paused-\(size.width)x\(size.height).png")
            try await browser.run("draw(cab.state)")

            // What comes and goes: the banner (an error, a warning), a toast, the dialog, a disabled button.
            let banner = try await Self.readings(
                browser, within: "#banner",
                prepare:
                    "document.getElementById('toasts').replaceChildren(); const b = document.getElementById('banner'); b.hidden = false; b.className = ''; b.textContent = 'CRITICAL: daemon not running'",
                restore: "drawBanner(cab.state)")
            let warning = try await Self.readings(
                browser, within: "#banner",
                prepare:
                    "document.getElementById('toasts').replaceChildren(); const b = document.getElementById('banner'); b.hidden = false; b.className = 'warning'; b.textContent = 'WARNING: not onboarded'",
                restore: "drawBanner(cab.state)")
            #expect(banner.count == 1 && warning.count == 1, "\(banner) \(warning)")
            Self.check(banner + warning, "the banner, \(at)", theme: theme)
            try await browser.run("toast('Imported 3 fields')")
            let toasts = try await Self.readings(browser, within: "#toasts")
            #expect(toasts.contains { $0.text == "Imported 3 fields" }, "\(toasts)")
            Self.check(toasts, "a toast, \(at)", theme: theme)
            try await browser.run("document.getElementById('toasts').replaceChildren()")
            let disabled = try await Self.readings(
                browser, within: "#map-buttons",
                prepare: "document.getElementById('pause').disabled = true",
                restore: "document.getElementById('pause').disabled = !(cab.state && cab.state.settings.onboarded)")
            #expect(disabled.contains { $0.element == "button#pause" }, "\(disabled)")
            Self.check(disabled, "a disabled button, \(at)", theme: theme)
            try await browser.run("dialog('Disconnect this machine from agrirouter?', true, 'Disconnect')")
            #expect(try await browser.wait(timeout: 5, for: "return !document.getElementById('dialog').hidden"))
            let dialog = try await Self.readings(browser, within: "#dialog")
            #expect(dialog.count == 3, "\(dialog)")
            Self.check(dialog, "the dialog, \(at)", theme: theme)
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "theme-\(theme)-dialog-\(size.width)x\(size.height).png")
            try await browser.click("#dialog-cancel")

            // The states the fixture can give: not onboarded, and the gateway stopped (no heartbeat).
            try FileManager.default.removeItem(atPath: fixture.paths.heartbeat)
            #expect(
                try await browser.wait(
                    timeout: 15, for: "return document.getElementById('sharing').dataset.state === 'daemon_stopped'"))
            let stopped = try await Self.readings(browser)
            #expect(stopped.contains { $0.element == "span#sharing[data-state=daemon_stopped]" }, "\(stopped)")
            Self.check(stopped, "gateway stopped, \(at)", theme: theme)
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "theme-\(theme)-stopped-\(size.width)x\(size.height).png")
        }
    }
}
