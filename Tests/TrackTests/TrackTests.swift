import Foundation
import GNSS
import TestSupport
import Testing

@testable import Track

private let start = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21T14:13:20Z

private func fix(
    _ seconds: Double, _ latitude: Double, _ longitude: Double = 10, quality: FixQuality = .autonomous,
    speed: Double? = nil
) -> TrackPoint {
    TrackPoint(
        time: start.addingTimeInterval(seconds), state: .fix(.threeD, quality),
        coordinate: Coordinate(latitude: latitude, longitude: longitude), altitude: 100, speed: speed)
}

private func lost(_ seconds: Double, _ state: FixState = .noFix) -> TrackPoint {
    TrackPoint(time: start.addingTimeInterval(seconds), state: state)
}

@Suite struct TrackSegmentTests {
    @Test(
        "a run of fixes breaks at every sample without one, and where samples are further apart than the longest step")
    func breaks() {
        let points = [
            fix(0, 52), fix(1, 52.0001), lost(2), lost(3, .gpsdUnreachable), fix(4, 52.0002), fix(5, 52.0003),
            fix(60, 52.0004), fix(61, 52.0005),
        ]
        let segments = TrackSegments.split(points)
        #expect(segments.map(\.count) == [2, 2, 2])
        #expect(segments[2].first?.time == start.addingTimeInterval(60), "a 55 s gap is a break")
        #expect(TrackSegments.split(points, rules: TrackRules(longestStep: 60)).map(\.count) == [2, 4])
    }

    @Test func aPointWithoutAFixCarriesNoCoordinate() {
        let point = TrackPoint(time: start, state: .noFix, coordinate: Coordinate(latitude: 1, longitude: 2), speed: -3)
        #expect(point.coordinate == nil && !point.isFix && point.speed == nil)
    }
}

@Suite struct TrackExportTests {
    let points = [
        fix(0, 52, quality: .rtkFixed), fix(1, 52.0001, quality: .rtkFixed), lost(2), fix(3, 52.0002),
        fix(4, 52.0003, quality: .dgps), lost(5, .noReceiver(.removed)), fix(6, 52.0004),
    ]

    @Test("GPX: one track, a segment per run of fixes, points with time, elevation and GPX's fix kind")
    func gpx() {
        let text = TrackExport.gpx(points, name: "Tractor <1> & co")
        #expect(text.components(separatedBy: "<trkseg>").count - 1 == 3)
        #expect(text.components(separatedBy: "<trkpt ").count - 1 == 5)
        #expect(text.contains("<name>Tractor &lt;1&gt; &amp; co</name>"))
        #expect(
            text.contains(
                "<trkpt lat=\"52.0000000\" lon=\"10.0000000\"><ele>100.00</ele><time>2026-09-21T14:13:20.000Z</time><fix>dgps</fix></trkpt>"
            ))
        #expect(text.contains("<fix>3d</fix>"))
    }

    @Test(
        "GeoJSON: a MultiLineString with a line per run of two or more fixes, longitude first; a lone fix a MultiPoint")
    func geoJSON() throws {
        let text = TrackExport.geoJSON(points, name: "Tractor \"1\"")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["type"] as? String == "FeatureCollection")
        let features = try #require(object["features"] as? [[String: Any]])
        #expect(features.count == 2)
        let track = try #require(features[0]["geometry"] as? [String: Any])
        #expect(track["type"] as? String == "MultiLineString")
        let lines = try #require(track["coordinates"] as? [[[Double]]])
        #expect(lines.map(\.count) == [2, 2])
        #expect(lines[0][0] == [10, 52])
        let properties = try #require(features[0]["properties"] as? [String: Any])
        #expect(properties["name"] as? String == "Tractor \"1\"")
        #expect((properties["times"] as? [[String]])?.map(\.count) == [2, 2])
        let lone = try #require(features[1]["geometry"] as? [String: Any])
        #expect(lone["type"] as? String == "MultiPoint")
        #expect((lone["coordinates"] as? [[Double]]) == [[10, 52.0004]])
    }

    @Test("CSV: every point, with its state, and blanks where there is no position")
    func csv() {
        let lines = TrackExport.csv(points).split(separator: "\n")
        #expect(lines.count == points.count + 1)
        #expect(lines[0] == "time,state,latitude,longitude,altitude_m,speed_m_s,work,engine_rpm,fuel_l_h")
        #expect(lines[1] == "2026-09-21T14:13:20.000Z,fix_3d_rtk_fixed,52.0000000,10.0000000,100.00,,,,")
        #expect(lines[3] == "2026-09-21T14:13:22.000Z,no_fix,,,,,,,")
        #expect(lines[6] == "2026-09-21T14:13:25.000Z,no_receiver,,,,,,,")
    }
}

