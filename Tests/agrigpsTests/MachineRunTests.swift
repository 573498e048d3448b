import AgrirouterWire
import Foundation
import GNSS
import Machine
import StateDirectory
import StateView
import TestSupport
import Testing

/// A tractor on the receiver's bus: its broadcasts replayed beside the receiver's, into the daemon.
@Suite(.timeLimit(.minutes(2)))
struct MachineRunTests {
    @Test(
        "run --replay of a drive with the hitch lowered and raised: each sample carries the work state, speed, engine and fuel; status shows the machine"
    )
    func drive() async throws {
        let scratch = TemporaryDirectory("drive")
        let directory = scratch.path
        let drive = try TractorDrive.write(to: directory + "/drive.log", hitchDown: 60, hitchUp: 150)
        // Without vcan0 the recording is read here; with one, through gpsd. Both sample the same drive.
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", drive, "--state-dir", directory + "/state"], timeout: 90)
        #expect(run.code == 0, "\(run.stdout) \(run.stderr)")
        let rows = try await SystemTool.run(
            "/usr/bin/sqlite3",
            [
                "-readonly", directory + "/state/spool.sqlite",
                "SELECT receiver_time, machine_work, machine_speed, machine_speed_source, engine_speed, engine_hours, fuel_rate FROM sample ORDER BY id",
            ])
        let samples = rows.output.split(separator: "\n").map {
            $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        }
        try #require(samples.count > 150, "\(rows.output.prefix(500))")
        let start = try #require(samples.first.flatMap { Double($0[0]) })
        // Work follows the hitch within a sample of where the drive changed it.
        for sample in samples {
            guard let time = Double(sample[0]) else { continue }
            let offset = time - start
            if offset < 59 || (offset > 62 && offset < 149) || offset > 152 {
                #expect(
                    sample[1] == (offset > 61 && offset < 150 ? "working" : "not-working"), "at \(offset) s: \(sample)")
            }
            #expect(
                sample[2] == "2.5" && sample[3] == "wheel" && sample[4] == "1800.0" && sample[5] == "1500.0"
                    && sample[6] == "12.0", "\(sample)")
        }
        let working = samples.filter { $0[1] == "working" }.compactMap { Double($0[0]).map { $0 - start } }
        print(
            "working from \(working.min() ?? -1) s to \(working.max() ?? -1) s: \(working.count) of \(samples.count) samples"
        )
        #expect(working.count >= 83)
        let status = try await AgrigpsCommand.run(["status", "--json", "--state-dir", directory + "/state"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(status.stdout.joined().utf8)) as? [String: Any])
        let machine = try #require(object["machine"] as? [String: Any], "\(status.stdout)")
        #expect(machine["tractor_ecu"] as? Int == 0xF0 && machine["engine"] as? Int == 0)
        #expect(
            machine["not_heard"] as? [String] == [
                "ground-speed", "selected-speed", "front-hitch", "rear-pto", "front-pto", "fuel-used",
            ])
        let text = try await AgrigpsCommand.run(["status", "--state-dir", directory + "/state"])
        #expect(
            text.stdout.contains {
                $0.hasPrefix(
                    "Machine: not working (tractor ECU at 240, engine controller at 0); wheel-based speed 2.50 m/s (9.0 km/h) forward"
                )
            },
            "\(text.stdout)")
    }
}

