import Fields
import Foundation
import Spool
import StateDirectory
import StateView
import TestSupport
import Testing

@testable import CabView

/// The farm's fields in the cab view: drawn from the store, and which one each machine is in.
@Suite("fields in the cab view", .serialized, .timeLimit(.minutes(1)))
struct CabFieldsTests {
    static let farmFacts = Fixtures.root.appendingPathComponent(
        "Fixtures/isoxml/farmfacts_2021-04-09T15_33_26_taskdata.zip"
    ).path

    /// A point inside `field` (not in a hole), found by trying points between its boundary's vertices and their mean.
    static func inside(_ field: Field) throws -> GeoPoint {
        let index = FieldIndex(fields: [field])
        let ring = try #require(field.boundaries.first).points
        let mean = GeoPoint(
            latitude: ring.map(\.latitude).reduce(0, +) / Double(ring.count),
            longitude: ring.map(\.longitude).reduce(0, +) / Double(ring.count))
        for point in [mean]
            + ring.map({
                GeoPoint(
                    latitude: ($0.latitude * 0.1 + mean.latitude * 0.9),
                    longitude: ($0.longitude * 0.1 + mean.longitude * 0.9))
            })
        where index.field(containing: point.latitude, longitude: point.longitude) != nil {
            return point
        }
        throw LoopbackHTTPError(description: "no point found inside \(field.name)")
    }

    @Test(
        "the fields come as GeoJSON with their names; the state says which field this machine is in, and a move says when it left"
    )
    func fieldsAndTheCurrentOne() async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        let store = FieldStore(path: fixture.directory + "/fields.sqlite")
        let report = try await store.importTaskData(at: Self.farmFacts)
        let target = try #require(report.imported.first { $0.name.contains("Test G-SDS") } ?? report.imported.first)
        let point = try Self.inside(target)
        let spool = Spool(path: fixture.paths.spool)
        _ = await spool.append(
            Samples.fix(latitude: point.latitude, longitude: point.longitude, at: Date().addingTimeInterval(-2)))
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            let collection = try await fixture.get("/api/fields")
            #expect(collection.status == 200)
            let features = try #require(collection.json?["features"] as? [[String: Any]])
            #expect(features.count == report.imported.count)
            let names = features.compactMap { ($0["properties"] as? [String: Any])?["name"] as? String }
            #expect(Set(names) == Set(report.imported.map(\.name)))
            let geometry = try #require(features.first?["geometry"] as? [String: Any])
            #expect(geometry["type"] as? String == "MultiPolygon")
            let first = try #require((geometry["coordinates"] as? [[[[Double]]]])?.first?.first?.first)
            #expect(first.count == 2 && abs(first[0]) <= 180 && abs(first[1]) <= 90, "[longitude, latitude]")

            let state = try await fixture.get("/api/state")
            #expect(state.json?["fieldsKnown"] as? Bool == true)
            #expect(state.json?["field"] as? String == target.name)
            #expect((state.json?["fieldsVersion"] as? Int ?? 0) >= 1)