/// The exports as other programs read them: xmllint against the GPX 1.1 schema, the geojson library.
@Suite("track exports validate with outside tools", .timeLimit(.minutes(1)))
struct ExportValidationTests {
    static let cases: [(name: String, points: [TrackPoint])] = [
        (
            "runs, losses and a lone fix",
            [
                fix(0, 52, quality: .rtkFixed), fix(1, 52.0001, quality: .rtkFloat), lost(2), fix(3, 52.0002),
                fix(4, 52.0003, quality: .dgps), lost(5, .noReceiver(.removed)), fix(6, 52.0004),
            ]
        ),
        ("nothing recorded", []),
        ("no fix at all", [lost(0), lost(1, .gpsdUnreachable)]),
        (
            "2D fixes without height, south and west, a name with markup and control characters",
            [
                TrackPoint(
                    time: start, state: .fix(.twoD, .autonomous),
                    coordinate: Coordinate(latitude: -33.9, longitude: -70.6)),
                TrackPoint(
                    time: start.addingTimeInterval(1), state: .fix(.twoD, .autonomous),
                    coordinate: Coordinate(latitude: -33.90001, longitude: -179.99999)),
            ]
        ),
        (
            "a machine working, then not, then unknown, then silent",
            [.working, .notWorking, .unknown, nil].enumerated().map { index, work in
                TrackPoint(
                    time: start.addingTimeInterval(Double(index)), state: .fix(.threeD, .rtkFixed),
                    coordinate: Coordinate(latitude: 52 + Double(index) * 0.0001, longitude: 10), work: work,
                    engineSpeed: 1_500, fuelRate: 12)
            }
        ),
    ]

    @Test("the work state travels in each export: a GPX extension, a GeoJSON property beside the times, CSV columns")
    func workInExports() throws {
        let points = Self.cases[Self.cases.count - 1].points
        let gpx = TrackExport.gpx(points, name: "x")
        #expect(gpx.components(separatedBy: "<extensions><agrigps:work>").count == 4)
        #expect(
            gpx.contains("<agrigps:work>not-working</agrigps:work>")
                && gpx.contains(#"xmlns:agrigps="urn:agrigps:track:1""#))
        let geo = try #require(
            try JSONSerialization.jsonObject(with: Data(TrackExport.geoJSON(points, name: "x").utf8)) as? [String: Any])
        let properties = try #require((geo["features"] as? [[String: Any]])?.first?["properties"] as? [String: Any])
        let work = try #require(properties["work"] as? [[Any]])
        #expect(work.map { $0.map { $0 as? String ?? "null" } } == [["working", "not-working", "unknown", "null"]])
        let csv = TrackExport.csv(points).split(separator: "\n")
        #expect(csv[1].hasSuffix(",working,1500.000,12.00") && csv[4].hasSuffix(",,1500.000,12.00"), "\(csv)")
        let plain = TrackExport.geoJSON(Self.cases[0].points, name: "x")
        #expect(!plain.contains("\"work\""), "a track without a machine has no work property")
    }

    @Test("GPX validates against the GPX 1.1 schema", arguments: 0..<cases.count)
    func gpx(_ index: Int) async throws {
        let text = TrackExport.gpx(Self.cases[index].points, name: "Trecker <\"7\"> & Söhne\u{1}\u{7F}")
        let verdict = try await ExportValidation.gpx(text)
        #expect(verdict.valid, "\(Self.cases[index].name): \(verdict)")
    }

