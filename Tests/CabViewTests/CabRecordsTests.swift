import Fields
import Foundation
import GNSS
import Spool
import TestSupport
import Testing
import Track

@testable import CabView

/// A week of work in Europe/Berlin, written by the daemon's own track store: the Records tab's input.
/// Tuesday 24 March 2026: two hours of RTK fixed northwards at 2 m/s from 08:00, ten minutes without
/// a fix, an hour of DGPS standing still. Thursday 26 March: half an hour autonomous. 10 February:
/// ten minutes of RTK float, for the year's chart.
struct RecordedWeek {
    static let zone = TimeZone(identifier: "Europe/Berlin")!
    static let tuesday = Date(timeIntervalSince1970: 1_774_335_600)  // 2026-03-24T07:00:00Z, 08:00 in Berlin
    static let thursday = tuesday.addingTimeInterval(2 * 86_400 + 3600)
    static let february = Date(timeIntervalSince1970: 1_770_714_000)  // 2026-02-10T09:00:00Z

    /// The positions of Tuesday's runs of fixes, as written.
    private(set) var tuesdayRuns: [[Coordinate]] = [[], []]
    /// Every point written, oldest first.
    private(set) var points: [TrackPoint] = []

    /// Two fields on Tuesday's way: one the drive crosses (steps 1001 to 3000 of it), one around
    /// the end of the drive and where the machine stood after (steps 6001 on, and the parked hour).
    /// The second's name is what a hostile export could hold.
    static let crossed = FieldBox(
        name: "Großer Schlag", south: northwards(1000).latitude + 1 / 111_195, west: 13.399,
        north: northwards(3000).latitude + 1 / 111_195, east: 13.401)
    static let parkedIn = FieldBox(
        name: "<img src=x onerror=\"window.pwned=1\"> Koppel/\u{202E}3", south: northwards(6000).latitude + 1 / 111_195,
        west: 13.399, north: northwards(7199).latitude + 0.001, east: 13.401)
    static let fields = [crossed, parkedIn]

    static func northwards(_ step: Int, from start: Coordinate = Coordinate(latitude: 52.5, longitude: 13.4))
        -> Coordinate
    {
        Coordinate(latitude: start.latitude + Double(step) * 2 / 111_195, longitude: start.longitude)
    }

    mutating func write(to path: String) async throws {
        var configuration = TrackStore.Configuration()
        configuration.calendar.timeZone = Self.zone
        let store = TrackStore(path: path, configuration: configuration)
        var points: [TrackPoint] = []
        for second in 0..<7200 {
            let at = Self.northwards(second)
            tuesdayRuns[0].append(at)
            points.append(
                TrackPoint(
                    time: Self.tuesday.addingTimeInterval(Double(second)), state: .fix(.threeD, .rtkFixed),
                    coordinate: at, speed: 2))
        }
        for second in 7200..<7800 {
            points.append(TrackPoint(time: Self.tuesday.addingTimeInterval(Double(second)), state: .noFix))
        }
        let parked = Self.northwards(7199)
        for second in 7800..<11_400 {
            tuesdayRuns[1].append(parked)
            points.append(
                TrackPoint(
                    time: Self.tuesday.addingTimeInterval(Double(second)), state: .fix(.threeD, .dgps),
                    coordinate: parked, speed: 0))
        }
        for second in 0..<1800 {
            points.append(
                TrackPoint(
                    time: Self.thursday.addingTimeInterval(Double(second)), state: .fix(.twoD, .autonomous),
                    coordinate: Coordinate(latitude: 52.6, longitude: 13.5), speed: 0))
        }
        for second in 0..<600 {
            points.append(
                TrackPoint(
                    time: Self.february.addingTimeInterval(Double(second)), state: .fix(.threeD, .rtkFloat),
                    coordinate: Coordinate(latitude: 52.4, longitude: 13.3), speed: 0))
        }
        // In time order, as the daemon records: February first.
        self.points = points.sorted(by: { $0.time < $1.time })
        for point in self.points { try await store.record(point, now: Self.tuesday) }
        try await store.flush(now: Self.tuesday)
    }
}

