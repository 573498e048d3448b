import CabView
import Foundation
import Spool
import TestSupport
import Testing

/// The cab view is worked with gloves on, on a phone or a tablet in a shaking cab: every control on
/// every tab is a target of 48×48 CSS px at least, with 8 px at least between any two of them.
@Suite("touch targets in the cab view, in a browser", .serialized, .timeLimit(.minutes(3)))
struct CabTouchTargetTests {
    static let smallest = 48.0
    static let spacing = 8.0
    /// Layout in fractions of a pixel: a box measured at 47.996 px is a 48 px box.
    static let tolerance = 0.01

    /// Every visible control's box, with a short description of it, as a list of
    /// [description, left, top, right, bottom, index of every control it contains or is contained by].
    /// A control is what a driver can tap: links, buttons, form fields, Leaflet's zoom buttons, and
    /// labels that name a field elsewhere. Hidden ones (`hidden`, display:none, visibility:hidden, or
    /// inside something that is) have no box and are left out. `within` limits it to part of the page.
    ///
    /// Left out: Leaflet's attribution links (`.leaflet-control-attribution a`). They are the map
    /// data's credit, text the licence requires to be shown small in the map's corner, not a control
    /// a driver uses; made 48 px high they would cover the bottom of the map. (The test fixture has
    /// no tile source, so there are none here anyway, but a live map has one.)
    static let collect = """
        const within = arguments[0] ? document.querySelector(arguments[0]) : document;
        const selector = 'a[href], button, input, select, textarea, [role=button], .leaflet-control-zoom a, label[for]';
        const controls = Array.from(within.querySelectorAll(selector)).filter(element => {
          if (element.closest('.leaflet-control-attribution')) return false;
          const box = element.getBoundingClientRect();
          if (box.width <= 0 || box.height <= 0 || element.getClientRects().length === 0) return false;
          const style = getComputedStyle(element);
          return style.visibility !== 'hidden' && style.display !== 'none' && style.opacity !== '0';
        });
        return controls.map(element => {
          const box = element.getBoundingClientRect();
          const words = (element.textContent || element.value || element.getAttribute('aria-label') || '').trim().replace(/\\s+/g, ' ').slice(0, 24);
          const name = element.tagName.toLowerCase() + (element.id ? '#' + element.id : '')
            + (element.className && typeof element.className === 'string' ? '.' + element.className.trim().split(/\\s+/).join('.') : '')
            + (element.type && element.tagName === 'INPUT' ? '[' + element.type + ']' : '')
            + (words ? ' "' + words + '"' : '');
          const related = controls.map((other, index) => other !== element && (other.contains(element) || element.contains(other)) ? index : -1)
            .filter(index => index >= 0);
          return [name, box.left, box.top, box.right, box.bottom, related];
        });
        """

    struct Control: CustomStringConvertible {
        var name: String
        var left, top, right, bottom: Double
        var related: Set<Int>
        var width: Double { right - left }
        var height: Double { bottom - top }
        var description: String {
            "\(name) \(String(format: "%.1f×%.1f", width, height)) at (\(Int(left.rounded())), \(Int(top.rounded())))"
        }

        /// How far apart two boxes are: the larger of the horizontal and the vertical gap; below 0
        /// when they overlap.
        func gap(to other: Control) -> Double {
            let horizontal = max(other.left - right, left - other.right)
            let vertical = max(other.top - bottom, top - other.bottom)
            return max(horizontal, vertical)
        }
    }

    /// The controls as `collect` finds them; `prepare` runs just before and `restore` just after, in
    /// the same script, so that no redraw of the page comes between.
    static func controls(in browser: WebDriver, within: String? = nil, prepare: String = "", restore: String = "")
        async throws -> [Control]
    {
        let script =
            "\(prepare);\nconst rows = (function () { \(collect) }).apply(null, arguments);\n\(restore);\nreturn rows;"
        let rows = try #require(try await browser.run(script, [within ?? NSNull()]) as? [[Any]])
        return try rows.map { row in
            let numbers = row[1...4].compactMap { ($0 as? NSNumber)?.doubleValue }
            try #require(numbers.count == 4, "\(row)")
            return Control(
                name: row[0] as? String ?? "?", left: numbers[0], top: numbers[1], right: numbers[2],
                bottom: numbers[3],
                related: Set((row[5] as? [Any] ?? []).compactMap { ($0 as? NSNumber)?.intValue }))
        }
    }