    @Test("GeoJSON validates with the geojson library", arguments: 0..<cases.count)
    func geoJSON(_ index: Int) async throws {
        let text = TrackExport.geoJSON(Self.cases[index].points, name: "Trecker <\"7\"> & Söhne\u{1}")
        let verdict = try await ExportValidation.geoJSON(text)
        #expect(verdict.valid, "\(Self.cases[index].name): \(verdict)")
    }

    @Test("the validators refuse what is not valid, so a pass above means something")
    func controls() async throws {
        let good = TrackExport.gpx(Self.cases[0].points, name: "x")
        let badLatitude = good.replacingOccurrences(of: "lat=\"52.0000000\"", with: "lat=\"92.0000000\"")
        #expect(badLatitude != good)
        #expect(try await !ExportValidation.gpx(badLatitude).valid, "a latitude of 92°")
        #expect(
            try await !ExportValidation.gpx(
                good.replacingOccurrences(of: "<time>", with: "<when>").replacingOccurrences(
                    of: "</time>", with: "</when>")
            ).valid)
        let line =
            #"{"type":"FeatureCollection","features":[{"type":"Feature","properties":{},"geometry":{"type":"MultiLineString","coordinates":[[[10,52]]]}}]}"#
        #expect(try await !ExportValidation.geoJSON(line).valid, "a line of one position")
        #expect(
            try await ExportValidation.geoJSON(
                line.replacingOccurrences(of: "[[[10,52]]]", with: "[[[10,52],[10,52.1]]]")
            ).valid)
    }
}

