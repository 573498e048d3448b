import Fields
import Foundation
import GNSS
import PropertyBased
import StateView
import TestSupport
import Testing
import Track

private let start = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21T14:13:20Z
private let utc = LocalDay.calendar(in: TimeZone(identifier: "UTC"))

/// A square field of `side` degrees with its south-west corner at (latitude, longitude).
private func square(_ id: Int64, _ name: String, latitude: Double, longitude: Double, side: Double = 0.001)
    -> StoredField
{
    let corners = [(0.0, 0.0), (0, side), (side, side), (side, 0)].map {
        GeoPoint(latitude: latitude + $0.0, longitude: longitude + $0.1)
    }
    let field = Field(
        partfieldID: "PFD\(id)", name: name, boundaries: [Ring(closing: corners)!], holes: [], guidanceLines: [])
    return StoredField(id: id, field: field, source: "file: test", importedAt: start)
}

private func fix(_ seconds: Double, _ latitude: Double, _ longitude: Double, speed: Double? = nil) -> TrackPoint {
    TrackPoint(
        time: start.addingTimeInterval(seconds), state: .fix(.threeD, .rtkFixed),
        coordinate: Coordinate(latitude: latitude, longitude: longitude), speed: speed)
}

@Suite struct FieldWorkTests {
    // Two fields side by side along a parallel: Nordacker from 10.000° to 10.001° east, Südwiese
    // from 10.002° to 10.003°, both from 52.000° to 52.001° north.
    let nord = square(7, "Nordacker", latitude: 52, longitude: 10)
    let sued = square(9, "Südwiese", latitude: 52, longitude: 10.002)

    /// Drives east at 52.0005° N from 9.9995° to 10.0035°, one point a second, and stands 30 s in
    /// Nordacker and loses the fix for 10 s in Südwiese on the way.
    func drive() -> [TrackPoint] {
        var points: [TrackPoint] = []
        var time = 0.0
        var longitude = 9.9995
        while longitude < 10.0035 {
            points.append(fix(time, 52.0005, longitude, speed: 2))
            if abs(longitude - 10.0005) < 0.00001 {
                for _ in 0..<30 {
                    time += 1
                    points.append(fix(time, 52.0005, longitude, speed: 0))
                }
            }
            if abs(longitude - 10.0025) < 0.00001 {
                for _ in 0..<10 {
                    time += 1
                    points.append(TrackPoint(time: start.addingTimeInterval(time), state: .noFix))
                }
            }
            time += 1
            longitude += 0.00002
        }
        return points
    }

    @Test("hours, hours moving and kilometres per field add up to the day's, and each field's are its own points'")
    func figuresPerField() throws {
        let points = drive()
        let work = FieldWork(fields: [sued, nord])
        let rows = work.rows(points, calendar: utc)
        #expect(rows.map { $0.field?.field.name } == ["Nordacker", "Südwiese", nil], "fields by name, no field last")

        // The day's figures, as the daemon counts them, against the sum of the rows.
        var ledger = WorkLedger(calendar: utc)
        for point in points { ledger.add(point) }
        let day = try #require(ledger.days.values.first)
        let sum = rows.map(\.figures).reduce(WorkFigures(), +)
        #expect(abs(sum.secondsWithFix - day.secondsWithFix) < 1e-9 && abs(sum.metresDriven - day.metresDriven) < 1e-6)
        #expect(sum.samples == points.count && abs(sum.secondsWithoutFix - day.secondsWithoutFix) < 1e-9)

        // Each field's figures, counted here by hand: a point's step belongs to the field it starts in.
        func expected(_ field: StoredField) -> (seconds: Double, moving: Double, metres: Double) {
            var result = (seconds: 0.0, moving: 0.0, metres: 0.0)
            for (point, next) in zip(points, points.dropFirst()) {
                guard let from = point.coordinate,
                    field.field.boundaries[0].contains(GeoPoint(latitude: from.latitude, longitude: from.longitude))
                else { continue }
                result.seconds += 1
                // Moving and distance need the next fix: a step into a fix loss has neither.
                guard let to = next.coordinate else { continue }
                if (point.speed ?? 0) > 0.5 { result.moving += 1 }
                result.metres += from.distance(to: to)
            }
            return result
        }
        for field in [nord, sued] {
            let row = try #require(rows.first { $0.field?.id == field.id })
            let want = expected(field)
            #expect(row.figures.secondsWithFix == want.seconds, "\(field.field.name)")
            #expect(row.figures.secondsMoving == want.moving, "\(field.field.name)")
            #expect(abs(row.figures.metresDriven - want.metres) < 1e-6, "\(field.field.name)")
        }
        let nordRow = try #require(rows.first { $0.field?.id == nord.id })
        // 0.001° of longitude at 52° N is about 68.6 m: the way across the field, and 30 s standing.
        #expect(abs(nordRow.figures.metresDriven - 68.6) < 1.5, "\(nordRow.figures.metresDriven) m")
        #expect(nordRow.figures.secondsWithFix - nordRow.figures.secondsMoving == 30)
    }

