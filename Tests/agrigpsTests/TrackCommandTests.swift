import Clocks
import Foundation
import Testing
import TestSupport

/// An expected sample of a fixture log: its receiver time, state and position.
private struct Expected {
    var time: Date
    var state: String
    var position: (latitude: Double, longitude: Double)?

    /// The samples with a receiver time. One without is dated by the system clock, which in a replay
    /// of an old log is now, far outside the log's days.
    static func samples(_ log: String) throws -> [Expected] {
        try Fixtures.lines(of: Fixtures.nmeaDirectory.appendingPathComponent("\(log).samples.jsonl").path).compactMap { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard let time = object["time"] as? String else { return nil }
            let parsed = try #require(ISO8601UTC.date(from: time))
            let state = try #require(object["state"] as? String)
            let position = state.hasPrefix("fix_") ? (object["lat"] as? Double).flatMap { lat in (object["lon"] as? Double).map { (lat, $0) } } : nil
            return Expected(time: parsed, state: state, position: position)
        }
    }
}

@Suite("the machine's own track through run, track and stats", .serialized, .timeLimit(.minutes(2)))
struct TrackCommandTests {
    @Test("a replayed log's track breaks at each fix loss, and its figures match the samples", arguments: ["ublox-lea-4h", "nmea-rtk"])
    func trackAndStats(log: String) async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("agrigps-track-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        // Not onboarded: the track is kept all the same.
        let run = try await AgrigpsCommand.run(["run", "--replay", Fixtures.log(log), "--state-dir", state], timeout: 90)
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
        let object = try #require(try JSONSerialization.jsonObject(with: Data(geo.stdout.joined().utf8)) as? [String: Any])
        let features = try #require(object["features"] as? [[String: Any]])
        let lines = try #require((features.first?["geometry"] as? [String: Any])?["coordinates"] as? [[[Double]]])
        #expect(lines.map(\.count) == runs.filter { $0.count >= 2 }.map(\.count), "one line per run of fixes")
        #expect(lines.first?.first.map { [$0[1], $0[0]] } == runs.first { $0.count >= 2 }?.first.map { [$0.position!.latitude, $0.position!.longitude] }
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
        let report = try #require(try JSONSerialization.jsonObject(with: Data(stats.stdout.joined().utf8)) as? [String: Any])
        let year = try #require((report["periods"] as? [[String: Any]])?.first)
        #expect(year["samples"] as? Int == expected.count)
        #expect(abs((year["metres_driven"] as? Double ?? -1) - distance) < 0.01, "\(year) against \(distance) m")
        let qualities = try #require(year["seconds_by_quality"] as? [String: Double])
        for (name, quality) in [("rtk_fixed", "rtk_fixed"), ("rtk_float", "rtk_float"), ("dgps", "dgps"), ("autonomous", "autonomous")] {
            let seconds = byState.filter { $0.key.hasPrefix("fix_") && $0.key.hasSuffix("_" + quality) }.values.reduce(0, +)
            #expect(abs((qualities[name] ?? -1) - seconds) < 0.001, "\(name): \(qualities[name] ?? -1) against \(seconds)")
        }
        #expect(abs((year["seconds_without_fix"] as? Double ?? -1) - (byState["no_fix"] ?? 0)) < 0.001)
    }

    @Test("local days and times follow --time-zone, else [track] time_zone, else TZ")
    func timeZones() async throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("agrigps-track-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: state) }
        let run = try await AgrigpsCommand.run(["run", "--replay", Fixtures.log("nmea-rtk"), "--state-dir", state], timeout: 90)
        #expect(run.code == 0, "\(run.stderr.suffix(5))")
        // The log runs from 13:28 to 13:39 UTC on 18 March 2020: that day in UTC, the 19th on Kiritimati (UTC+14).
        func count(_ extra: [String], day: String) async throws -> Int {
            let csv = try await AgrigpsCommand.run(["track", "--format", "csv", "--since", day, "--until", day, "--state-dir", state] + extra)
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
        #expect(try await count(["--config", config, "--time-zone", "UTC"], day: "2020-03-18") == samples, "the flag wins over the file")

        let flag = try await AgrigpsCommand.run(["stats", "--time-zone", "Mars/Olympus", "--state-dir", state])
        #expect(flag.code == 64 && flag.stderr.joined().contains("--time-zone must be a time zone name"), "\(flag.stderr)")
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
        let order = try await AgrigpsCommand.run(["stats", "--since", "today", "--until", "2d", "--state-dir", "/nonexistent"])
        #expect(order.code == 64 && order.stderr.joined().contains("after --until"), "\(order.stderr)")
        let format = try await AgrigpsCommand.run(["track", "--format", "kml", "--state-dir", "/nonexistent"])
        #expect(format.code == 64, "\(format.stderr)")
        let nothing = try await AgrigpsCommand.run(["stats", "--state-dir", "/nonexistent"])
        #expect(nothing.code == 0 && nothing.stdout == ["No track recorded in this time."], "\(nothing.stdout) \(nothing.stderr)")
    }
}
