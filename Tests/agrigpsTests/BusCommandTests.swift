import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `agrigps bus`: which sender on a CAN bus is the GNSS receiver, from a recording or an interface.
@Suite(.timeLimit(.minutes(1)))
struct BusCommandTests {
    @Test("a recording: the receiver, what it sends, and exit 0; in JSON too")
    func recording() async throws {
        let text = try await AgrigpsCommand.run(["bus", "--file", Fixtures.can("candumpSample1.txt")])
        #expect(text.code == 0, "\(text.stderr)")
        #expect(
            text.stdout == [
                "Recording: 6026 frames from 3 senders.", "GNSS receiver at address 0 (Garmin).",
                "  0 (Garmin): 129029 ×97, 129025 ×963, 129539 ×97; last fix: GNSS fix at 42.49677, -71.58366  <- read",
                "Machine: none of its broadcasts heard (speeds, hitches, PTOs, engine, fuel).",
            ])
        let json = try await AgrigpsCommand.run(["bus", "--file", Fixtures.can("candumpSample3.txt"), "--json"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [String: Any])
        #expect(object["chosen"] as? Int == 43 && object["senders"] as? [Int] == [0, 43, 116, 172, 204])
        let receiver = try #require((object["receivers"] as? [[String: Any]])?.first)
        #expect(
            receiver["missing"] as? [String] == ["129029 (fix quality)", "129539 (fix mode)"]
                && receiver["method"] == nil)
    }

    @Test(
        "a tractor's recording: the machine's broadcasts, each with its sender and age, and what was not heard; in JSON too"
    )
    func tractorRecording() async throws {
        let text = try await AgrigpsCommand.run(["bus", "--file", Fixtures.can("jd5055e-engine.log")])
        // No receiver on this bus: exit 1, as for any bus without one.
        #expect(text.code == 1, "\(text.stderr)")
        #expect(
            Array(text.stdout.dropFirst(2)) == [
                "Machine: no tractor ECU claimed an address, engine controller at 0.",
                "  ground-based speed: not available (from 71, 18.7 s before the end)",
                "  rear PTO: disengaged, 0 rpm (from 71, 18.7 s before the end)",
                "  front PTO: disengaged, 0 rpm (from 71, 18.7 s before the end)",
                "  engine speed: 0 rpm (from 0)",
                "  engine hours: 147.55 h (from 0, 20.3 s before the end)",
                "  fuel rate: 0.00 L/h (from 0, 0.1 s before the end)",
                "  not heard: wheel-based speed, machine selected speed, rear hitch, front hitch, fuel used",
            ], "\(text.stdout)")
        let json = try await AgrigpsCommand.run(["bus", "--file", Fixtures.can("jd5055e-engine.log"), "--json"])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [String: Any])
        let machine = try #require(object["machine"] as? [String: Any])
        #expect(machine["engine"] as? Int == 0 && machine["tractor_ecu"] == nil)
        let signals = try #require(machine["signals"] as? [[String: Any]])
        #expect(
            signals.map { $0["signal"] as? String } == [
                "ground-speed", "rear-pto", "front-pto", "engine-speed", "engine-hours", "fuel-rate",
            ])
        #expect(signals.first { $0["signal"] as? String == "engine-hours" }?["value"] as? String == "147.55 h")
        #expect(
            machine["not_heard"] as? [String] == [
                "wheel-speed", "selected-speed", "rear-hitch", "front-hitch", "fuel-used",
            ])
    }

    @Test("nothing to read, or no receiver on it: a clear error and its exit code")
    func errors() async throws {
        let scratch = TemporaryDirectory("bus")
        let directory = scratch.path
        try "(1.0) can0 19F51323#000EFFFFFFFFFFFF\nnot a frame\n".write(
            toFile: directory + "/ais.log", atomically: true, encoding: .utf8)
        let none = try await AgrigpsCommand.run(["bus", "--file", directory + "/ais.log"])
        #expect(
            none.code == 1
                && none.stdout.contains(
                    "no GNSS receiver: 1 frame from address 35, none with a position (PGN 129029 or 129025).")
        )
        #expect(none.stderr.first?.contains("1 line not read (line 2: neither candump -l's") == true, "\(none.stderr)")
        for (arguments, code, message) in [
            (["bus", "agrigpsnone0", "--seconds", "1"], Int32(69), "agrigpsnone0"),
            (["bus"], 64, "give a CAN interface or --file LOG, one of them"),
            (["bus", "can0", "--file", "x"], 64, "give a CAN interface or --file LOG, one of them"),
            (["bus", "can 0"], 64, "'can 0' is not a network interface name"),
            (["bus", "can0", "--seconds", "0"], 64, "--seconds must be a number from 1 to 60, got '0'"),
            (["bus", "--file", directory + "/missing.log"], 66, "cannot read"),
        ] {
            let result = try await AgrigpsCommand.run(arguments)
            #expect(
                result.code == code && result.stderr.joined().contains(message),
                "\(arguments): \(result.code) \(result.stderr)")
        }
    }

    @Test(
        "run with the receiver on a CAN interface that is not there: the daemon runs on, and status says why the bus is silent"
    )
    func runWithoutTheInterface() async throws {
        let scratch = TemporaryDirectory("bus-run")
        let state = scratch.file("state")
        let daemon = try AgrigpsCommand([
            "run", "--gpsd", "127.0.0.1:1", "--source", "nmea2000://agrigpsnone0:2", "--state-dir", state,
        ])
        defer {
            if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
            daemon.cleanUp()
        }
        let said = await eventually(within: 20) {
            let status = try? await AgrigpsCommand.run(["status", "--state-dir", state])
            return status?.stdout.contains {
                $0.hasPrefix("CAN bus: agrigpsnone0: there is no CAN interface agrigpsnone0")
            } == true
        }
        #expect(said && daemon.process.isRunning())
        let json = try await AgrigpsCommand.run(["status", "--json", "--state-dir", state])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [String: Any])
        #expect((object["receiver_bus"] as? String)?.hasPrefix("agrigpsnone0: there is no CAN interface") == true)
        let refused = try await AgrigpsCommand.run(["run", "--source", "nmea2000://can0:254", "--state-dir", state])
        #expect(
            refused.code == 64
                && refused.stderr.first?.contains("--source the receiver's address must be a number from 0 to 253")
                    == true
        )
    }

    @Test(
        "replay of a candump recording: onto a virtual CAN interface; where the kernel has no SocketCAN or no such interface, what is missing and how to make it"
    )
    func replayRecording() async throws {
        let recording = Fixtures.can("logfile_20140914_365495765_can.log")
        let result = try await AgrigpsCommand.run(["replay", "--json", "--can", "agrigpsvcan9", recording])
        if hasSocketCANHere() {
            #expect(
                result.code == 69
                    && result.stderr.joined().contains(
                        "there is no interface agrigpsvcan9 to replay a candump recording onto; make a virtual one: sudo modprobe vcan && sudo ip link add agrigpsvcan9 type vcan"
                    ),
                "\(result.code) \(result.stderr)")
        } else {
            // This kernel has no SocketCAN: the replay itself runs in the field rig's guest.
            #expect(
                result.code == 69
                    && result.stderr.joined().contains(
                        "this kernel offers no SocketCAN, so a candump recording cannot be replayed here"),
                "\(result.code) \(result.stderr)")
        }
        #expect(result.stdout.isEmpty)
        // The daemon's replay takes the same path, onto the interface of --source.
        let scratch = TemporaryDirectory("can-replay")
        let state = scratch.file("state")
        let run = try await AgrigpsCommand.run([
            "run", "--replay", recording, "--source", "nmea2000://agrigpsvcan9", "--state-dir", state,
        ])
        #expect(
            run.code == 69
                && run.stderr.joined().contains(
                    hasSocketCANHere() ? "there is no interface agrigpsvcan9" : "this kernel offers no SocketCAN"),
            "\(run.code) \(run.stderr)")
        let retimed = try await AgrigpsCommand.run(["run", "--replay", recording, "--retime", "--state-dir", state])
        #expect(
            retimed.code == 64
                && retimed.stderr.joined().contains(
                    "a candump recording is replayed with the times it was recorded with")
        )
        let refused = try await AgrigpsCommand.run(["replay", "--can", "vcan 0", recording])
        #expect(
            refused.code == 64 && refused.stderr.joined().contains("--can: 'vcan 0' is not a network interface name"),
            "\(refused.stderr)")
    }

    @Test(
        "replay and run --replay of a candump recording with no vcan0 and no interface named: read by agrigps itself, without gpsd"
    )
    func replayWithoutInterface() async throws {
        // With a vcan0 on this machine the recording goes through gpsd as before; both give the samples.
        let withoutGPSD = !FileManager.default.fileExists(atPath: "/sys/class/net/vcan0")
        let recording = Fixtures.can("logfile_20140914_365495765_can.log")
        let replay = try await AgrigpsCommand.run(["replay", "--json", recording], timeout: 60)
        #expect(replay.code == 0, "\(replay.code as Any) \(replay.stderr)")
        let samples = try replay.stdout.map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(withoutGPSD ? samples.count == 200 : samples.count > 150, "\(samples.count) samples")
        #expect(
            samples.first?["time"] as? String == "2014-09-14T16:53:04.000Z"
                && samples.allSatisfy { $0["state"] as? String == "fix_3d_autonomous" })

        let scratch = TemporaryDirectory("bus-replay")
        let state = scratch.file("state")
        let run = try await AgrigpsCommand.run(["run", "--replay", recording, "--state-dir", state], timeout: 90)
        #expect(
            run.code == 0
                && run.stdout.last?.hasPrefix(withoutGPSD ? "agrigps: 200 samples taken" : "agrigps: ") == true,
            "\(run.stdout) \(run.stderr)")
        let status = try await AgrigpsCommand.run(["status", "--state-dir", state])
        if withoutGPSD {
            #expect(
                status.stdout.contains(
                    "CAN bus: recording: GNSS receiver at address 2; its fixes read by agrigps from the recording, without gpsd"
                ),
                "\(status.stdout)")
        }
        #expect(
            status.stdout.contains { $0.hasPrefix(withoutGPSD ? "Spool: 200 pending " : "Spool: ") }, "\(status.stdout)"
        )
    }

    /// Whether this kernel opens a raw CAN socket (PF_CAN 29, CAN_RAW 1).
    private func hasSocketCANHere() -> Bool {
        let probe = socket(29, Int32(SOCK_RAW.rawValue), 1)
        guard probe >= 0 else { return false }
        close(probe)
        return true
    }
}
