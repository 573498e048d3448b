import CabView
import Foundation
import Spool
import TestSupport
import Testing

/// What the page puts on the map must never hide a machine or a control, and nothing may move under
/// a finger: the map's viewport is the map that shows, this machine is drawn over every other, and
/// notices and warnings have a strip of their own below the map.
@Suite("layout of the cab view, in a browser", .serialized, .timeLimit(.minutes(3)))
struct CabLayoutTests {
    /// Other machines around this one (52.5, 13.4), added to every state the page draws; the baler is
    /// 3.6 km away to the north-east, so that framing them all is a real change of view.
    static let otherMachines = """
        const made = [
          { id: 'layout-1', name: 'Tractor 2', latitude: 52.4990, longitude: 13.4030, state: 'active', fix: 'RTK fixed', ageSeconds: 2, age: '2 s',
            distance: '230 m', distanceMetres: 230, bearing: 118, direction: 'SE 118°' },
          { id: 'layout-2', name: 'Harvester', latitude: 52.5010, longitude: 13.3965, state: 'stale', fix: 'DGPS', ageSeconds: 70, age: '1 min',
            distance: '260 m', distanceMetres: 260, bearing: 296, direction: 'NW 296°' },
          { id: 'layout-3', name: 'Baler', latitude: 52.5200, longitude: 13.4400, state: 'active', fix: 'GPS', ageSeconds: 4, age: '4 s',
            distance: '3.6 km', distanceMetres: 3600, bearing: 51, direction: 'NE 51°' },
          { id: 'layout-4', name: 'Sprayer', latitude: null, longitude: null, state: 'gone', fix: null, ageSeconds: 7200, age: '2 h',
            distance: null, distanceMetres: null },
        ];
        const drawn = window.draw;
        window.draw = state => drawn(Object.assign({}, state, { others: state.others.concat(made) }));
        if (cab.state) draw(cab.state);
        """

    /// Rectangles in the page as [left, top, right, bottom]: the map, its controls, the panel beside
    /// it (if one shows), and each machine's marker as the point it stands for.
    static let geometry = """
        const box = element => { const r = element.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
        const mapBox = document.getElementById('map').getBoundingClientRect();
        const at = latLng => { const p = cab.map.latLngToContainerPoint(latLng); return [mapBox.left + p.x, mapBox.top + p.y]; };
        const controls = Array.from(document.querySelectorAll('#map-buttons button, #map .leaflet-control-zoom a'))
          .filter(element => element.getClientRects().length > 0).map(box);
        const panel = Array.from(document.querySelectorAll('.tab.active')).filter(tab => tab.id !== 'tab-map' && tab.getClientRects().length > 0).map(box);
        const machines = Object.keys(cab.others).map(id => [cab.others[id].options.name, at(cab.others[id].getLatLng())]);
        if (cab.own) machines.push(['This machine', at(cab.own.getLatLng())]);
        return { map: box(document.getElementById('map')), controls: controls, panel: panel, machines: machines };
        """

    struct Geometry {
        var map: [Double]
        var controls: [[Double]]
        var panel: [[Double]]
        var machines: [(String, [Double])]

        init(_ value: Any?) throws {
            let object = try #require(value as? [String: Any])
            let numbers = { (value: Any?) in (value as? [Any] ?? []).map { ($0 as? NSNumber)?.doubleValue ?? .nan } }
            map = numbers(object["map"])
            controls = (object["controls"] as? [Any] ?? []).map(numbers)
            panel = (object["panel"] as? [Any] ?? []).map(numbers)
            machines = (object["machines"] as? [Any] ?? []).compactMap { entry in
                guard let pair = entry as? [Any], let name = pair.first as? String else { return nil }
                return (name, numbers(pair.last))
            }
        }

        static func contains(_ box: [Double], _ point: [Double], inset: Double = 0) -> Bool {
            box.count == 4 && point.count == 2 && point[0] >= box[0] + inset && point[0] <= box[2] - inset
                && point[1] >= box[1] + inset && point[1] <= box[3] - inset
        }
    }