    /// The controls too small, and the pairs too close, as a person would read them.
    static func offences(_ controls: [Control]) -> (small: [String], close: [String]) {
        let small = controls.filter { $0.width < smallest - tolerance || $0.height < smallest - tolerance }.map(
            \.description)
        var close: [String] = []
        for first in controls.indices {
            for second in controls.indices where second > first && !controls[first].related.contains(second) {
                let gap = controls[first].gap(to: controls[second])
                if gap < spacing - tolerance {
                    close.append("\(controls[first]) and \(controls[second]): \(String(format: "%.1f", gap)) px apart")
                }
            }
        }
        return (small, close)
    }

    static func check(_ controls: [Control], _ place: String) {
        let (small, close) = offences(controls)
        #expect(small.isEmpty, "\(place): under \(Int(smallest))×\(Int(smallest)) px: \(small.joined(separator: "; "))")
        #expect(close.isEmpty, "\(place): under \(Int(spacing)) px apart: \(close.joined(separator: "; "))")
    }

    @Test(
        "every visible control on every tab is 48×48 px at least and 8 px at least from its neighbours, in English and in German's longer words",
        arguments: [(360, 640), (1280, 800)], ["en-GB", "de-DE"])
    func targets(size: (width: Int, height: Int), language: String) async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        _ = await Spool(path: fixture.paths.spool).append(Samples.fix(latitude: 52.5, longitude: 13.4))
        try await fixture.start()
        let browser = try await WebDriver(width: size.width, height: size.height, language: language)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            try await browser.open("http://127.0.0.1:\(fixture.port)/")
            #expect(
                try await browser.wait(timeout: 20, for: "return !!(window.cab && cab.map && cab.own && cab.state)"))
            let viewport = try await browser.run("return [window.innerWidth, window.innerHeight]") as? [Int]
            #expect(viewport == [size.width, size.height], "the viewport: \(String(describing: viewport))")

            for tab in ["map", "nearby", "records", "settings"] {
                #expect(try await browser.openCabTab(tab), "the \(tab) tab opens")
                let place = "\(tab) at \(size.width)×\(size.height)"
                let controls = try await Self.controls(in: browser)
                #expect(controls.count >= 3, "\(place): controls found: \(controls)")
                Self.check(controls, place)
                _ = try CabBrowserTests.save(
                    try await browser.screenshot(), as: "targets-\(language)-\(tab)-\(size.width)x\(size.height).png")
            }

            // Settings while onboarded: Re-onboard and Disconnect side by side (shown here as the page
            // shows them, and measured before the next state redraws them).
            let onboarded = try await Self.controls(
                in: browser, prepare: "document.getElementById('disconnect').hidden = false",
                restore: "document.getElementById('disconnect').hidden = !(cab.state && cab.state.settings.onboarded)")
            #expect(onboarded.contains { $0.name.hasPrefix("button#disconnect") }, "\(onboarded)")
            Self.check(onboarded, "settings, onboarded, at \(size.width)×\(size.height)")

            // The dialog's buttons, over everything else: Disconnect's, which cannot be undone, red,
            // with Cancel where OK sits in every other dialog.
            let sides =
                "const [cancel, ok] = ['dialog-cancel', 'dialog-ok'].map(id => document.getElementById(id).getBoundingClientRect()); return cancel.left > ok.left;"
            try await browser.run("dialog('?', true)")
            #expect(try await browser.run(sides) as? Bool == false, "OK is on the right")
            try await browser.click("#dialog-cancel")
            try await browser.run("dialog(t('disconnect.ask'), true, t('settings.disconnect'), { danger: true })")
            #expect(try await browser.wait(timeout: 5, for: "return !document.getElementById('dialog').hidden"))
            #expect(try await browser.run(sides) as? Bool == true, "Cancel is where OK usually is")
            let buttons = try await Self.controls(in: browser, within: "#dialog")
            #expect(buttons.count == 2, "\(buttons)")
            Self.check(buttons, "the dialog at \(size.width)×\(size.height)")
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "targets-\(language)-dialog-\(size.width)x\(size.height).png")
            try await browser.click("#dialog-cancel")
        }
    }
}
