import Foundation
import TestSupport
import Testing

/// What the machine did, as `agrigps stats` counts it from the track, against the samples by hand.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MachineRecordsTests {
    /// A sample of the spool, as the test reads it.
    struct Sample {
        var time: Double
        var position: (latitude: Double, longitude: Double)?
        var speed: Double?
        var work: String
        var engineSpeed: Double?
        var fuelRate: Double?
    }

    /// The spool's samples that have a receiver time (the track dates the rest by today's clock), by time.
    static func samples(_ spool: String) async throws -> [Sample] {
        let rows = try await SystemTool.run(
            "/usr/bin/sqlite3",
            [
                "-readonly", spool,
                """
                SELECT receiver_time, IFNULL(latitude, ''), IFNULL(longitude, ''), IFNULL(speed, ''), IFNULL(machine_work, ''),
                       IFNULL(engine_speed, ''), IFNULL(fuel_rate, '') FROM sample WHERE receiver_time IS NOT NULL ORDER BY receiver_time
                """,
            ])
        return rows.output.split(separator: "\n").compactMap { line in
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard cells.count == 7, let time = Double(cells[0]) else { return nil }
            let position = Double(cells[1]).flatMap { latitude in Double(cells[2]).map { (latitude, $0) } }
            return Sample(
                time: time, position: position, speed: Double(cells[3]), work: cells[4], engineSpeed: Double(cells[5]),
                fuelRate: Double(cells[6]))
        }
    }

    /// The figures by hand: each sample stands for the time until the next, at most 45 s; the way to
    /// the next fix is driven, and moving when faster than 0.5 m/s.
    struct ByHand {
        var working = 0.0, notWorking = 0.0, metresWorking = 0.0, engine = 0.0, litres = 0.0, road = 0.0, samples = 0

        mutating func add(_ sample: Sample, next: Sample, offField: Bool) {
            samples += 1
            let seconds = next.time - sample.time
            guard seconds >= 0, seconds <= 45 else { return }
            if sample.work == "working" {
                working += seconds
            } else if sample.work == "not-working" {
                notWorking += seconds
            }
            if (sample.engineSpeed ?? 0) > 0 { engine += seconds }
            litres += (sample.fuelRate ?? 0) * seconds / 3_600
            guard seconds > 0, let from = sample.position, let to = next.position else { return }
            let metres = independentHaversine(from, to)
            if sample.work == "working" { metresWorking += metres }
            if offField, sample.work != "working", (sample.speed ?? metres / seconds) > 0.5 { road += seconds }
        }
    }

    @Test(
        "stats of a drive: hours working and not, worked area, engine hours and fuel match the samples by hand; per field, road is the time moving off it"
    )
    func drive() async throws {
        let scratch = TemporaryDirectory("records")
        let directory = scratch.path
        let state = directory + "/state"
        let drive = try TractorDrive.write(to: directory + "/drive.log", hitchDown: 60, hitchUp: 150)
        let run = try await AgrigpsCommand.run(["run", "--replay", drive, "--state-dir", state], timeout: 90)
        #expect(run.code == 0, "\(run.stdout) \(run.stderr)")
        let samples = try await Self.samples(state + "/spool.sqlite")
        try #require(samples.count > 150)
        var whole = ByHand()
        for (sample, next) in zip(samples, samples.dropFirst()) { whole.add(sample, next: next, offField: false) }
        print("drive by hand: \(whole)")
        #expect(whole.working > 80 && whole.notWorking > 80 && whole.engine > 190)

        let range = [
            "--since", "2010-01-01", "--until", "2020-01-01", "--time-zone", "UTC", "--by", "year", "--state-dir",
            state,
        ]
        let stats = try await AgrigpsCommand.run(["stats", "--json", "--working-width", "6"] + range)
        #expect(stats.code == 0, "\(stats.stderr)")
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(stats.stdout.joined().utf8)) as? [String: Any])
        let year = try #require((report["periods"] as? [[String: Any]])?.first, "\(stats.stdout)")
        func figure(_ key: String, _ object: [String: Any] = year) -> Double { object[key] as? Double ?? -1 }
        #expect(abs(figure("seconds_working") - whole.working) < 0.001, "\(year)")
        #expect(abs(figure("seconds_not_working") - whole.notWorking) < 0.001)
        #expect(abs(figure("metres_working") - whole.metresWorking) < 0.01)
        #expect(abs(figure("hectares_worked") - whole.metresWorking * 6 / 10_000) < 1e-6)
        #expect(abs(figure("seconds_engine_running") - whole.engine) < 0.001)
        #expect(abs(figure("litres_fuel") - whole.litres) < 1e-6)
        let text = try await AgrigpsCommand.run(["stats"] + range)
        #expect(text.stdout.first?.hasSuffix("working h  not working h  engine h  fuel l") == true, "\(text.stdout)")

        // A field around the drive's fixes (the recording's receiver stands within a few metres):
        // all its work is in the field. Road and brushed fields are `FieldWorkTests`'.
        let fixes = samples.compactMap(\.position)
        let south = try #require(fixes.map(\.latitude).min()) - 0.001,
            north = try #require(fixes.map(\.latitude).max()) + 0.001
        let west = try #require(fixes.map(\.longitude).min()) - 0.001,
            east = try #require(fixes.map(\.longitude).max()) + 0.001
        let corners = [(south, west), (south, east), (north, east), (north, west)]
        let xml =
            #"<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="0" DataTransferOrigin="1">"#
            + #"<PFD A="PFD1" C="Nordacker" D="0"><PLN A="1"><LSG A="1">"#
            + corners.map { #"<PNT A="2" C="\#($0.0)" D="\#($0.1)"/>"# }.joined()
            + "</LSG></PLN></PFD></ISO11783_TaskData>"
        try Data(xml.utf8).write(to: URL(fileURLWithPath: directory + "/TASKDATA.XML"))
        let imported = try await AgrigpsCommand.run([
            "fields", "import", directory + "/TASKDATA.XML", "--state-dir", state,
        ])
        #expect(imported.code == 0, "\(imported.stderr)")
        let byField = try await AgrigpsCommand.run(["stats", "--json", "--by-field", "--working-width", "6"] + range)
        let lines = try #require(
            (try JSONSerialization.jsonObject(with: Data(byField.stdout.joined().utf8)) as? [String: Any])?["periods"]
                as? [[String: Any]])
        let inField = try #require(
            lines.first { ($0["field"] as? [String: Any])?["name"] as? String == "Nordacker" }, "\(lines)")
        #expect(abs(figure("seconds_working", inField) - whole.working) < 0.001, "\(inField)")
        #expect(abs(figure("hectares_worked", inField) - whole.metresWorking * 6 / 10_000) < 1e-6)
        #expect(abs(figure("litres_fuel", inField) - whole.litres) < 1e-6)
        #expect(inField["seconds_road"] is NSNull, "a field has no road")
        let fieldText = try await AgrigpsCommand.run(["stats", "--by-field", "--working-width", "6"] + range)
        #expect(
            fieldText.stdout.first?.hasSuffix("working h  not working h  road h  worked ha  engine h  fuel l") == true,
            "\(fieldText.stdout)")

        // The TimeLogs' running totals go on across a restart: the drive again adds as much again.
        func totals() async throws -> [Double] {
            let kept = try await SystemTool.run(
                "/usr/bin/sqlite3",
                [
                    "-readonly", state + "/spool.sqlite",
                    "SELECT machine_effective_s, machine_ineffective_s, machine_fuel_ml, machine_engine_s FROM sample "
                        + "WHERE machine_effective_s IS NOT NULL ORDER BY id DESC LIMIT 1",
                ])
            return kept.output.split(whereSeparator: { $0.isWhitespace || $0 == "|" }).compactMap { Double($0) }
        }
        let first = try await totals()
        #expect(
            first.count == 4 && abs(first[0] - whole.working) < 0.001 && abs(first[2] - whole.litres * 1000) < 0.001,
            "\(first)")
        #expect(abs(first[3] - whole.engine) < 0.001, "the engine's running seconds, as Records count them: \(first)")
        let again = try await AgrigpsCommand.run(["run", "--replay", drive, "--state-dir", state], timeout: 90)
        #expect(again.code == 0, "\(again.stderr.suffix(5))")
        let second = try await totals()
        #expect(
            second.count == 4 && abs(second[0] - 2 * whole.working) < 0.001
                && abs(second[1] - 2 * whole.notWorking) < 0.001
                && abs(second[3] - 2 * whole.engine) < 0.001, "\(second)")
    }

    @Test(
        "a receiver alone, no bus: no work figures until the work switch is used; with it on, the moving time is working"
    )
    func workSwitch() async throws {
        let scratch = TemporaryDirectory("switch")
        let directory = scratch.path
        let log = Fixtures.log("haicom-305N")
        let first = try await AgrigpsCommand.run(
            ["run", "--replay", log, "--state-dir", directory + "/first"], timeout: 90)
        #expect(first.code == 0, "\(first.stderr.suffix(5))")
        let none = try await Self.samples(directory + "/first/spool.sqlite")
        #expect(
            !none.isEmpty && none.allSatisfy { $0.work.isEmpty },
            "a machine without a bus or a switch has no work state")
        let plain = try await AgrigpsCommand.run([
            "stats", "--since", "2000-01-01", "--by", "year", "--state-dir", directory + "/first",
        ])
        #expect(plain.stdout.first.map { !$0.contains("working") } == true, "\(plain.stdout)")

        let on = try await AgrigpsCommand.run(["work", "on", "--state-dir", directory + "/second"])
        #expect(on.code == 0 && on.stdout.joined().contains("Work switch on"), "\(on.stdout) \(on.stderr)")
        let second = try await AgrigpsCommand.run(
            ["run", "--replay", log, "--state-dir", directory + "/second"], timeout: 90)
        #expect(second.code == 0, "\(second.stderr.suffix(5))")
        let switched = try await Self.samples(directory + "/second/spool.sqlite")
        let states = Dictionary(grouping: switched, by: \.work).mapValues(\.count)
        print("work switch on, a receiver alone: \(states)")
        // Working where the receiver moves at 1 km/h or more, not working where it stands.
        for sample in switched {
            guard let speed = sample.speed else { continue }
            #expect(sample.work == (speed >= 1 / 3.6 ? "working" : "not-working"), "\(sample)")
        }
        let status = try await AgrigpsCommand.run(["status", "--state-dir", directory + "/second"])
        #expect(
            status.stdout.contains { $0.hasPrefix("Machine: ") && $0.contains("work switch on") }, "\(status.stdout)")
        let bad = try await AgrigpsCommand.run(["work", "maybe", "--state-dir", directory + "/second"])
        #expect(bad.code == 64, "\(bad.stderr)")
    }

    @Test(
        "a machine bus that is not there: status says why, the samples go on without a machine; a bad name is refused in words"
    )
    func missingMachineBus() async throws {
        let scratch = TemporaryDirectory("machine-bus")
        let directory = scratch.file("state")
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", Fixtures.log("haicom-305N"), "--machine-bus", "can9", "--state-dir", directory],
            timeout: 90)
        #expect(run.code == 0, "\(run.stderr.suffix(5))")
        let samples = try await Self.samples(directory + "/spool.sqlite")
        #expect(!samples.isEmpty && samples.allSatisfy { $0.work.isEmpty }, "nothing heard, no switch: no machine")
        let status = try await AgrigpsCommand.run(["status", "--json", "--state-dir", directory])
        let machine =
            (try JSONSerialization.jsonObject(with: Data(status.stdout.joined().utf8)) as? [String: Any])?["machine"]
            as? [String: Any]
        #expect(
            (machine?["bus_problem"] as? String)?.hasPrefix("can9: there is no CAN interface can9") == true,
            "\(status.stdout)")
        let text = try await AgrigpsCommand.run(["status", "--state-dir", directory])
        #expect(
            text.stdout.contains {
                $0.hasPrefix("Machine: unknown") && $0.contains("its bus can9: there is no CAN interface can9")
            }, "\(text.stdout)")

        let badFlag = try await AgrigpsCommand.run(["run", "--machine-bus", "can 1", "--state-dir", directory])
        #expect(
            badFlag.code == 64 && badFlag.stderr.joined().contains("--machine-bus must be a CAN interface's name"),
            "\(badFlag.stderr)")
        try "[machine]\nbus = 5\n".write(toFile: directory + "/bad.conf", atomically: true, encoding: .utf8)
        let badKey = try await AgrigpsCommand.run([
            "run", "--config", directory + "/bad.conf", "--state-dir", directory,
        ])
        #expect(
            badKey.code == 78 && badKey.stderr.joined().contains("[machine] bus"), "\(badKey.code) \(badKey.stderr)")
    }
}