    /// A page on a box that is not connected, with a fix at (52.5, 13.4), the machines above, and
    /// `fields`, in a browser that asks for `language` first.
    static func started(width: Int, height: Int, language: String? = nil, fields: [FieldBox] = []) async throws -> (
        CabFixture, WebDriver
    ) {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        if !fields.isEmpty { _ = try await fixture.storeFields(fields) }
        _ = await Spool(path: fixture.paths.spool).append(Samples.fix(latitude: 52.5, longitude: 13.4))
        try await fixture.start()
        let browser = try await WebDriver(width: width, height: height, language: language)
        do {
            try await browser.open("http://127.0.0.1:\(fixture.port)/")
            #expect(
                try await browser.wait(timeout: 20, for: "return !!(window.cab && cab.map && cab.own && cab.state)"))
            try await browser.run(otherMachines)
            #expect(try await browser.wait(timeout: 10, for: "return Object.keys(cab.others).length === 3"))
        } catch {
            await browser.quit()
            await fixture.stop()
            throw error
        }
        return (fixture, browser)
    }

    @Test(
        "Fit all frames every machine inside the map that shows, clear of its buttons, with a tab open beside it or after it",
        arguments: [(360, 640), (1280, 800)])
    func fitAllInTheVisibleMap(size: (width: Int, height: Int)) async throws {
        let (fixture, browser) = try await Self.started(width: size.width, height: size.height)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            // On a tablet Nearby opens beside the map and the map narrows; on a phone it is a tab over
            // the map, and the map is opened again after it.
            #expect(try await browser.openCabTab("nearby"))
            if size.width < 900 { #expect(try await browser.openCabTab("map")) }
            // Leaflet animates the zoom: measured once the map has come to rest, however long that takes here.
            // Following this machine stops first, so that no new position moves the map meanwhile and
            // the move awaited is the fit's.
            try await browser.run(
                "setFollow(false); window.settled = false; cab.map.once('moveend', () => { window.settled = true; });")
            try await browser.click("#fit")
            #expect(try await browser.wait(timeout: 10, for: "return window.settled === true"))
            try await Task.sleep(for: .milliseconds(100))
            let geometry = try Geometry(try await browser.run(Self.geometry))
            #expect(geometry.machines.count == 4, "\(geometry.machines)")
            if size.width >= 900 {
                #expect(
                    geometry.panel.count == 1 && geometry.map[2] <= (geometry.panel.first?[0] ?? 0) + 1,
                    "the map ends where the panel begins: map \(geometry.map), panel \(geometry.panel)")
            }
            for (name, point) in geometry.machines {
                #expect(
                    Geometry.contains(geometry.map, point, inset: 10),
                    "\(name) at \(point) lies outside the map \(geometry.map)")
                for control in geometry.controls {
                    #expect(
                        !Geometry.contains(control, point), "\(name) at \(point) lies under a control at \(control)")
                }
                for panel in geometry.panel {
                    #expect(!Geometry.contains(panel, point), "\(name) at \(point) lies under the panel at \(panel)")
                }
            }
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "layout-fit-all-\(size.width)x\(size.height).png")
        }
    }

    @Test(
        "a warning, a long sharing label and a notice move nothing, and the notice covers no control and not the fix",
        arguments: [(360, 640), (1280, 800)])
    func nothingMovesOrIsCovered(size: (width: Int, height: Int)) async throws {
        let (fixture, browser) = try await Self.started(width: size.width, height: size.height)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            let places = """
                const box = element => { const r = element.getBoundingClientRect(); return [r.left, r.top, r.width, r.height].map(Math.round); };
                return ['map', 'map-buttons', 'own-info', 'bar', 'strip'].map(id => box(document.getElementById(id)));
                """
            let before = try #require(try await browser.run(places) as? [[Int]])
            // Everything that used to push the map down at once: a warning, a label too long for one
            // line, a ticking "no fix" text, and a notice.
            try await browser.run(
                """
                const state = Object.assign({}, cab.state, { health: 'CRITICAL',
                  reasons: ['the gateway is not running: nothing is sampled or sent', 'no position for 61 s'],
                  sharing: Object.assign({}, cab.state.sharing, { state: 'no_fix', text: 'No fix for 61 s: the receiver sees too few satellites, positions are kept' }) });
                draw(state);
                toast('Tractor 2 entered Long Acre, a field with a long name that takes two lines on a phone');
                """)
            try await Task.sleep(for: .milliseconds(400))
            let after = try #require(try await browser.run(places) as? [[Int]])
            #expect(
                before == after,
                "moved: \(zip(["map", "map buttons", "fix", "header", "strip"], zip(before, after)).filter { $0.1.0 != $0.1.1 })"
            )
            // The notice's box against every control and the fix.
            let overlaps = try #require(
                try await browser.run(
                    """
                    const toast = document.querySelector('#toasts .toast');
                    if (!toast) return ['no notice shown'];
                    const t = toast.getBoundingClientRect();
                    const meets = r => t.left < r.right && r.left < t.right && t.top < r.bottom && r.top < t.bottom;
                    return Array.from(document.querySelectorAll('button, a, input, select, #own-info, #sharing'))
                      .filter(element => element.getClientRects().length > 0 && meets(element.getBoundingClientRect()))
                      .map(element => element.id || element.className || element.tagName);
                    """) as? [String])
            #expect(overlaps.isEmpty, "the notice covers: \(overlaps)")
            let shown = try await browser.run("return document.querySelector('#toasts .toast').textContent") as? String
            #expect(shown?.hasPrefix("Tractor 2 entered Long Acre") == true)
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "layout-notice-\(size.width)x\(size.height).png")
        }
    }

    @Test(
        "this machine is a 48 px marker over every other, its fix told by a letter as well as a colour, with a heading arrow when moving"
    )
    func ownMarker() async throws {
        let (fixture, browser) = try await Self.started(width: 1280, height: 800)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            // Another machine on the very spot: what is on top there is this machine's marker.
            let onTop =
                try await browser.run(
                    """
                    const made = { id: 'layout-9', name: 'Sprayer 2', latitude: cab.state.own.latitude, longitude: cab.state.own.longitude, state: 'active',
                                   fix: 'GPS', ageSeconds: 1, age: '1 s', distance: '0 m', distanceMetres: 0, bearing: 0, direction: 'N 0°' };
                    draw(Object.assign({}, cab.state, { others: cab.state.others.concat([made]) }));
                    cab.map.setView(cab.own.getLatLng(), 17, { animate: false });
                    const r = cab.own.getElement().getBoundingClientRect();
                    const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                    return [r.width, r.height, !!(top && top.closest('.own-marker'))];
                    """) as? [Any]
            let width = (onTop?[0] as? NSNumber)?.doubleValue ?? 0
            #expect(
                width >= 48 && (onTop?[1] as? NSNumber)?.doubleValue ?? 0 >= 48,
                "the marker's size: \(String(describing: onTop))")
            #expect(onTop?[2] as? Bool == true, "another machine on the same spot is drawn over this one")

            // Each fix its own letter; a heading only when moving.
            let looks = try #require(
                try await browser.run(
                    """
                    return ['rtk_fixed', 'rtk_float', 'dgps', 'autonomous', 'none'].map((fix, index) => {
                      const heading = index === 0 ? 90 : null;
                      draw(Object.assign({}, cab.state, { own: Object.assign({}, cab.state.own, { fix: fix, old: fix === 'none', heading: heading, speed: heading ? 3 : 0 }) }));
                      const element = cab.own.getElement();
                      const arrow = element.querySelector('.heading');
                      return [element.querySelector('text').textContent, element.querySelector('.disc').getAttribute('stroke'),
                              arrow ? arrow.getAttribute('transform') : 'none'];
                    });
                    """) as? [[String]])
            #expect(Set(looks.map { $0[0] }).count == 5, "one letter per fix: \(looks)")
            #expect(Set(looks.map { $0[1] }).count == 5, "one colour per fix: \(looks)")
            #expect(looks.first?[2] == "rotate(90 24 24)", "heading east: \(looks)")
            #expect(looks.dropFirst().allSatisfy { $0[2] == "none" }, "no arrow when standing: \(looks)")
            #expect(
                try await browser.run("return document.getElementById('own-info').textContent") as? String
                    != "No position yet")
        }
    }

    @Test("names of machines close together do not cover each other or this machine; zoomed in, every name shows again")
    func namesDoNotCover() async throws {
        let (fixture, browser) = try await Self.started(width: 1280, height: 800)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            // Two more machines 60 m apart, north and south, 3.4 km east: one spot at zoom 12, far apart at 18.
            try await browser.run(
                """
                const pair = [
                  { id: 'close-1', name: 'Loader North', latitude: 52.50027, longitude: 13.45, state: 'active', fix: 'GPS', ageSeconds: 1, age: '1 s',
                    distance: '3.4 km', distanceMetres: 3400, bearing: 90, direction: 'E 90°' },
                  { id: 'close-2', name: 'Loader South', latitude: 52.49973, longitude: 13.45, state: 'stale', fix: 'GPS', ageSeconds: 400, age: '7 min',
                    distance: '3.4 km', distanceMetres: 3400, bearing: 90, direction: 'E 90°' },
                ];
                const before = window.draw;
                window.draw = state => before(Object.assign({}, state, { others: state.others.filter(o => !o.id.startsWith('close-')).concat(pair) }));
                draw(cab.state);
                """)
            let labels = """
                const box = e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
                const shown = Array.from(document.querySelectorAll('.leaflet-tooltip.other-label, .leaflet-tooltip.own-label'))
                  .filter(e => getComputedStyle(e).visibility !== 'hidden');
                return { shown: shown.map(e => [e.textContent].concat(box(e))), own: box(cab.own.getElement()) };
                """
            func look(zoom: Int) async throws -> (names: [String], overlaps: [String]) {
                _ = try await browser.run(
                    "setFollow(false); cab.map.setView([52.5, 13.45], \(zoom), { animate: false }); return true")
                let answer = try #require(try await browser.run(labels) as? [String: Any])
                let rows = (answer["shown"] as? [[Any]] ?? []).map { row in
                    (row.first as? String ?? "", row.dropFirst().map { ($0 as? NSNumber)?.doubleValue ?? .nan })
                }
                let own = (answer["own"] as? [Any] ?? []).map { ($0 as? NSNumber)?.doubleValue ?? .nan }
                let meets = { (a: [Double], b: [Double]) in
                    a.count == 4 && b.count == 4 && a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
                }
                var overlaps: [String] = []
                for (index, row) in rows.enumerated() {
                    for other in rows.dropFirst(index + 1) where meets(row.1, other.1) {
                        overlaps.append("\(row.0) × \(other.0)")
                    }
                    if row.0 != "This machine", meets(row.1, own) {
                        overlaps.append("\(row.0) × this machine's marker")
                    }
                }
                return (rows.map(\.0), overlaps)
            }
            let far = try await look(zoom: 12)
            #expect(far.overlaps.isEmpty, "names cover each other at zoom 12: \(far.overlaps)")
            #expect(
                far.names.contains("Loader North") && !far.names.contains("Loader South"),
                "of two names on one spot, the machine still sending keeps its name: \(far.names)")
            let near = try await look(zoom: 18)
            #expect(near.overlaps.isEmpty, "names cover each other at zoom 18: \(near.overlaps)")
            #expect(
                near.names.contains("Loader North") && near.names.contains("Loader South"),
                "zoomed in, both names show: \(near.names)")
        }
    }

    @Test(
        "trails are on from the start, and a jump of more than a kilometre breaks this machine's trail rather than drawing a road"
    )
    func trails() async throws {
        let (fixture, browser) = try await Self.started(width: 1280, height: 800)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            #expect(try await browser.wait(timeout: 10, for: "return !!(cab.trails && cab.trails.own)"))
            #expect(
                try await browser.run("return document.getElementById('trails').getAttribute('aria-pressed')")
                    as? String == "true")
            let runs = try #require(
                try await browser.run(
                    """
                    const count = () => cab.trails.own.getLatLngs().length;
                    const counts = [count()];
                    extendTrail('own', [52.5005, 13.4]); counts.push(count());   // 55 m on: the same run
                    extendTrail('own', [52.6, 13.4]); counts.push(count());      // 11 km away: a new run
                    extendTrail('own', [52.6001, 13.4]); counts.push(count());
                    return counts.concat([cab.trails.own.getLatLngs()[counts[2] - 1].length]);
                    """) as? [Int])
            #expect(
                runs.count == 5 && runs[1] == runs[0] && runs[2] == runs[0] + 1 && runs[3] == runs[2] && runs[4] == 2,
                "\(runs)")
        }
    }

    @Test(
        "Nearby: a card per machine with distance and direction; a tap centres the map on it and shows its details",
        arguments: [(360, 640), (1280, 800)])
    func nearbyCards(size: (width: Int, height: Int)) async throws {
        let (fixture, browser) = try await Self.started(width: size.width, height: size.height)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            #expect(try await browser.openCabTab("nearby"))
            let cards = try #require(
                try await browser.run(
                    """
                    return Array.from(document.querySelectorAll('#nearby li')).map(item => [item.className, item.querySelector('.name').textContent,
                      item.querySelector('.where').textContent, String(item.querySelector('button').disabled),
                      String(item.getBoundingClientRect().right <= window.innerWidth)]);
                    """) as? [[String]])
            #expect(cards.count == 4, "\(cards)")
            #expect(cards.contains { $0[1] == "Baler" && $0[2].contains("3.6 km NE 51°") }, "\(cards)")
            #expect(
                cards.contains { $0[1] == "Sprayer" && $0[3] == "true" },
                "a machine with no position cannot be centred: \(cards)")
            #expect(cards.allSatisfy { $0[4] == "true" }, "a card runs off the screen: \(cards)")
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "layout-nearby-\(size.width)x\(size.height).png")

            try await browser.click("#nearby button[data-id='layout-3']")
            // The map comes to rest after the details have opened (and panned it, if they had to).
            #expect(try await browser.wait(timeout: 10, for: "return !!document.querySelector('.machine-popup')"))
            try await browser.run(
                "window.settled = !cab.map._panAnim || !cab.map._panAnim._inProgress; if (!window.settled) cab.map.once('moveend', () => { window.settled = true; });"
            )
            #expect(try await browser.wait(timeout: 10, for: "return window.settled === true"))
            try await Task.sleep(for: .milliseconds(300))
            let centred = try #require(
                try await browser.run(
                    """
                    const size = cab.map.getSize();
                    const p = cab.map.latLngToContainerPoint(cab.others['layout-3'].getLatLng());
                    const popup = document.querySelector('.machine-popup');
                    const box = document.getElementById('map').getBoundingClientRect(), x = box.left + p.x, y = box.top + p.y;
                    const under = Array.from(document.querySelectorAll('#map-buttons button')).map(b => b.getBoundingClientRect())
                      .some(b => x >= b.left && x <= b.right && y >= b.top && y <= b.bottom);
                    return [Math.abs(p.x - size.x / 2), Math.abs(p.y - size.y / 2), popup ? popup.textContent : '',
                            document.getElementById('tab-map').offsetWidth > 0, cab.follow, under];
                    """) as? [Any])
            let off = [(centred[0] as? NSNumber)?.doubleValue ?? 999, (centred[1] as? NSNumber)?.doubleValue ?? 999]
            // Centred in the room the buttons leave, and opening the details may pan the map a little to show them whole.
            #expect(off.allSatisfy { $0 < 120 }, "the Baler is \(off) px from the map's centre")
            #expect(centred[5] as? Bool == false, "the Baler lies under a button")
            let details = centred[2] as? String ?? ""
            #expect(
                details.contains("Baler") && details.contains("NE 51°") && details.contains("GPS"),
                "details: \(details)")
            #expect(centred[3] as? Bool == true, "the map shows")
            #expect(centred[4] as? Bool == false, "following this machine stops, or the map would jump back")
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "layout-nearby-tapped-\(size.width)x\(size.height).png")
        }
    }
}