@Suite struct WorkFiguresTests {
    /// One whole local day at 1 Hz in Berlin, 86,400 samples: RTK fixed 06:00–09:00 driving north at
    /// 3 m/s, RTK float 09:00–10:00 standing, no fix 10:00–10:40, DGPS 10:40–12:00 driving east at
    /// 2 m/s, no receiver 13:00–13:05, autonomous the rest of the time, standing.
    @Test("one whole day of 1 Hz samples: fix hours by quality, outages, time moving and distance")
    func aWholeDay() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "Europe/Berlin"))
        let midnight = try #require(calendar.date(from: DateComponents(year: 2026, month: 6, day: 10)))
        var ledger = WorkLedger(calendar: calendar)
        var latitude = 52.0, longitude = 10.0
        var expectedMetres = 0.0
        var previous: (Double, Double)?
        var counted = 0
        for second in 0..<86_400 {
            let state: FixState
            var speed = 0.0
            switch second {
            case 21_600..<32_400:
                state = .fix(.threeD, .rtkFixed)
                speed = 3
            case 32_400..<36_000: state = .fix(.threeD, .rtkFloat)
            case 36_000..<38_400: state = .noFix
            case 38_400..<43_200:
                state = .fix(.threeD, .dgps)
                speed = 2
            case 46_800..<47_100: state = .noReceiver(.silent)
            default: state = .fix(.threeD, .autonomous)
            }
            let point = TrackPoint(
                time: midnight.addingTimeInterval(Double(second)), state: state,
                coordinate: Coordinate(latitude: latitude, longitude: longitude), speed: speed)
            if point.isFix, let from = previous { expectedMetres += independentHaversine(from, (latitude, longitude)) }
            previous = point.isFix ? (latitude, longitude) : nil
            ledger.add(point)
            counted += 1
            // Moves for the next second at the stated speed: north, or east on the DGPS stretch.
            if speed > 0, state == .fix(.threeD, .rtkFixed) { latitude += 3 / 111_195.0 }
            if speed > 0, state == .fix(.threeD, .dgps) { longitude += 2 / (111_195.0 * cos(latitude * .pi / 180)) }
        }
        ledger.finish()
        let days = ledger.figures(by: .day)
        #expect(days.map(\.label) == ["2026-06-10"], "all of a local day, and nothing of the next")
        let day = try #require(days.first?.figures)
        #expect(day.samples == counted && counted == 86_400)
        // Each sample stands for the second after it; the day's last one for nothing.
        // Dates hold seconds since 2001 as doubles: a step of 1 s reads a few nanoseconds off.
        func close(_ value: Double?, _ expected: Double) -> Bool { abs((value ?? -1) - expected) < 0.001 }
        #expect(close(day.secondsByQuality[.rtkFixed], 3 * 3600))
        #expect(close(day.secondsByQuality[.rtkFloat], 3600))
        #expect(close(day.secondsByQuality[.dgps], 80 * 60))
        #expect(close(day.secondsWithoutFix, 40 * 60))
        #expect(close(day.secondsWithoutReceiver, 5 * 60))
        let planned: Double = 3 * 3600 + 3600 + 80 * 60 + 40 * 60 + 5 * 60
        #expect(close(day.secondsByQuality[.autonomous], 86_399 - planned))
        #expect(close(day.secondsWithFix + day.secondsWithoutFix + day.secondsWithoutReceiver, 86_399))
        // Moving by the receiver's speed: each second of both driving stretches, none standing.
        #expect(close(day.secondsMoving, 3 * 3600 + 80 * 60))
        #expect(abs(day.metresDriven - expectedMetres) < 0.01, "\(day.metresDriven) against \(expectedMetres)")
        #expect(abs(day.metresDriven - (3 * 3 * 3600 + 2 * 80 * 60)) < 50, "about 42 km")
    }

    @Test("a step across local midnight counts on the day it began; weeks, months and years are sums of days")
    func periods() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "Europe/Berlin"))
        var ledger = WorkLedger(calendar: calendar)
        // 2026-12-31 23:59:55 to 2027-01-01 00:00:15 Berlin time, a fix every 10 s.
        let before = try #require(
            calendar.date(from: DateComponents(year: 2026, month: 12, day: 31, hour: 23, minute: 59, second: 55)))
        for step in 0..<3 {
            ledger.add(
                TrackPoint(
                    time: before.addingTimeInterval(Double(step) * 10), state: .fix(.threeD, .autonomous),
                    coordinate: Coordinate(latitude: 50, longitude: 8)))
        }
        ledger.finish()
        let days = ledger.figures(by: .day)
        #expect(days.map(\.label) == ["2026-12-31", "2027-01-01"])
        #expect(
            days.map { ($0.figures.secondsWithFix * 1000).rounded() } == [10_000, 10_000],
            "23:59:55 stands for 10 s of the old year")
        // 2027-01-01 is a Friday: it belongs to 2026's 53rd ISO week, as 2026-12-31 does.
        #expect(ledger.figures(by: .week).map(\.label) == ["2026-W53"])
        #expect(ledger.figures(by: .month).map(\.label) == ["2026-12", "2027-01"])
        #expect(ledger.figures(by: .year).map(\.figures.samples) == [1, 2])
        #expect(LocalDay(year: 2026, month: 1, day: 1).isoWeek == "2026-W01")
        #expect(LocalDay(year: 2024, month: 12, day: 30).isoWeek == "2025-W01")
    }

    @Test(
        "time is counted only between samples close enough: a stop of the daemon, or a point older than the one before, counts nothing"
    )
    func gapsCountNothing() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        var ledger = WorkLedger(calendar: calendar)
        for point in [fix(0, 52), fix(1, 52.0001), fix(3600, 52.0002), fix(3599, 52.0003), fix(3600, 52.0004)] {
            ledger.add(point)
        }
        ledger.finish()
        let figures = ledger.figures(by: .day).first?.figures
        #expect(
            abs((figures?.secondsWithFix ?? 0) - 2) < 0.001,
            "1 s, then an hour apart (nothing), back in time (nothing), then 1 s")
        #expect(figures?.samples == 5)
        let metres = figures?.metresDriven ?? 0
        #expect(
            abs(
                metres
                    - (independentHaversine((52, 10), (52.0001, 10))
                        + independentHaversine((52.0003, 10), (52.0004, 10)))) < 0.001)
    }
}