/// A tractor that falls silent mid-drive, with its hitch in work.
@Suite(.timeLimit(.minutes(2)))
struct SilentTractorTests {
    @Test(
        "the tractor stops sending 100 s in, hitch down: within 3 s of the recording the work state is unknown, never working again"
    )
    func silentMidDrive() async throws {
        let scratch = TemporaryDirectory("silent")
        let directory = scratch.path
        let drive = try TractorDrive.write(
            to: directory + "/drive.log", hitchDown: 60, hitchUp: 150, tractorStopsAt: 100)
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", drive, "--state-dir", directory + "/state"], timeout: 90)
        #expect(run.code == 0, "\(run.stdout) \(run.stderr)")
        let rows = try await SystemTool.run(
            "/usr/bin/sqlite3",
            [
                "-readonly", directory + "/state/spool.sqlite",
                "SELECT receiver_time, machine_work, IFNULL(machine_speed, 'none'), IFNULL(engine_hours, 'none') FROM sample ORDER BY id",
            ])
        let samples = rows.output.split(separator: "\n").map {
            $0.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
        }
        let start = try #require(samples.first.flatMap { Double($0[0]) })
        let offsets = samples.compactMap { sample in Double(sample[0]).map { ($0 - start, sample) } }
        // With vcan0 on this machine the replay goes through gpsd at its own pace, where the 3 s are
        // the replay's: only the recording's own reading is held to the recording's 3 s.
        let withoutGPSD = !FileManager.default.fileExists(atPath: "/sys/class/net/vcan0")
        let after = offsets.filter { $0.0 > (withoutGPSD ? 103 : 130) }.map(\.1)
        #expect(
            !after.isEmpty && after.allSatisfy { $0[1] == "unknown" && $0[2] == "none" },
            "\(after.filter { $0[1] != "unknown" || $0[2] != "none" }.prefix(3))")
        // Engine hours, a total sent rarely, stay known for an hour.
        #expect(after.allSatisfy { $0[3] == "1500.0" })
        let before = offsets.filter { $0.0 > 62 && $0.0 < 98 }.map(\.1)
        #expect(!before.isEmpty && before.allSatisfy { $0[1] == "working" })
        print("silent tractor: \(before.count) working samples before, \(after.count) unknown after")
    }
}

/// `[machine]` and its flags choose what counts as work.
@Suite(.timeLimit(.minutes(5)))
struct WorkRulesRunTests {
    /// The work states of a run of the built drive with `arguments`, by count.
    static func states(_ arguments: [String], configuration: String? = nil) async throws -> [String: Int] {
        let scratch = TemporaryDirectory("rules")
        let directory = scratch.path
        let drive = try TractorDrive.write(to: directory + "/drive.log", hitchDown: 60, hitchUp: 150)
        var config: [String] = []
        if let configuration {
            try configuration.write(toFile: directory + "/agrigps.conf", atomically: true, encoding: .utf8)
            config = ["--config", directory + "/agrigps.conf"]
        }
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", drive, "--state-dir", directory + "/state"] + config + arguments, timeout: 90)
        #expect(run.code == 0, "\(run.stdout) \(run.stderr)")
        let rows = try await SystemTool.run(
            "/usr/bin/sqlite3",
            [
                "-readonly", directory + "/state/spool.sqlite",
                "SELECT machine_work, COUNT(*) FROM sample GROUP BY machine_work",
            ])
        return Dictionary(
            uniqueKeysWithValues: rows.output.split(separator: "\n").compactMap { line -> (String, Int)? in
                let parts = line.split(separator: "|").map(String.init)
                return parts.count == 2 ? (parts[0], Int(parts[1]) ?? -1) : nil
            })
    }

    @Test("the configuration's work signals are the work state's, by name")
    func signalNames() {
        #expect(ConfigurationFile.workSignals == WorkSignal.allCases.map(\.rawValue))
    }

    @Test(
        "only the front hitch counts (the drive has none): every sample unknown; the drive's 9 km/h under a 10 km/h minimum: none working; a misspelt signal refused"
    )
    func rules() async throws {
        #expect(try await Self.states(["--work-signals", "front-hitch"]) == ["unknown": 200])
        let slow = try await Self.states([], configuration: "[machine]\nminimum_speed = 10\n")
        #expect(slow["working"] == nil && slow["not-working"] == 200, "\(slow)")
        let refused = try await AgrigpsCommand.run(["run", "--work-signals", "plough", "--state-dir", "/nonexistent"])
        #expect(
            refused.code == 64 && refused.stderr.joined().contains("--work-signals must be a list of one or more of"),
            "\(refused.stderr)")
    }
}