            // Driven off onto the road (a kilometre north): no field, and one notice that it left.
            let mover = Task {
                try await Task.sleep(for: .milliseconds(600))
                _ = await spool.append(Samples.fix(latitude: point.latitude + 0.01, longitude: point.longitude))
            }
            let events = try await LoopbackHTTP.stream(
                port: fixture.port, path: "/api/events", headers: ["Accept": "text/event-stream"],
                timeout: 10
            ) { $0.contains("left ") }
            try await mover.value
            #expect(
                events.contains("event: notice") && events.contains("This machine left \(target.name)"),
                "\(events.suffix(400))")
            let after = try await fixture.get("/api/state")
            #expect(!(after.json?["field"] is String), "off every field")
        }
    }

    @Test(
        "this machine and another each entering and then leaving a field: one notice each way, on the page and in the journal, never repeated"
    )
    func enteringAndLeaving() async throws {
        let fixture = try CabFixture()
        try await tearingDown({ await fixture.stop() }) {
            let own = FieldBox(name: "Nordacker", south: 52.50, west: 13.39, north: 52.51, east: 13.41)
            let theirs = FieldBox(name: "Südkoppel", south: 51.995, west: 8.49, north: 52.005, east: 8.51)
            try await fixture.storeFields([own, theirs])
            let spool = Spool(path: fixture.paths.spool)
            let others = OtherMachinesStore(path: fixture.paths.others)
            let start = Date().addingTimeInterval(-600)
            try await others.applyEndpointList([(id: "peer", name: "Sprayer")], ownEndpointID: "me", at: start)
            let journal = TileTestJournal()
            var settings = CabMonitor.Settings(
                paths: fixture.paths, thresholds: StatusThresholds(), environments: ["qa"])
            settings.notMovingAfter = 86_400  // only the fields' notices here
            let monitor = CabMonitor(settings: settings, logger: journal.logger)

            // Each step: both machines report where they are now, and the page process looks, twice.
            let steps: [(own: Double, theirs: Double)] = [
                (52.49, 51.99), (52.505, 52.0), (52.506, 52.001), (52.52, 52.01), (52.53, 52.02),
            ]
            for (index, step) in steps.enumerated() {
                let at = start.addingTimeInterval(Double(index) * 20)
                _ = await spool.append(Samples.fix(latitude: step.own, longitude: 13.40, at: at))
                _ = try await others.record(
                    [gpsInfo(from: "peer", [(.dGnss, step.theirs, 8.50, at)])], ownEndpointID: "me", receivedAt: at)
                await monitor.refreshIfChanged(now: at.addingTimeInterval(1))
                await monitor.refreshIfChanged(now: at.addingTimeInterval(10))  // nothing new: nothing more to say
            }
            let notices = await monitor.notices
            let said = notices.filter { $0.kind == "field" }.map(\.text)
            #expect(
                said == [
                    "This machine entered Nordacker", "Sprayer entered Südkoppel", "This machine left Nordacker",
                    "Sprayer left Südkoppel",
                ],
                "\(notices.map(\.text))")
            let logged = journal.all.filter { $0.contains(" entered ") || $0.contains(" left ") }
            #expect(logged == said.map { "notice " + $0 }, "\(journal.all)")
        }
    }

    @Test(
        "an export sent from Settings is imported as the CLI would; a file that is not TaskData is refused with why; no CSRF token, no import"
    )
    func uploadFromSettings() async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            let session = try #require(CabFixture.session(from: try await fixture.get("/api/session")))
            let zip = try Data(contentsOf: URL(fileURLWithPath: Self.farmFacts))
            func upload(_ body: Data, name: String, csrf: Bool = true) async throws -> HTTPReply {
                var headers = session.headers
                headers["Content-Type"] = "application/octet-stream"
                if csrf { headers["X-CSRF-Token"] = session.csrfToken }
                return try await LoopbackHTTP.request(
                    "POST", port: fixture.port, path: "/api/fields/import?name=\(name)", headers: headers, body: body)
            }
            #expect(try await upload(zip, name: "farm.zip", csrf: false).status == 403)
            #expect(!FileManager.default.fileExists(atPath: fixture.directory + "/fields.sqlite"))

            let imported = try await upload(zip, name: "farm.zip")
            #expect(imported.status == 200, "\(imported.text)")
            #expect(imported.json?["imported"] as? Int == 9)
            #expect((imported.json?["skipped"] as? [String])?.count == 6)
            let stored = try await FieldStore(path: fixture.directory + "/fields.sqlite").fields()
            #expect(stored.count == 9 && stored.allSatisfy { $0.source == "file: farm.zip" })

            let refused = try await upload(Data("<html>not a zip</html>".utf8), name: "farm.zip")
            #expect(refused.status == 422)
            #expect(((refused.json?["error"] as? String) ?? "").count > 20, "\(refused.text)")
            #expect(
                try await FieldStore(path: fixture.directory + "/fields.sqlite").fields().count == 9,
                "a refused file changes nothing")
            let leftovers = try FileManager.default.contentsOfDirectory(atPath: fixture.directory).filter {
                $0.hasPrefix(".fields-upload")
            }
            #expect(leftovers.isEmpty, "\(leftovers)")
        }
    }

    @Test("an upload's name is kept to a plain file name")
    func uploadNames() {
        #expect(CabServer.uploadName("farm 2026.zip") == "farm 2026.zip")
        #expect(CabServer.uploadName("../../etc/passwd") == "passwd")
        #expect(CabServer.uploadName(".hidden") == "upload.zip")
        #expect(CabServer.uploadName(nil) == "upload.zip")
        #expect(CabServer.uploadName("/") == "upload.zip")
        #expect(CabServer.uploadName(String(repeating: "x", count: 200)) == "upload.zip")
        #expect(CabServer.uploadName("Äcker;rm -rf.zip") == "ckerrm -rf.zip")
    }

    @Test("with no fields the state says nothing of them, and a store that is not SQLite does not stop the page")
    func noFields() async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        try Data("not a database".utf8 + Data(count: 1024)).write(
            to: URL(fileURLWithPath: fixture.directory + "/fields.sqlite"))
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            let state = try await fixture.get("/api/state")
            #expect(state.status == 200)
            #expect(state.json?["fieldsKnown"] as? Bool == false)
            #expect(!(state.json?["field"] is String))
            let collection = try await fixture.get("/api/fields")
            #expect((collection.json?["features"] as? [Any])?.isEmpty == true)
        }
    }
}