@Suite("Cab view records: figures, a day's track and its files", .serialized, .timeLimit(.minutes(3)))
struct CabRecordsTests {
    /// The recorded week served; `withFields`, RecordedWeek's fields stored too (returned in its order).
    static func served(withFields: Bool = false) async throws -> (CabFixture, RecordedWeek, [StoredField]) {
        let fixture = try CabFixture()
        var week = RecordedWeek()
        try await week.write(to: fixture.configuration.trackPath)
        let fields = withFields ? try await fixture.storeFields(RecordedWeek.fields) : []
        fixture.configuration.trackTimeZone = RecordedWeek.zone
        // A daemon at work, so that the page has its own position and no problem to show.
        let spool = Spool(path: fixture.paths.spool)
        for step in 0..<3 {
            await spool.append(
                Samples.fix(
                    latitude: 52.51 + Double(step) * 0.0001, longitude: 13.4,
                    at: Date().addingTimeInterval(Double(step - 3))))
        }
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        return (fixture, week, fields)
    }

    static func close(_ value: Any?, _ expected: Double, within tolerance: Double = 1e-6) -> Bool {
        abs((value as? Double ?? -1) - expected) < tolerance
    }

    @Test(
        "the week and the year of a day, each day and month with its hours by quality, outages, moving time and distance"
    )
    func summary() async throws {
        let (fixture, week, _) = try await Self.served()
        try await tearingDown({ await fixture.stop() }) {
            let reply = try await fixture.get("/api/records?date=2026-03-26")
            #expect(reply.status == 200, "\(reply.text)")
            let summary = try #require(reply.json)
            #expect(
                summary["timeZone"] as? String == "Europe/Berlin" && summary["week"] as? String == "2026-W13"
                    && summary["year"] as? String == "2026")
            #expect(summary["firstDay"] as? String == "2026-02-10" && summary["lastDay"] as? String == "2026-03-26")
            let days = try #require(summary["weekDays"] as? [[String: Any]])
            #expect(days.compactMap { $0["key"] as? String } == (23...29).map { "2026-03-\($0)" })
            #expect(
                days.compactMap { $0["label"] as? String } == [
                    "Mon 23", "Tue 24", "Wed 25", "Thu 26", "Fri 27", "Sat 28", "Sun 29",
                ])
            let tuesday = try #require(days[1]["figures"] as? [String: Any])
            let qualities = try #require(tuesday["hoursByQuality"] as? [String: Double])
            // Each sample counts until the next; the day's last sample stands for no time.
            #expect(Self.close(qualities["rtk_fixed"], 2) && Self.close(qualities["dgps"], 3599.0 / 3600))
            #expect(Self.close(tuesday["fixHours"], 10_799.0 / 3600) && Self.close(tuesday["noFixMinutes"], 10))
            #expect(Self.close(tuesday["movingHours"], 7199.0 / 3600), "moving only while driving north: \(tuesday)")
            let metres = zip(week.tuesdayRuns[0], week.tuesdayRuns[0].dropFirst()).reduce(0.0) { sum, pair in
                sum + independentHaversine((pair.0.latitude, pair.0.longitude), (pair.1.latitude, pair.1.longitude))
            }
            #expect(Self.close(tuesday["kilometres"], metres / 1000, within: 1e-5), "\(tuesday) against \(metres) m")
            #expect(tuesday["samples"] as? Int == 11_400)
            let thursday = try #require(days[3]["figures"] as? [String: Any])
            #expect(Self.close((thursday["hoursByQuality"] as? [String: Double])?["autonomous"], 1799.0 / 3600))
            #expect(
                days.enumerated().allSatisfy { index, day in
                    [1, 3].contains(index) || (day["figures"] as? [String: Any])?["samples"] as? Int == 0
                })

            let months = try #require(summary["months"] as? [[String: Any]])
            #expect(
                months.count == 12 && months.first?["label"] as? String == "Jan"
                    && months.last?["key"] as? String == "2026-12")
            let march = try #require(months[2]["figures"] as? [String: Any])
            #expect(Self.close(march["fixHours"], (10_799.0 + 1799) / 3600) && march["samples"] as? Int == 13_200)
            #expect(Self.close((months[1]["figures"] as? [String: Any])?["fixHours"], 599.0 / 3600))

            let nothing = try await fixture.get("/api/records?date=2025-01-01")
            #expect(nothing.status == 200 && (nothing.json?["dayFigures"] as? [String: Any])?["samples"] as? Int == 0)
        }
    }

    @Test(
        "what the machine did reaches Records: the day's hours working and not, area (by the configuration's width, or the one given in Settings), engine hours and fuel; a field's work; the road off the fields",
        arguments: [true, false])
    func machineFigures(widthConfigured: Bool) async throws {
        let fixture = try CabFixture()
        try await tearingDown({ await fixture.stop() }) {
            fixture.configuration.trackTimeZone = RecordedWeek.zone
            if widthConfigured {
                fixture.configuration.workingWidth = 6
            } else {
                try await Spool(path: fixture.paths.spool).setWorkingWidth(6)
            }
            var configuration = TrackStore.Configuration()
            configuration.calendar.timeZone = RecordedWeek.zone
            let store = TrackStore(path: fixture.configuration.trackPath, configuration: configuration)
            // Northwards at 2 m/s for 20 minutes: the first 10 working in a field, then 10 on the road; 1,500 rpm, 18 L/h.
            for second in 0...1200 {
                try await store.record(
                    TrackPoint(
                        time: RecordedWeek.tuesday.addingTimeInterval(Double(second)), state: .fix(.threeD, .rtkFixed),
                        coordinate: RecordedWeek.northwards(second), speed: 2,
                        work: second < 600 ? .working : .notWorking,
                        engineSpeed: 1_500, fuelRate: 18), now: RecordedWeek.tuesday)
            }
            try await store.flush(now: RecordedWeek.tuesday)
            let field = FieldBox(
                name: "Nordacker", south: 52.499, west: 13.399,
                north: RecordedWeek.northwards(599).latitude + 1 / 111_195,
                east: 13.401)
            _ = try await fixture.storeFields([field])
            try fixture.writeHeartbeat(onboarded: false)
            try await fixture.start()

            let worked = zip(0..<600, 1...600).reduce(0.0) { sum, steps in
                let (from, to) = (RecordedWeek.northwards(steps.0), RecordedWeek.northwards(steps.1))
                return sum + independentHaversine((from.latitude, from.longitude), (to.latitude, to.longitude))
            }
            let day = try #require(
                ((try await fixture.get("/api/records?date=2026-03-24")).json?["dayFigures"] as? [String: Any])?[
                    "machine"]
                    as? [String: Any])
            #expect(
                Self.close(day["workingHours"], 600.0 / 3600) && Self.close(day["notWorkingHours"], 600.0 / 3600),
                "\(day)")
            #expect(
                Self.close(day["hectares"], worked * 6 / 10_000, within: 1e-4)
                    && Self.close(day["engineHours"], 1200.0 / 3600), "\(day)")
            #expect(Self.close(day["fuelLitres"], 6), "20 minutes at 18 L/h: \(day)")
            let fields = try #require((try await fixture.get("/api/records/fields?date=2026-03-24")).json)
            let inField = try #require(
                ((fields["fields"] as? [[String: Any]])?.first?["machine"]) as? [String: Any], "\(fields)")
            #expect(Self.close(inField["workingHours"], 600.0 / 3600) && inField["roadHours"] == nil, "\(inField)")
            let off = try #require((fields["elsewhere"] as? [String: Any])?["machine"] as? [String: Any], "\(fields)")
            #expect(Self.close(off["roadHours"], 600.0 / 3600) && Self.close(off["workingHours"], 0), "\(off)")
            // A day the machine said nothing of has no machine figures at all.
            let quiet = try await fixture.get("/api/records?date=2026-03-23")
            #expect((quiet.json?["dayFigures"] as? [String: Any])?["machine"] == nil)
            guard !widthConfigured else { return }

            // The same on the page: the day's machine line, each field's work under its name, the road off them.
            let browser = try await WebDriver(width: 1280, height: 800)
            defer { browser.close() }
            try await browser.open("http://127.0.0.1:\(fixture.port)/")
            #expect(try await browser.wait(timeout: 20, for: "return !!(window.cab && cab.map)"))
            #expect(try await browser.openCabTab("records"))
            _ = try await browser.run(
                "const input = document.getElementById('records-day'); input.value = '2026-03-24'; input.dispatchEvent(new Event('change'));"
            )
            let shown = try await browser.wait(
                timeout: 10,
                for: """
                    return cab.records.day === '2026-03-24' && !document.getElementById('records-machine').hidden &&
                           document.querySelectorAll('#records-fields tbody tr').length === 2
                    """)
            let machineLine = try await browser.text("#records-machine")
            #expect(shown, "\(machineLine)")
            #expect(
                machineLine.hasPrefix("Machine: working ") && machineLine.contains("ha worked")
                    && machineLine.contains("6.0 l fuel")
                    && machineLine.contains("engine "), "\(machineLine)")
            let lines =
                try await browser.run(
                    "return Array.from(document.querySelectorAll('#records-fields tbody tr .work')).map(e => e.textContent)"
                ) as? [String]
            #expect(
                lines?.count == 2 && lines?.first?.hasPrefix("working ") == true
                    && lines?.first?.contains("ha worked") == true
                    && lines?.last?.contains("on the road ") == true, "\(String(describing: lines))")
        }
    }

    @Test("a day's track breaks where the fix was lost; GPX and GeoJSON downloads are named after the day and validate")
    func dayAndFiles() async throws {
        let (fixture, week, _) = try await Self.served()
        try await tearingDown({ await fixture.stop() }) {
            let reply = try await fixture.get("/api/records/day?date=2026-03-24")
            #expect(reply.status == 200, "\(reply.text)")
            let track = try #require(reply.json)
            let segments = try #require(track["segments"] as? [[[Double]]])
            #expect(segments.map(\.count) == week.tuesdayRuns.map(\.count), "a run before the fix loss, a run after it")
            #expect(
                segments.first?.first == [52.5, 13.4] && track["fixes"] as? Int == 10_800
                    && track["drawn"] as? Int == 10_800)
            #expect(
                (try await fixture.get("/api/records/day?date=2026-03-25")).json?["segments"] as? [[[Double]]] == [],
                "a day without work")

            let gpx = try await fixture.get("/api/records/export?date=2026-03-24&format=gpx")
            #expect(
                gpx.status == 200 && gpx.header("Content-Type")?.hasPrefix("application/gpx+xml") == true,
                "\(gpx.headers)")
            #expect(gpx.header("Content-Disposition") == #"attachment; filename="agrigps-2026-03-24.gpx""#)
            #expect(gpx.text.components(separatedBy: "<trkseg>").count - 1 == 2)
            let gpxVerdict = try await ExportValidation.gpx(gpx.text)
            #expect(gpxVerdict.valid, "\(gpxVerdict)")
            let geo = try await fixture.get("/api/records/export?date=2026-03-24&format=geojson")
            #expect(
                geo.status == 200
                    && geo.header("Content-Disposition") == #"attachment; filename="agrigps-2026-03-24.geojson""#)
            let geoVerdict = try await ExportValidation.geoJSON(geo.text)
            #expect(geoVerdict.valid, "\(geoVerdict)")
        }
    }

    @Test("a long day is thinned evenly for the map, each run keeping its first and last point")
    func thinnedForTheMap() async throws {
        let scratch = TemporaryDirectory("records")
        let path = scratch.file("track.sqlite")
        var week = RecordedWeek()
        try await week.write(to: path)
        let records = CabRecords(path: path, timeZone: RecordedWeek.zone, mapPoints: 1000)
        let track = try await records.track(of: LocalDay(year: 2026, month: 3, day: 24))
        #expect(track.fixes == 10_800 && track.drawn <= 1000 + track.segments.count, "\(track.drawn) drawn")
        #expect(track.drawn >= 900, "evenly, not far fewer: \(track.drawn)")
        for (drawn, run) in zip(track.segments, week.tuesdayRuns) {
            #expect(
                drawn.first == [run[0].latitude, run[0].longitude]
                    && drawn.last == [run[run.count - 1].latitude, run[run.count - 1].longitude])
        }
    }

    @Test("a day that is not in the calendar, or a format other than GPX and GeoJSON, is a clear 400")
    func badRequests() async throws {
        let (fixture, _, _) = try await Self.served()
        try await tearingDown({ await fixture.stop() }) {
            for path in [
                "/api/records?date=2026-02-29", "/api/records?date=yesterday", "/api/records/day",
                "/api/records/day?date=2026-3-24",
                "/api/records/export?date=2026-03-24", "/api/records/export?date=2026-03-24&format=csv",
                "/api/records/export?date=2026-03-24&format=kml",
            ] {
                let reply = try await fixture.get(path)
                #expect(reply.status == 400, "\(path): \(reply.status)")
                let message = reply.json?["error"] as? String ?? ""
                #expect(message.contains("YYYY-MM-DD") || message.contains("gpx or geojson"), "\(path): \(message)")
            }
        }
    }

    @Test("no track file yet: the summary says so, with zeros, rather than failing")
    func noTrackYet() async throws {
        let fixture = try CabFixture()
        try await tearingDown({ await fixture.stop() }) {
            try fixture.writeHeartbeat(onboarded: false)
            try await fixture.start()
            let reply = try await fixture.get("/api/records")
            #expect(reply.status == 200, "\(reply.text)")
            #expect(reply.json?["firstDay"] == nil && (reply.json?["weekDays"] as? [Any])?.count == 7)
            #expect(
                !FileManager.default.fileExists(atPath: fixture.configuration.trackPath),
                "reading never creates the file")
        }
    }

    @Test(
        "in a browser: a week and a year as bars by fix quality, a day picked from its bar, its fields with their tracks, its track drawn on the map, downloads linked; screenshots not blank"
    )
    func browser() async throws {
        let (fixture, week, fields) = try await Self.served(withFields: true)
        try await tearingDown({ await fixture.stop() }) {
            let browser = try await WebDriver(width: 1280, height: 800)
            defer { browser.close() }
            try await browser.open("http://127.0.0.1:\(fixture.port)/")
            #expect(try await browser.wait(timeout: 20, for: "return !!(window.cab && cab.map)"))
            try await browser.click(#"#tabs button[data-tab="records"]"#)
            #expect(
                try await browser.wait(
                    timeout: 10,
                    for: "return !!cab.records && document.querySelectorAll('#records-week .column').length === 7"))
            // Pick a day of the recorded week as a driver would: the date field, then Tuesday's bar.
            _ = try await browser.run(
                "const input = document.getElementById('records-day'); input.value = '2026-03-26'; input.dispatchEvent(new Event('change'));"
            )
            #expect(try await browser.wait(timeout: 10, for: "return cab.records.day === '2026-03-26'"))
            try await browser.click(#"#records-week .column[data-key="2026-03-24"]"#)
            #expect(
                try await browser.wait(
                    timeout: 10,
                    for:
                        "return cab.records.day === '2026-03-24' && document.getElementById('records-day').value === '2026-03-24'"
                ))
            // The day in the page's words, a day on and back with the arrows beside it.
            let named = try await browser.text("#records-day-button")
            #expect(named.hasPrefix("Tuesday") && named.contains("24 March 2026"), "\(named)")
            try await browser.click("#records-next")
            #expect(
                try await browser.wait(
                    timeout: 10,
                    for:
                        "return cab.records.day === '2026-03-25' && document.getElementById('records-day-button').textContent.includes('25 March')"
                ))
            try await browser.click("#records-previous")
            #expect(try await browser.wait(timeout: 10, for: "return cab.records.day === '2026-03-24'"))

            // The fields worked that day, each with its track to download, and the time off them; the
            // hostile name shown as text, never run (on the map neither).
            #expect(
                try await browser.wait(
                    timeout: 10,
                    for: "return document.querySelectorAll('#records-fields tbody tr[data-field]').length === 2"))
            let rows = try #require(
                try await browser.run(
                    """
                    return Array.from(document.querySelectorAll('#records-fields tbody tr')).map(r => {
                      const link = r.querySelector('a'), box = link ? link.getBoundingClientRect() : null;
                      return [r.dataset.field || '', r.querySelector('td').textContent, link ? link.getAttribute('href') : '', box ? Math.min(box.width, box.height) : 0];
                    });
                    """) as? [[Any]])
            #expect(
                rows.count == 3 && rows.last?[0] as? String == "" && rows.last?[1] as? String == "Off the fields",
                "\(rows)"
            )
            for (box, field) in zip(RecordedWeek.fields, fields) {
                let row = rows.first { $0[0] as? String == String(field.id) }
                #expect(row?[1] as? String == box.name)
                #expect(row?[2] as? String == "/api/records/export?date=2026-03-24&format=gpx&field=\(field.id)")
                #expect(
                    ((row?[3] as? NSNumber)?.doubleValue ?? 0) >= 48,
                    "a touch target of 48 px at least: \(String(describing: row))")
            }
            #expect(
                try await browser.run("return window.pwned === undefined && !document.querySelector('img[src=\"x\"]')")
                    as? Bool == true)
            let cut = try await fixture.get(try #require(rows.first?[2] as? String))
            #expect(cut.status == 200 && cut.text.contains("<trkpt"), "the link serves the field's track")

            // Tuesday's bar is the week's tallest and is split by quality in proportion to the hours.
            let bars = try #require(
                try await browser.run(
                    """
                    return Array.from(document.querySelectorAll('#records-week .column')).map(c => {
                      const stack = c.querySelector('.stack');
                      return [c.dataset.key, stack.getBoundingClientRect().height,
                              Array.from(stack.querySelectorAll('.part')).map(p => [p.dataset.quality, p.getBoundingClientRect().height])];
                    });
                    """) as? [[Any]])
            let heights = bars.compactMap { $0[1] as? Double }
            #expect(heights.count == 7 && heights.firstIndex(of: heights.max() ?? 0) == 1, "\(heights)")
            #expect(
                heights.enumerated().allSatisfy { [1, 3].contains($0.offset) || $0.element == 0 },
                "empty days have no bar: \(heights)")
            let tuesday = try #require(bars[1][2] as? [[Any]])
            #expect(tuesday.compactMap { $0[0] as? String } == ["rtk_fixed", "dgps"])
            let parts = tuesday.compactMap { $0[1] as? Double }
            #expect(
                parts.count == 2 && abs(parts[0] / max(parts[1], 0.001) - 7200.0 / 3599) < 0.05,
                "RTK fixed to DGPS, 2 h to 1 h: \(parts)")
            let thursdayRatio = (heights[3] / max(heights[1], 0.001))
            #expect(abs(thursdayRatio - 1799.0 / 10_799) < 0.02, "bars in proportion to the hours: \(thursdayRatio)")
            let months = try #require(
                try await browser.run(
                    "return Array.from(document.querySelectorAll('#records-year .column')).map(c => [c.dataset.key, c.querySelector('.label').textContent])"
                ) as? [[String]])
            #expect(months.count == 12 && months[2] == ["2026-03", "Mar"])
            let dayFigures = try await browser.text("#records-day-figures")
            #expect(
                dayFigures.hasPrefix("24 March 2026: 3 h 0 min with a fix · 2 h 0 min moving · 14.4 km"),
                "\(dayFigures)")
            // What became of the day's positions, in words, from the day's own counts.
            let counts = try #require(
                try await browser.run("const f = cab.records.dayFigures; return [f.samples, f.sent, f.lost]") as? [Int])
            let delivery = try await browser.text("#records-delivery")
            let written = { (count: Int) in count.formatted(.number.locale(Locale(identifier: "en_GB"))) }
            #expect(
                counts[0] > 0
                    && delivery.hasPrefix(
                        "Positions recorded: \(written(counts[0])) · sent to agrirouter: \(written(counts[1])) · "
                            + "kept on this box: \(written(counts[0] - counts[1] - counts[2]))"),
                "\(counts) \(delivery)")
            let links = try #require(
                try await browser.run(
                    "return [document.getElementById('records-gpx').getAttribute('href'), document.getElementById('records-geojson').getAttribute('download')]"
                ) as? [String])
            #expect(links == ["/api/records/export?date=2026-03-24&format=gpx", "agrigps-2026-03-24.geojson"])
            let gpxReply = try await fixture.get(links[0])
            #expect(gpxReply.status == 200 && gpxReply.text.contains("<trkseg>"), "the link serves the file")
            let records = try Self.save(try await browser.screenshot(), as: "records-1280x800.png")

            // The day on the map: two stretches, every point where it was recorded.
            try await browser.click("#records-show")
            #expect(
                try await browser.wait(
                    timeout: 10, for: "return !!cab.dayTrack && cab.dayTrack.options.day === '2026-03-24'"))
            let drawn = try #require(
                try await browser.run(
                    """
                    const runs = cab.dayTrack.getLatLngs();
                    return [runs.length, runs.map(r => r.length), [runs[0][0].lat, runs[0][0].lng]];
                    """) as? [Any])
            #expect(drawn[0] as? Int == 2 && drawn[1] as? [Int] == week.tuesdayRuns.map(\.count))
            #expect(drawn[2] as? [Double] == [52.5, 13.4], "\(drawn)")
            // The map zooms out to the whole day (animated), and no longer follows our own position.
            let fitted = try await browser.wait(
                timeout: 15, for: "return cab.map.getBounds().contains(cab.dayTrack.getBounds()) && !cab.follow")
            let view = try await browser.run("return [cab.map.getBounds().toBBoxString(), cab.map.getZoom()]")
            #expect(fitted, "\(String(describing: view))")
            try await Task.sleep(for: .milliseconds(300))
            let map = try Self.save(try await browser.screenshot(), as: "records-day-on-map-1280x800.png")
            // On a phone held upright the tab has the screen to itself, and the charts fit its width.
            let phone = try await WebDriver(width: 360, height: 640)
            defer { phone.close() }
            try await phone.open("http://127.0.0.1:\(fixture.port)/")
            #expect(try await phone.wait(timeout: 20, for: "return !!(window.cab && cab.map)"))
            try await phone.click(#"#tabs button[data-tab="records"]"#)
            _ = try await phone.run(
                "const input = document.getElementById('records-day'); input.value = '2026-03-24'; input.dispatchEvent(new Event('change'));"
            )
            #expect(try await phone.wait(timeout: 10, for: "return !!cab.records && cab.records.day === '2026-03-24'"))
            #expect(
                try await phone.wait(
                    timeout: 10,
                    for: "return document.querySelectorAll('#records-fields tbody tr[data-field]').length === 2"))
            let widths =
                try await phone.run(
                    """
                    return ['records-week', 'records-year', 'records-controls', 'records-fields-box'].map(id => document.getElementById(id).getBoundingClientRect().right)
                      .concat([document.documentElement.scrollWidth]);
                    """) as? [Double]
            #expect(
                widths.map { $0.allSatisfy { $0 <= 360 } } == true,
                "nothing wider than the phone: \(String(describing: widths))")
            let phoneShot = try Self.save(try await phone.screenshot(), as: "records-360x640.png")
            await phone.quit()
            for path in [records, map, phoneShot] {
                let variety = try await PNGCheck.variety(of: path)
                #expect(variety.dominantShare < 0.97 && variety.colours > 20, "\(path) is not blank: \(variety)")
            }
            await browser.quit()
        }
    }

    static func save(_ png: Data, as name: String) throws -> String {
        let directory = Fixtures.root.appendingPathComponent(".build/artefacts/cab-view").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + name
        try png.write(to: URL(fileURLWithPath: path))
        return path
    }
}