/// The machine's data sent as EFDI: the description's machine element and the TimeLogs' values.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MachineEFDITests {
    /// A built drive replayed into `machine`'s daemon, which sends it to the local agrirouter.
    static func replay(into machine: OnboardedMachine, hitchDown: Double, hitchUp: Double) async throws {
        let drive = try TractorDrive.write(to: machine.directory + "/drive.log", hitchDown: hitchDown, hitchUp: hitchUp)
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", drive, "--state-dir", machine.state, "--spacing", "0.05"], timeout: 150)
        #expect(run.code == 0, "\(run.stderr.suffix(5))")
    }

    static func working(_ time: Efdi_Time) -> Bool {
        time.dataLogValue.contains { $0.processDataDdi == 141 && $0.processDataValue == 1 }
    }

    /// Worked seconds as a receiver sums them from the TimeLogs: each Time with DDI 141 on stands for
    /// the time until the next (at most the box's own longest step), counted under its `place` (nil:
    /// nowhere).
    static func workedSeconds(_ times: [Efdi_Time], by place: (Efdi_Time) -> String?) -> [String: Double] {
        var summed: [String: Double] = [:]
        for (time, next) in zip(times, times.dropFirst()) where working(time) {
            let seconds =
                Double(next.start.seconds - time.start.seconds) + Double(next.start.nanos - time.start.nanos) / 1e9
            guard seconds > 0, seconds <= PositionSample.longestStep, let name = place(time) else { continue }
            summed[name, default: 0] += seconds
        }
        return summed
    }

    /// The box's own Records of the replayed drive, a line per period (and field), as `agrigps stats --json` gives them.
    static func records(_ machine: OnboardedMachine, _ extra: [String] = []) async throws -> [[String: Any]] {
        let stats = try await AgrigpsCommand.run(
            [
                "stats", "--json", "--by", "year", "--since", "2010-01-01", "--until", "2020-01-01",
                "--time-zone", "UTC", "--state-dir", machine.state,
            ] + extra)
        return try #require(
            (try JSONSerialization.jsonObject(with: Data(stats.stdout.joined().utf8)) as? [String: Any])?["periods"]
                as? [[String: Any]], "\(stats.stdout)")
    }

    @Test(
        "a drive replayed into agrigps run reaches the local agrirouter: a description with the machine's DDIs, and Times whose work state follows the hitch"
    )
    func driveAsEFDI() async throws {
        let machine = try await OnboardedMachine.make()
        try await tearingDown({ await machine.close() }) {
            try await Self.replay(into: machine, hitchDown: 60, hitchUp: 150)
            // The description, as farm software decodes it with efdi.proto.
            let descriptions = try await machine.simulator.sentMessages(endpoint: try machine.endpointID)
                .filter { $0.envelope.technicalMessageType == TechnicalMessageType.deviceDescription }
                .map { try Efdi_ISO11783_TaskData(serializedBytes: $0.payload) }
            let device = try #require(descriptions.last?.device.first)
            #expect(device.deviceElement.map(\.deviceElementDesignator) == ["agrigps", "GNSS receiver", "Tractor"])
            #expect(
                device.deviceProcessData.map(\.deviceProcessDataDdi) == [
                    397, 141, 397, 400, 484, 149, 493, 276, 119, 120, 148, 492,
                ])
            #expect(
                device.deviceProcessData.suffix(4).allSatisfy { $0.deviceProcessDataTriggerMethods & 16 == 16 },
                "running totals")
            let times = try await machine.receivedTimes()
            #expect(times.count >= 190, "\(times.count) Times")
            let start = try #require(times.first?.start.seconds)
            var working: [Int64] = []
            // Worked seconds as a receiver sums them, and the running totals' last values.
            let summed = Self.workedSeconds(times) { _ in "drive" }["drive"] ?? 0
            var lastTotals: [UInt32: Int64] = [:]
            for time in times {
                for value in time.dataLogValue where [119, 120, 148, 492].contains(value.processDataDdi) {
                    #expect(
                        value.processDataValue >= lastTotals[value.processDataDdi] ?? 0, "a running total never falls")
                    lastTotals[value.processDataDdi] = value.processDataValue
                }
            }
            // The box's own Records of the same drive.
            let periods = try await Self.records(machine)
            let records = try #require(periods.first?["seconds_working"] as? Double, "\(periods)")
            print("worked: \(summed) s summed from DDI 141, \(records) s in Records, totals \(lastTotals)")
            #expect(records > 80 && abs(summed - records) <= records * 0.01, "within 1 %: \(summed) against \(records)")
            #expect(abs(Double(lastTotals[119] ?? -1) - records) <= 1, "DDI 119's last total, whole seconds")
            // The engine turned the whole drive (214 s): DDI 492 counts it in steps of 0.05 h.
            let engine = try #require(periods.first?["seconds_engine_running"] as? Double)
            #expect(
                lastTotals[492] == Int64(engine / 180),
                "DDI 492's last total \(lastTotals[492] ?? -1) against \(engine) s")
            for time in times {
                let values = Dictionary(
                    time.dataLogValue.filter { $0.deviceElementIDRef.number == -3 }.map {
                        ($0.processDataDdi, $0.processDataValue)
                    },
                    uniquingKeysWith: { first, _ in first })
                #expect(
                    values[484] == 18_000_000 && values[149] == 3_333 && values[493] == 15_000 && values[400] == 1
                        && values[397] == 2_500,
                    "\(values)")
                if values[141] == 1 { working.append(time.start.seconds - start) }
                #expect(values[141] == 0 || values[141] == 1, "\(values)")
            }
            // Worked hours as farm software sums them from DDI 141: the hitch was down from 60 to 150 s.
            print("DDI 141 on from \(working.min() ?? -1) s to \(working.max() ?? -1) s in \(working.count) Times")
            #expect(
                working.count >= 83 && (58...63).contains(working.min() ?? 0)
                    && (146...151).contains(working.max() ?? 0), "\(working)")
        }
    }

    @Test(
        "a drive across two fields: the worked hours a receiver sums per field from the TimeLogs' DDI 141 match the box's Records by field within 1 %"
    )
    func twoFieldsAsEFDI() async throws {
        let machine = try await OnboardedMachine.make()
        try await tearingDown({ await machine.close() }) {
            try await Self.replay(into: machine, hitchDown: 10, hitchUp: 210)
            let times = try await machine.receivedTimes()
            // Two fields, north and south of the middle of the worked stretch (the receiver drifts 2 m south over it).
            let latitudes = times.filter(Self.working).map(\.positionStart.positionNorth).sorted()
            let middle = try #require(latitudes.isEmpty ? nil : latitudes[latitudes.count / 2])
            let south = try #require(latitudes.first { $0 < middle } ?? latitudes.first)
            let split = (middle + (latitudes.last { $0 < middle } ?? south)) / 2
            let all = times.map(\.positionStart)
            let (west, east) = (
                try #require(all.map(\.positionEast).min()) - 0.001, try #require(all.map(\.positionEast).max()) + 0.001
            )
            let boxes = [
                ("Nord", split, try #require(all.map(\.positionNorth).max()) + 0.001),
                ("Süd", try #require(all.map(\.positionNorth).min()) - 0.001, split),
            ]
            let parts = boxes.map { name, low, high in
                #"<PFD A="PFD\#(name.count)" C="\#(name)" D="0"><PLN A="1"><LSG A="1">"#
                    + [(low, west), (low, east), (high, east), (high, west)].map {
                        #"<PNT A="2" C="\#($0.0)" D="\#($0.1)"/>"#
                    }.joined()
                    + "</LSG></PLN></PFD>"
            }
            let xml =
                #"<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="0" DataTransferOrigin="1">"#
                + parts.joined() + "</ISO11783_TaskData>"
            try Data(xml.utf8).write(to: URL(fileURLWithPath: machine.directory + "/TASKDATA.XML"))
            #expect(
                try await AgrigpsCommand.run([
                    "fields", "import", machine.directory + "/TASKDATA.XML", "--state-dir", machine.state,
                ]).code == 0)
            // A receiver's sum per field: in the field of each Time's position.
            let summed = Self.workedSeconds(times) { time in
                let latitude = time.positionStart.positionNorth
                return boxes.first { latitude > $0.1 && latitude < $0.2 }?.0
            }
            let lines = try await Self.records(machine, ["--by-field"])
            var records: [String: Double] = [:]
            for line in lines {
                if let name = (line["field"] as? [String: Any])?["name"] as? String {
                    records[name] = line["seconds_working"] as? Double
                }
            }
            print("two fields: summed from DDI 141 \(summed), Records \(records)")
            #expect(
                Set(records.keys) == ["Nord", "Süd"] && Set(summed.keys) == ["Nord", "Süd"], "\(records) \(summed)")
            for (name, seconds) in records {
                #expect(seconds > FieldWork.leastWork, "\(name) worked, not brushed: \(seconds) s")
                #expect(
                    abs((summed[name] ?? 0) - seconds) <= seconds * 0.01,
                    "\(name) within 1 %: \(summed[name] ?? 0) against \(seconds)")
            }
        }
    }
}