    @Test("a track cut to one field keeps only its points, and breaks where the machine left it")
    func trackCutToAField() throws {
        // Across Nordacker, out, and back in again within the 45 s that would join a run.
        let points = [
            fix(0, 52.0005, 9.9999), fix(1, 52.0005, 10.0001), fix(2, 52.0005, 10.0003), fix(3, 52.0005, 10.0012),
            fix(4, 52.0005, 10.0008), fix(5, 52.0005, 10.0007),
        ]
        let work = FieldWork(fields: [nord, sued])
        let keep = work.keep(only: nord.id)
        let segments = TrackSegments.split(points, keep: keep)
        #expect(segments.map(\.count) == [2, 2])
        let gpx = TrackExport.text(points, as: .gpx, name: "cut", keep: keep)
        #expect(
            gpx.components(separatedBy: "<trkseg>").count - 1 == 2
                && gpx.components(separatedBy: "<trkpt ").count - 1 == 4)
        let csv = TrackExport.text(points, as: .csv, name: "cut", keep: keep)
        #expect(csv.split(separator: "\n").count == 1 + 4)
        #expect(
            TrackExport.text(points, as: .csv, name: "cut", keep: work.keep(only: sued.id)).split(separator: "\n").count
                == 1)
    }

    @Test("a field is named by its number or its name in any case; an unknown or shared name says what to give instead")
    func namingAField() throws {
        let twin = square(11, "nordacker", latitude: 53, longitude: 10)
        let work = FieldWork(fields: [nord, sued, twin])
        #expect(try work.field(named: "9").id == sued.id)
        #expect(try work.field(named: " SÜDWIESE ").id == sued.id)
        #expect(try work.field(named: "Sudwiese").id == sued.id, "accents aside, as a person types on a tablet")
        #expect(throws: FieldChoiceError.ambiguous("nordacker", ids: [7, 11])) { try work.field(named: "nordacker") }
        let unknown = #expect(throws: FieldChoiceError.self) { try work.field(named: "Westfeld") }
        #expect(unknown?.description.contains("`agrigps fields` lists them") == true)
        let none = #expect(throws: FieldChoiceError.self) { try FieldWork(fields: []).field(named: "7") }
        #expect(none?.description.contains("no fields are stored") == true)
    }

    @Test("for any drive over any fields, the figures of the fields and of no field add up to the day's")
    func placesAddUpToTheDay() async {
        await propertyCheck(count: 200, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var random = SplitMix64(seed: UInt64(seed))
            let fields = (0..<Int(random.next() % 4)).map { index in
                square(
                    Int64(index + 1), "F\(index)", latitude: 52 + Double(random.next() % 20) * 0.0001,
                    longitude: 10 + Double(random.next() % 20) * 0.0001,
                    side: 0.0002 + Double(random.next() % 10) * 0.0001)
            }
            var points: [TrackPoint] = []
            var (time, latitude, longitude) = (0.0, 52.0, 10.0)
            for _ in 0..<Int(50 + random.next() % 150) {
                time += Double(random.next() % 60)  // now and then a gap longer than a step
                latitude += (Double(random.next() % 21) - 10) * 0.00002
                longitude += (Double(random.next() % 21) - 10) * 0.00002
                points.append(
                    random.next() % 9 == 0
                        ? TrackPoint(time: start.addingTimeInterval(time), state: .noFix)
                        : fix(
                            time, latitude, longitude, speed: random.next() % 3 == 0 ? nil : Double(random.next() % 4)))
            }
            var ledger = WorkLedger(calendar: utc)
            for point in points { ledger.add(point) }
            let rows = FieldWork(fields: fields).rows(points, calendar: utc)
            for (day, figures) in ledger.days {
                let sum = rows.filter { $0.day == day }.map(\.figures).reduce(WorkFigures(), +)
                #expect(sum.samples == figures.samples)
                #expect(
                    abs(sum.secondsWithFix - figures.secondsWithFix) < 1e-6
                        && abs(sum.secondsMoving - figures.secondsMoving) < 1e-6)
                #expect(
                    abs(sum.metresDriven - figures.metresDriven) < 1e-6
                        && abs(sum.secondsWithoutFix - figures.secondsWithoutFix) < 1e-6)
            }
        }
    }

    @Test(
        "working in one field, brushing the next, the road between: each field's work is its own, a brushed field has none, and no field's moving is road"
    )
    func workAndRoad() throws {
        // East at 52.0005° N from 9.9995°, 0.00001° (0.69 m) a second: 50 s to Nordacker, 100 s
        // across it working, 100 s of road, 100 s across Südwiese with the implement down for its
        // last 30 s only, 50 s out.
        var points: [TrackPoint] = []
        for step in 0...400 {
            let longitude = 9.9995 + Double(step) * 0.00001
            let working = (longitude > 10.0 && longitude < 10.001) || (longitude > 10.0027 && longitude < 10.003)
            points.append(
                TrackPoint(
                    time: start.addingTimeInterval(Double(step)), state: .fix(.threeD, .rtkFixed),
                    coordinate: Coordinate(latitude: 52.0005, longitude: longitude), speed: 0.69,
                    work: working ? .working : .notWorking, engineSpeed: 1_500, fuelRate: 18))
        }
        let rows = FieldWork(fields: [nord, sued]).rows(points, calendar: utc)
        let nordRow = try #require(rows.first { $0.field?.id == nord.id }),
            suedRow = try #require(rows.first { $0.field?.id == sued.id })
        let off = try #require(rows.first { $0.field == nil })
        // By hand: a step counts where it starts.
        func inside(_ point: TrackPoint, _ field: StoredField) -> Bool {
            field.field.boundaries[0].contains(GeoPoint(latitude: 52.0005, longitude: point.coordinate?.longitude ?? 0))
        }
        let steps = Array(zip(points, points.dropFirst()))
        let nordWork = Double(steps.filter { inside($0.0, nord) && $0.0.isWorking }.count)
        let suedWork = Double(steps.filter { inside($0.0, sued) && $0.0.isWorking }.count)
        let road = Double(steps.filter { !inside($0.0, nord) && !inside($0.0, sued) && !$0.0.isWorking }.count)
        #expect(nordWork > 95 && suedWork > 25 && suedWork < FieldWork.leastWork && road > 190)
        #expect(nordRow.figures.secondsWorking == nordWork)
        #expect(abs(nordRow.figures.metresWorking - nordWork * 0.6846) < 1, "\(nordRow.figures.metresWorking)")
        #expect(suedRow.figures.secondsWorking == 0 && suedRow.figures.metresWorking == 0, "brushed, not worked")
        #expect(suedRow.figures.secondsWorkKnown == Double(steps.filter { inside($0.0, sued) }.count))
        #expect(off.figures.secondsMovingIdle == road && off.figures.secondsWorking == 0)
        let total = rows.map(\.figures).reduce(WorkFigures(), +)
        #expect(abs(total.litresFuel - 2) < 1e-9, "400 s at 18 l/h")
        #expect(total.secondsEngineRunning == 400)

        let lines = rows.map {
            StatsReport.Line(
                period: $0.day.description, field: $0.field.map { ($0.id, $0.field.name) }, figures: $0.figures)
        }
        let terms = StatsReport.MachineTerms(width: 6, fieldsKnown: true)
        let text = StatsReport.text(lines, by: .day, byField: true, terms: terms)
        #expect(text[0].hasSuffix("working h  not working h  road h  worked ha  engine h  fuel l"), "\(text[0])")
        #expect(text[3].contains("(no field)") && text[3].contains(String(format: "%.2f", road / 3_600)), "\(text[3])")
        let json = try #require(
            try JSONSerialization.jsonObject(
                with: Data(StatsReport.json(lines, by: .day, byField: true, terms: terms).utf8))
                as? [String: Any])
        let periods = try #require(json["periods"] as? [[String: Any]])
        #expect(periods.map { $0["seconds_road"] as? Double } == [nil, nil, road])
        #expect(
            abs((periods[0]["hectares_worked"] as? Double ?? -1) - nordRow.figures.metresWorking * 6 / 10_000) < 1e-12)
        // Without fields known no time is road.
        let unknown = StatsReport.json(lines, by: .day, byField: true, terms: StatsReport.MachineTerms())
        #expect(!unknown.contains("\"seconds_road\":\(road)"))
    }
}
