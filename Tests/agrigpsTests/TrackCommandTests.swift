import Clocks
import Foundation
import TestSupport
import Testing

/// An expected sample of a fixture log: its receiver time, state and position.
private struct Expected {
    var time: Date
    var state: String
    var position: (latitude: Double, longitude: Double)?
    var speed: Double?

    /// The samples with a receiver time. One without is dated by the system clock, which in a replay
    /// of an old log is now, far outside the log's days.
    static func samples(_ log: String) throws -> [Expected] {
        try Fixtures.lines(of: Fixtures.nmeaDirectory.appendingPathComponent("\(log).samples.jsonl").path).compactMap {
            line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard let time = object["time"] as? String else { return nil }
            let parsed = try #require(ISO8601UTC.date(from: time))
            let state = try #require(object["state"] as? String)
            let position =
                state.hasPrefix("fix_")
                ? (object["lat"] as? Double).flatMap { lat in (object["lon"] as? Double).map { (lat, $0) } } : nil
            return Expected(time: parsed, state: state, position: position, speed: object["speed"] as? Double)
        }
    }
}

@Suite("the machine's own track through run, track and stats", .serialized, .timeLimit(.minutes(2)))
struct TrackCommandTests {
    @Test(
        "a replayed log's track breaks at each fix loss, and its figures match the samples",
        arguments: ["ublox-lea-4h", "nmea-rtk"])
    func trackAndStats(log: String) async throws {
        let scratch = TemporaryDirectory("track")
        let state = scratch.file("state")
        // Not onboarded: the track is kept all the same.
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", Fixtures.log(log), "--state-dir", state], timeout: 90)
        #expect(run.code == 0, "\(run.stderr.suffix(5))")
        let expected = try Expected.samples(log)
        // The logs' days (2020 and 2026), and not today, where samples without a receiver time land.
        let range = ["--since", "2019-01-01", "--until", "2026-06-01", "--state-dir", state]

        // Runs of fixes, as the test reads them: broken by every sample without one, and where two
        // samples are more than 45 s apart.
        var runs: [[Expected]] = [[]]
        for (index, sample) in expected.enumerated() {
            let gap = index > 0 && sample.time.timeIntervalSince(expected[index - 1].time) > 45
            if sample.position == nil || gap { runs.append([]) }
            if sample.position != nil { runs[runs.count - 1].append(sample) }
        }
        runs.removeAll { $0.isEmpty }
        let geo = try await AgrigpsCommand.run(["track", "--format", "geojson"] + range)
        #expect(geo.code == 0, "\(geo.stderr)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(geo.stdout.joined().utf8)) as? [String: Any])
        let features = try #require(object["features"] as? [[String: Any]])
        let lines = try #require((features.first?["geometry"] as? [String: Any])?["coordinates"] as? [[[Double]]])
        #expect(lines.map(\.count) == runs.filter { $0.count >= 2 }.map(\.count), "one line per run of fixes")
        #expect(
            lines.first?.first.map { [$0[1], $0[0]] }
                == runs.first { $0.count >= 2 }?.first.map { [$0.position!.latitude, $0.position!.longitude] }
                .map { $0.map { ($0 * 1e7).rounded() / 1e7 } })

        let gpx = try await AgrigpsCommand.run(["track", "--format", "gpx"] + range)
        #expect(gpx.stdout.filter { $0 == "<trkseg>" }.count == runs.count, "one GPX segment per run of fixes")
        let gpxVerdict = try await ExportValidation.gpx(gpx.stdout.joined(separator: "\n"))
        #expect(gpxVerdict.valid, "GPX 1.1 schema: \(gpxVerdict)")
        let geoVerdict = try await ExportValidation.geoJSON(geo.stdout.joined(separator: "\n"))
        #expect(geoVerdict.valid, "geojson: \(geoVerdict)")
        let csv = try await AgrigpsCommand.run(["track", "--format", "csv"] + range)
        #expect(csv.stdout.count == expected.count + 1, "every sample, with or without a fix")

