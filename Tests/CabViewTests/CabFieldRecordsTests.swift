import Fields
import Foundation
import GNSS
import TestSupport
import Testing
import Track

@testable import CabView

/// The Records tab by field: a day's hours, hours moving and kilometres in each field worked, and a
/// day's track cut to one field, from RecordedWeek's Tuesday crossing one field and ending in another.
@Suite("Cab view records by field: figures per field and a track cut to one", .serialized, .timeLimit(.minutes(2)))
struct CabFieldRecordsTests {
    /// A share of a day counted here from the points, apart from the code under test.
    struct Count {
        var samples = 0
        var seconds = 0.0
        var moving = 0.0
        var metres = 0.0
    }

    /// The points `counted` takes: each counts as a sample, and a fix the seconds to the next point
    /// of the day (none beyond 45 s), moving above 0.5 m/s, and the way to the next fix.
    static func count(_ points: [TrackPoint], where counted: (TrackPoint) -> Bool) -> Count {
        var count = Count()
        for (index, point) in points.enumerated() where counted(point) {
            count.samples += 1
            guard index + 1 < points.count, let from = point.coordinate else { continue }
            let next = points[index + 1]
            let seconds = next.time.timeIntervalSince(point.time)
            guard seconds >= 0, seconds <= 45 else { continue }
            count.seconds += seconds
            guard seconds > 0, let to = next.coordinate else { continue }
            let metres = independentHaversine((from.latitude, from.longitude), (to.latitude, to.longitude))
            count.metres += metres
            if (point.speed ?? metres / seconds) > 0.5 { count.moving += seconds }
        }
        return count
    }

    /// Tuesday's points as the store gives them for that day.
    static func tuesday(of week: RecordedWeek) -> [TrackPoint] {
        week.points.filter {
            $0.time >= RecordedWeek.tuesday && $0.time < RecordedWeek.tuesday.addingTimeInterval(16 * 3600)
        }
    }

    static func matches(_ share: [String: Any]?, _ count: Count) -> Bool {
        guard let share else { return false }
        return share["samples"] as? Int == count.samples
            && CabRecordsTests.close(share["hours"], count.seconds / 3600)
            && CabRecordsTests.close(share["movingHours"], count.moving / 3600)
            && CabRecordsTests.close(share["kilometres"], count.metres / 1000, within: 1e-5)
    }

    @Test(
        "each field worked that day has the hours with a fix, hours moving and kilometres counted from its points; the rest is elsewhere"
    )
    func figuresPerField() async throws {
        let (fixture, week, stored) = try await CabRecordsTests.served(withFields: true)
        try await tearingDown({ await fixture.stop() }) {
            let reply = try await fixture.get("/api/records/fields?date=2026-03-24")
            #expect(reply.status == 200, "\(reply.text)")
            let answer = try #require(reply.json)
            #expect(
                answer["day"] as? String == "2026-03-24" && answer["timeZone"] as? String == "Europe/Berlin"
                    && answer["fieldsKnown"] as? Bool == true)
            let shares = try #require(answer["fields"] as? [[String: Any]])
            #expect(
                shares.compactMap { $0["id"] as? Int }.sorted() == stored.map { Int($0.id) }.sorted(),
                "both fields were worked: \(shares)")

            let points = Self.tuesday(of: week)
            for (box, field) in zip(RecordedWeek.fields, stored) {
                let share = shares.first { $0["id"] as? Int == Int(field.id) }
                let count = Self.count(points) { box.contains($0.coordinate) }
                #expect(share?["name"] as? String == box.name)
                #expect(Self.matches(share, count), "\(box.name): \(String(describing: share)) against \(count)")
            }
            // Not a count of nothing: the drive crosses 2000 of its points, and 1199 more and the parked hour lie in the other.
            #expect(Self.count(points) { RecordedWeek.crossed.contains($0.coordinate) }.samples == 2000)
            #expect(Self.count(points) { RecordedWeek.parkedIn.contains($0.coordinate) }.samples == 1199 + 3600)