/// The fields in a real browser, at a phone's and a tablet's size.
@Suite("fields in the cab view, in a browser", .serialized, .timeLimit(.minutes(2)))
struct CabFieldsBrowserTests {
    @Test(
        "the FarmFacts fields are drawn where their coordinates say, named, and the header (on a phone, the strip) names the one the tractor is in",
        arguments: [(360, 640), (1280, 800)])
    func drawnAndNamed(size: (width: Int, height: Int)) async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        let report = try await FieldStore(path: fixture.directory + "/fields.sqlite").importTaskData(
            at: CabFieldsTests.farmFacts)
        let target = try #require(report.imported.first)
        let point = try CabFieldsTests.inside(target)
        _ = await Spool(path: fixture.paths.spool).append(
            Samples.fix(latitude: point.latitude, longitude: point.longitude))
        try await fixture.start()
        let browser = try await WebDriver(width: size.width, height: size.height)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            try await browser.open("http://127.0.0.1:\(fixture.port)/")
            #expect(
                try await browser.wait(
                    timeout: 20,
                    for: "return !!(window.cab && cab.fieldsLayer && cab.fieldsLayer.getLayers().length > 0)"))
            #expect(
                try await browser.wait(
                    timeout: 10, for: "return document.getElementById('field').textContent.startsWith('In: ')"))
            // On a phone the header holds the sharing label only, and the field's name is in the strip below the map.
            #expect(try await browser.text(size.width < 700 ? "#field-here" : "#field") == "In: \(target.name)")
            // Each field's outline contains its own first boundary point as Leaflet places it.
            let drawn = try #require(
                try await browser.run(
                    """
                    return cab.fieldsLayer.getLayers().map(l => [l.feature.properties.name, l.getBounds().getSouth(), l.getBounds().getWest(),
                                                                 l.getBounds().getNorth(), l.getBounds().getEast()]);
                    """) as? [[Any]])
            #expect(drawn.count == report.imported.count)
            for field in report.imported {
                let box = try #require(drawn.first { $0.first as? String == field.name }, "\(field.name) is not drawn")
                let numbers = box.dropFirst().compactMap { ($0 as? NSNumber)?.doubleValue }
                let corner = try #require(field.boundaries.first?.points.first)
                #expect(
                    numbers.count == 4 && corner.latitude >= numbers[0] - 1e-9 && corner.longitude >= numbers[1] - 1e-9
                        && corner.latitude <= numbers[2] + 1e-9 && corner.longitude <= numbers[3] + 1e-9,
                    "\(field.name): \(numbers)")
            }
            let names = try #require(
                try await browser.run(
                    "return Array.from(document.querySelectorAll('.field-name')).map(e => e.textContent);") as? [String]
            )
            #expect(Set(names) == Set(report.imported.map(\.name)))
            _ = try CabBrowserTests.save(try await browser.screenshot(), as: "fields-\(size.width)x\(size.height).png")
        }
    }

    /// The Weiherhaus fixture: tiles rendered from OpenStreetMap data, fields made from its farmland
    /// polygons, and a tractor's route through two of them (Fixtures/basemap/PROVENANCE.md).
    static let basemapFixture = Fixtures.root.appendingPathComponent("Fixtures/basemap").path

    @Test(
        "the farm's fields over the offline basemap: tiles from the box's file, every field drawn, the tractor's field named",
        arguments: [(360, 640), (1280, 800)])
    func fieldsOverOfflineBasemap(size: (width: Int, height: Int)) async throws {
        let fixture = try CabFixture()
        fixture.configuration.basemap = Self.basemapFixture + "/weiherhaus.mbtiles"
        let report = try await FieldStore(path: fixture.directory + "/fields.sqlite").importTaskData(
            at: Self.basemapFixture + "/TASKDATA.XML")
        #expect(report.imported.count == 8)
        // The route up to its last point in the first field it enters, one fix a second: the tractor is at work in it.
        let route =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: Self.basemapFixture + "/route.json"))) as? [String: Any]
        let points = try #require(route?["points"] as? [[Double]]).compactMap {
            $0.count == 2 ? GeoPoint(latitude: $0[0], longitude: $0[1]) : nil
        }
        let firstField = try #require((route?["fields"] as? [String])?.first)
        let index = FieldIndex(fields: report.imported)
        let inside = points.indices.filter {
            index.field(containing: points[$0].latitude, longitude: points[$0].longitude)?.name == firstField
        }
        let last = try #require(inside.last)
        #expect(inside.count > 20, "the route works \(firstField): \(inside.count) points in it")
        let spool = Spool(path: fixture.paths.spool)
        let start = Date().addingTimeInterval(-Double(last + 1))
        for (offset, point) in points.prefix(last + 1).enumerated() {
            _ = await spool.append(
                Samples.fix(
                    latitude: point.latitude, longitude: point.longitude, at: start.addingTimeInterval(Double(offset))))
        }
        try fixture.writeHeartbeat(
            onboarded: false,
            lastFix: Samples.fix(latitude: points[last].latitude, longitude: points[last].longitude))
        try await fixture.start()
        let browser = try await WebDriver(width: size.width, height: size.height)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            try await browser.open("http://127.0.0.1:\(fixture.port)/")
            #expect(
                try await browser.wait(
                    timeout: 20,
                    for: "return !!(window.cab && cab.fieldsLayer && cab.fieldsLayer.getLayers().length === 8)"))
            #expect(
                try await browser.wait(
                    timeout: 10, for: "return document.getElementById('field').textContent === 'In: \(firstField)'"))
            // The tiles come from the box's file and load (at a phone's zoom some lie beyond the file's area,
            // which the file does not hold); none from anywhere else.
            #expect(
                try await browser.wait(
                    timeout: 20,
                    for: """
                        const tiles = Array.from(document.querySelectorAll('img.leaflet-tile'));
                        return tiles.filter(t => t.classList.contains('leaflet-tile-loaded') && t.naturalWidth === 256).length >= 4;
                        """))
            let sources = try #require(
                try await browser.run(
                    "return Array.from(document.querySelectorAll('img.leaflet-tile')).map(t => t.src)") as? [String])
            #expect(
                !sources.isEmpty && sources.allSatisfy { $0.hasPrefix("http://127.0.0.1:\(fixture.port)/basemap/") },
                "\(sources)")
            let names = try #require(
                try await browser.run(
                    "return Array.from(document.querySelectorAll('.field-name')).map(e => e.textContent);") as? [String]
            )
            #expect(Set(names) == Set(report.imported.map(\.name)))
            _ = try CabBrowserTests.save(
                try await browser.screenshot(), as: "fields-basemap-\(size.width)x\(size.height).png")
        }
    }

    @Test("a TaskData zip chosen in Settings is imported, and its fields appear on the map without a reload")
    func uploadInTheBrowser() async throws {
        let fixture = try CabFixture()
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        let browser = try await WebDriver(width: 1280, height: 800)
        try await tearingDown({
            await browser.quit()
            await fixture.stop()
        }) {
            try await browser.open("http://127.0.0.1:\(fixture.port)/")
            #expect(try await browser.wait(timeout: 20, for: "return !!(window.cab && cab.state)"))
            let before = try await browser.run(
                "return String(cab.fieldsLayer) + ' ' + cab.fieldsVersion + ' ' + cab.state.fieldsVersion")
            #expect(before as? String == "null 0 0", "no fields before the import: \(String(describing: before))")
            try await browser.click("#tabs button[data-tab='settings']")
            try await browser.attach(CabFieldsTests.farmFacts, to: "#fields-file")
            try await browser.click("#fields-import")
            #expect(
                try await browser.wait(
                    timeout: 15,
                    for: """
                        return Array.from(document.querySelectorAll('.toast')).some(t => t.textContent.startsWith('Imported 9 fields'))
                        """))
            #expect(
                try await browser.wait(
                    timeout: 15, for: "return !!cab.fieldsLayer && cab.fieldsLayer.getLayers().length === 9"))
        }
    }
}