        // Each sample stands for the time until the next (at most 45 s); distance between fixes of a run.
        var byState: [String: Double] = [:]
        var distance = 0.0
        for (sample, next) in zip(expected, expected.dropFirst()) {
            let seconds = next.time.timeIntervalSince(sample.time)
            guard seconds >= 0, seconds <= 45 else { continue }
            byState[sample.state, default: 0] += seconds
            if let from = sample.position, let to = next.position { distance += independentHaversine(from, to) }
        }
        let stats = try await AgrigpsCommand.run(["stats", "--json", "--by", "year"] + range)
        #expect(stats.code == 0, "\(stats.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(stats.stdout.joined().utf8)) as? [String: Any])
        let year = try #require((report["periods"] as? [[String: Any]])?.first)
        #expect(year["samples"] as? Int == expected.count)
        #expect(abs((year["metres_driven"] as? Double ?? -1) - distance) < 0.01, "\(year) against \(distance) m")
        let qualities = try #require(year["seconds_by_quality"] as? [String: Double])
        for (name, quality) in [
            ("rtk_fixed", "rtk_fixed"), ("rtk_float", "rtk_float"), ("dgps", "dgps"), ("autonomous", "autonomous"),
        ] {
            let seconds = byState.filter { $0.key.hasPrefix("fix_") && $0.key.hasSuffix("_" + quality) }.values.reduce(
                0, +)
            #expect(
                abs((qualities[name] ?? -1) - seconds) < 0.001, "\(name): \(qualities[name] ?? -1) against \(seconds)")
        }
        #expect(abs((year["seconds_without_fix"] as? Double ?? -1) - (byState["no_fix"] ?? 0)) < 0.001)
    }

    @Test("per field: hours, hours moving and kilometres match the log's samples inside it, and the track cuts to it")
    func perField() async throws {
        // The receiver of this log wanders about 120 m in its 68 samples.
        let log = "haicom-305N"
        let scratch = TemporaryDirectory("track")
        let state = scratch.file("state")
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", Fixtures.log(log), "--state-dir", state], timeout: 90)
        #expect(run.code == 0, "\(run.stderr.suffix(5))")
        let expected = try Expected.samples(log)

        // A field made around the southern half of the log's fixes.
        let positions = expected.compactMap(\.position)
        let south = try #require(positions.map(\.latitude).min()), north = try #require(positions.map(\.latitude).max())
        let west = try #require(positions.map(\.longitude).min()) - 0.001,
            east = try #require(positions.map(\.longitude).max()) + 0.001
        // The median latitude: half the fixes inside.
        let middle = positions.map(\.latitude).sorted()[positions.count / 2]
        #expect(middle < north)
        let corners = [(south - 0.001, west), (south - 0.001, east), (middle, east), (middle, west)]
        let xml =
            #"<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="0" DataTransferOrigin="1">"#
            + #"<PFD A="PFD1" C="Südhälfte" D="0"><PLN A="1"><LSG A="1">"#
            + corners.map { #"<PNT A="2" C="\#($0.0)" D="\#($0.1)"/>"# }.joined()
            + "</LSG></PLN></PFD></ISO11783_TaskData>"
        let file = state + "/TASKDATA.XML"
        try Data(xml.utf8).write(to: URL(fileURLWithPath: file))
        let imported = try await AgrigpsCommand.run(["fields", "import", file, "--state-dir", state])
        #expect(imported.code == 0, "\(imported.stderr)")
        func inside(_ position: (latitude: Double, longitude: Double)?) -> Bool {
            guard let position else { return false }
            return position.latitude > south - 0.001 && position.latitude < middle && position.longitude > west
                && position.longitude < east
        }

        // By hand: a sample's time until the next (at most 45 s) counts in the field it was in; moving
        // and distance need the next fix too.
        var want = (seconds: 0.0, moving: 0.0, metres: 0.0, samples: 0)
        for (sample, next) in zip(expected, expected.dropFirst()) where inside(sample.position) {
            want.samples += 1
            let seconds = next.time.timeIntervalSince(sample.time)
            guard seconds >= 0, seconds <= 45 else { continue }
            want.seconds += seconds
            guard let from = sample.position, let to = next.position, seconds > 0 else { continue }
            let metres = independentHaversine(from, to)
            want.metres += metres
            if (sample.speed ?? metres / seconds) > 0.5 { want.moving += seconds }
        }
        if inside(expected.last?.position) { want.samples += 1 }
        #expect(want.seconds > 20 && want.metres > 10, "the field holds a good part of the track: \(want)")

        // The log's day; its first sample, without a receiver time, is dated today.
        let range = ["--since", "2026-11-21", "--until", "2026-11-23", "--state-dir", state]
        let stats = try await AgrigpsCommand.run(["stats", "--by-field", "--json", "--by", "year"] + range)
        #expect(stats.code == 0, "\(stats.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(stats.stdout.joined().utf8)) as? [String: Any])
        let periods = try #require(report["periods"] as? [[String: Any]])
        let field = try #require(periods.first { ($0["field"] as? [String: Any])?["name"] as? String == "Südhälfte" })
        #expect(field["samples"] as? Int == want.samples)
        #expect(abs((field["seconds_with_fix"] as? Double ?? -1) - want.seconds) < 0.001, "\(field) against \(want)")
        #expect(abs((field["seconds_moving"] as? Double ?? -1) - want.moving) < 0.001, "\(field) against \(want)")
        #expect(abs((field["metres_driven"] as? Double ?? -1) - want.metres) < 0.01, "\(field) against \(want)")
        let elsewhere = try #require(periods.first { $0["field"] is NSNull })
        #expect(
            (elsewhere["samples"] as? Int ?? 0) + want.samples == expected.count, "every sample is in the field or not")
        let text = try await AgrigpsCommand.run(["stats", "--by-field", "--by", "year"] + range)
        #expect(
            text.stdout.contains { $0.hasPrefix("2026  Südhälfte (1)") }
                && text.stdout.contains { $0.contains("(no field)") }, "\(text.stdout)")

        let csv = try await AgrigpsCommand.run(["track", "--format", "csv", "--field", "südhälfte"] + range)
        #expect(csv.code == 0, "\(csv.stderr)")
        #expect(csv.stdout.count - 1 == want.samples, "only the samples inside the field")
        let gpx = try await AgrigpsCommand.run(["track", "--format", "gpx", "--field", "1"] + range)
        #expect(gpx.stdout.contains { $0.contains("<name>") && $0.contains("in Südhälfte") })
        let unknown = try await AgrigpsCommand.run(["track", "--field", "Westfeld"] + range)
        #expect(
            unknown.code == 66 && unknown.stderr.count == 1 && unknown.stderr[0].contains("no field 'Westfeld'"),
            "\(unknown.stderr)")
    }

    @Test("local days and times follow --time-zone, else [track] time_zone, else TZ")
    func timeZones() async throws {
        let scratch = TemporaryDirectory("track")
        let state = scratch.file("state")
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", Fixtures.log("nmea-rtk"), "--state-dir", state], timeout: 90)
        #expect(run.code == 0, "\(run.stderr.suffix(5))")
        // The log runs from 13:28 to 13:39 UTC on 18 March 2020: that day in UTC, the 19th on Kiritimati (UTC+14).
        func count(_ extra: [String], day: String) async throws -> Int {
            let csv = try await AgrigpsCommand.run(
                ["track", "--format", "csv", "--since", day, "--until", day, "--state-dir", state] + extra)
            #expect(csv.code == 0, "\(csv.stderr)")
            return csv.stdout.count - 1
        }
        let samples = try Expected.samples("nmea-rtk").count
        #expect(try await count(["--time-zone", "UTC"], day: "2020-03-18") == samples)
        #expect(try await count(["--time-zone", "Pacific/Kiritimati"], day: "2020-03-18") == 0)
        #expect(try await count(["--time-zone", "Pacific/Kiritimati"], day: "2020-03-19") == samples)
        let config = state + "/agrigps.conf"
        try "[track]\ntime_zone = \"Pacific/Kiritimati\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        #expect(try await count(["--config", config], day: "2020-03-19") == samples, "the file's zone")
        #expect(
            try await count(["--config", config, "--time-zone", "UTC"], day: "2020-03-18") == samples,
            "the flag wins over the file")

        let flag = try await AgrigpsCommand.run(["stats", "--time-zone", "Mars/Olympus", "--state-dir", state])
        #expect(
            flag.code == 64 && flag.stderr.joined().contains("--time-zone must be a time zone name"), "\(flag.stderr)")
        try "[track]\ntime_zone = \"CEST+2\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let file = try await AgrigpsCommand.run(["track", "--config", config, "--state-dir", state])
        #expect(file.code == 78 && file.stderr.joined().contains("[track] time_zone"), "\(file.stderr)")
    }

    @Test("bad times and formats are refused before anything is read")
    func badInput() async throws {
        let since = try await AgrigpsCommand.run(["track", "--since", "soon", "--state-dir", "/nonexistent"])
        #expect(since.code == 64 && since.stderr.joined().contains("is not a time"), "\(since.stderr)")
        let minus = try await AgrigpsCommand.run(["track", "--since", "-1h", "--state-dir", "/nonexistent"])
        #expect(minus.code == 64 && minus.stderr.joined().contains("write 1h without the minus"), "\(minus.stderr)")
        let hex = try await AgrigpsCommand.run(["stats", "--since", "0x10h", "--state-dir", "/nonexistent"])
        #expect(hex.code == 64 && hex.stderr.joined().contains("'0x10h' is not a time"), "\(hex.stderr)")
        let order = try await AgrigpsCommand.run([
            "stats", "--since", "today", "--until", "2d", "--state-dir", "/nonexistent",
        ])
        #expect(order.code == 64 && order.stderr.joined().contains("after --until"), "\(order.stderr)")
        let format = try await AgrigpsCommand.run(["track", "--format", "kml", "--state-dir", "/nonexistent"])
        #expect(format.code == 64, "\(format.stderr)")
        let nothing = try await AgrigpsCommand.run(["stats", "--state-dir", "/nonexistent"])
        #expect(
            nothing.code == 0 && nothing.stdout == ["No track recorded in this time."],
            "\(nothing.stdout) \(nothing.stderr)")
    }
}