            let elsewhere = answer["elsewhere"] as? [String: Any]
            let outside = Self.count(points) { point in !RecordedWeek.fields.contains { $0.contains(point.coordinate) }
            }
            #expect(Self.matches(elsewhere, outside), "\(String(describing: elsewhere)) against \(outside)")
            #expect(
                outside.samples == 1001 + 3000 + 600,
                "before, between and after the fields, and the ten minutes without a fix")
            // The fields and elsewhere add up to the day's figures.
            let all = shares + [elsewhere ?? [:]]
            #expect(all.compactMap { $0["samples"] as? Int }.reduce(0, +) == 11_400)
            #expect(CabRecordsTests.close(all.compactMap { $0["hours"] as? Double }.reduce(0, +), 10_799.0 / 3600))

            // Thursday's half hour was on no field; Wednesday nothing was recorded.
            let thursday = try await fixture.get("/api/records/fields?date=2026-03-26")
            #expect((thursday.json?["fields"] as? [Any])?.isEmpty == true)
            #expect((thursday.json?["elsewhere"] as? [String: Any])?["samples"] as? Int == 1800)
            let wednesday = try await fixture.get("/api/records/fields?date=2026-03-25")
            #expect(
                wednesday.status == 200 && wednesday.json?["elsewhere"] is NSNull,
                "null when no sample was: \(wednesday.text)")

            for path in [
                "/api/records/fields", "/api/records/fields?date=2026-02-30", "/api/records/fields?date=today",
            ] {
                let refused = try await fixture.get(path)
                #expect(
                    refused.status == 400 && (refused.json?["error"] as? String ?? "").contains("YYYY-MM-DD"),
                    "\(path): \(refused.text)")
            }
        }
    }

    @Test(
        "an export cut to a field holds only the points inside it, named after the field; an unknown or malformed field is refused, never an empty file"
    )
    func exportCutToAField() async throws {
        let (fixture, week, stored) = try await CabRecordsTests.served(withFields: true)
        try await tearingDown({ await fixture.stop() }) {
            let points = Self.tuesday(of: week)
            let crossed = try await fixture.get("/api/records/export?date=2026-03-24&format=gpx&field=\(stored[0].id)")
            #expect(crossed.status == 200, "\(crossed.text)")
            #expect(
                crossed.header("Content-Disposition")
                    == #"attachment; filename="agrigps-2026-03-24-Gro-er-Schlag.gpx"; filename*=UTF-8''agrigps-2026-03-24-Gro%C3%9Fer-Schlag.gpx"#
            )
            let written = Self.trackPoints(crossed.text)
            #expect(
                written.count == points.filter { RecordedWeek.crossed.contains($0.coordinate) }.count,
                "\(written.count) points")
            #expect(written.allSatisfy { RecordedWeek.crossed.contains($0) })
            #expect(
                crossed.text.components(separatedBy: "<trkseg>").count - 1 == 1
                    && crossed.text.contains("in Großer Schlag</name>"))
            let verdict = try await ExportValidation.gpx(crossed.text)
            #expect(verdict.valid, "\(verdict)")

            // The hostile name: kept out of the header but for its letters and digits, escaped in the file.
            let parked = try await fixture.get(
                "/api/records/export?date=2026-03-24&format=geojson&field=\(stored[1].id)")
            #expect(parked.status == 200)
            #expect(
                parked.header("Content-Disposition")
                    == #"attachment; filename="agrigps-2026-03-24-img-src-x-onerror-window-pwned-1-Koppel-3.geojson""#)
            let geoVerdict = try await ExportValidation.geoJSON(parked.text)
            #expect(geoVerdict.valid, "\(geoVerdict)")

            for (query, status) in [
                ("field=999999", 404), ("field=abc", 400), ("field=0", 400), ("field=-3", 400),
                ("field=99999999999999999999", 400), ("field=", 400),
            ] {
                let refused = try await fixture.get("/api/records/export?date=2026-03-24&format=gpx&" + query)
                let message = refused.json?["error"] as? String ?? ""
                #expect(
                    refused.status == status && !message.isEmpty && !message.contains("\n"),
                    "\(query): \(refused.status) \(refused.text)")
                #expect(!refused.text.contains("<gpx"), "\(query): no file")
            }
        }
    }

    @Test(
        "with no fields stored the answer says so, the whole day is elsewhere, and an export cut to a field says to import them"
    )
    func noFieldsStored() async throws {
        let (fixture, _, _) = try await CabRecordsTests.served()
        try await tearingDown({ await fixture.stop() }) {
            let reply = try await fixture.get("/api/records/fields?date=2026-03-24")
            #expect(
                reply.status == 200 && reply.json?["fieldsKnown"] as? Bool == false
                    && (reply.json?["fields"] as? [Any])?.isEmpty == true)
            #expect((reply.json?["elsewhere"] as? [String: Any])?["samples"] as? Int == 11_400)
            let refused = try await fixture.get("/api/records/export?date=2026-03-24&format=gpx&field=1")
            #expect(
                refused.status == 404 && (refused.json?["error"] as? String ?? "").contains("import them in Settings"),
                "\(refused.text)")
        }
    }

    @Test("a field's name becomes a safe part of a file name")
    func fileNames() {
        let day = LocalDay(year: 2026, month: 3, day: 24)
        #expect(CabRecords.fileName(day, format: .gpx) == "agrigps-2026-03-24.gpx")
        #expect(
            CabRecords.fileName(day, field: "Nordacker 2", format: .geojson) == "agrigps-2026-03-24-Nordacker-2.geojson"
        )
        #expect(CabRecords.fileNamePart("../../etc/passwd") == "etc-passwd")
        #expect(CabRecords.fileNamePart("\"\r\n;\u{0}") == "field")
        #expect(CabRecords.fileNamePart(String(repeating: "Acker ", count: 40)).count <= 60)
        #expect(!CabRecords.fileNamePart(String(repeating: "Acker ", count: 40)).hasSuffix("-"))
        #expect(
            CabRecords.contentDisposition("agrigps-2026-03-24-Wiese.gpx")
                == #"attachment; filename="agrigps-2026-03-24-Wiese.gpx""#)
        let header = CabRecords.contentDisposition(CabRecords.fileName(day, field: "Äußere Wiese", format: .gpx))
        #expect(
            header
                == #"attachment; filename="agrigps-2026-03-24-Au-ere-Wiese.gpx"; filename*=UTF-8''agrigps-2026-03-24-%C3%84u%C3%9Fere-Wiese.gpx"#
        )
        #expect(header.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 })
        #expect(
            CabRecords.contentDisposition(CabRecords.fileName(day, field: "Поле 7", format: .gpx))
                == #"attachment; filename="agrigps-2026-03-24-7.gpx"; filename*=UTF-8''agrigps-2026-03-24-%D0%9F%D0%BE%D0%BB%D0%B5-7.gpx"#
        )
    }

    /// The positions of a GPX file's track points.
    static func trackPoints(_ gpx: String) -> [Coordinate] {
        gpx.components(separatedBy: "<trkpt ").dropFirst().compactMap { element in
            let parts = element.split(separator: "\"")
            guard parts.count >= 4, let latitude = Double(parts[1]), let longitude = Double(parts[3]) else {
                return nil
            }
            return Coordinate(latitude: latitude, longitude: longitude)
        }
    }
}
