import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Foundation
import GPSDReplay
import TestSupport
import Testing

@Suite(.serialized, .timeLimit(.minutes(5)))
struct FieldsFromAgrirouterTests {
    @Test(
        "agrigps run stores the fields farm software sent through agrirouter, and the sender's next TaskData replaces them"
    )
    func fieldsArriveThroughAgrirouter() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TANF000001": "Tractor", "TANF000002": "Farm software"]))
        let scratch = TemporaryDirectory("fields")
        let directory = scratch.path
        try await tearingDown({ await simulator.shutdown() }) {
            try simulator.caCertificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let state = directory + "/tractor"
            let onboarded = try await AgrigpsCommand.run([
                "onboard", "--tan", "TANF000001", "--env", "local", "--onboarding-url", simulator.onboardingURL,
                "--ca-file", directory + "/ca.pem", "--state-dir", state,
                "--application-id", "app", "--certification-version-id", "v",
            ])
            try #require(onboarded.code == 0, "\(onboarded.stderr)")
            func run() async throws {
                let run = try await AgrigpsCommand.run(
                    ["run", "--replay", Fixtures.log("ublox-lea-4h"), "--state-dir", state, "--spacing", "0.05"],
                    timeout: 120)
                #expect(run.code == 0, "\(run.stderr.suffix(5))")
            }
            func fields() async throws -> [[String: Any]] {
                let listing = try await AgrigpsCommand.run(["fields", "--json", "--state-dir", state])
                #expect(listing.code == 0, "\(listing.stderr)")
                let document =
                    try JSONSerialization.jsonObject(with: Data(listing.stdout.joined(separator: "\n").utf8))
                    as? [String: Any]
                return document?["fields"] as? [[String: Any]] ?? []
            }
            try await run()  // the set-up: TaskData in the capabilities and the subscription
            let tractorID = try #require(await simulator.endpointIDs(named: "Tractor").first)
            #expect(await simulator.subscriptions(endpoint: tractorID).contains(TechnicalMessageType.taskData))

            var farm = try await FarmSoftware.onboard(simulator, tan: "TANF000002")
            #expect(
                try await farm.sendTaskData(
                    TaskDataZip.make(fields: ["North", "South", "Brook"], padding: 1_700_000, seed: 1)) == 3)
            try await run()
            let first = try await fields()
            #expect(first.compactMap { $0["name"] as? String } == ["Brook", "North", "South"])
            #expect(
                first.compactMap { $0["source"] as? String }
                    == Array(repeating: "agrirouter: \(farm.endpoint.deviceAlternateId)", count: 3))

            #expect(
                try await farm.sendTaskData(TaskDataZip.make(fields: ["North", "Meadow"], padding: 900_000, seed: 2))
                    == 2)
            try await run()
            #expect(try await fields().compactMap { $0["name"] as? String } == ["Meadow", "North"])
            #expect(await simulator.feed(endpoint: tractorID).isEmpty, "every chunk confirmed")
        }
    }

    @Test(
        "over MQTT, TaskData sent while the daemon runs is pushed, joined from its chunks and stored without a restart")
    func fieldsPushedOverMQTT() async throws {
        var configuration = SimConfiguration(tans: ["TANF000011": "Tractor", "TANF000012": "Farm software"])
        configuration.mqtt = true
        let simulator = try await AgrirouterSimulator.start(configuration)
        let scratch = TemporaryDirectory("fields")
        let directory = scratch.path
        try await tearingDown({ await simulator.shutdown() }) {
            try simulator.caCertificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let state = directory + "/tractor"
            let onboarded = try await AgrigpsCommand.run([
                "onboard", "--tan", "TANF000011", "--env", "local", "--onboarding-url", simulator.onboardingURL,
                "--ca-file", directory + "/ca.pem", "--state-dir", state, "--transport", "mqtt",
                "--application-id", "app", "--certification-version-id", "v",
            ])
            try #require(onboarded.code == 0, "\(onboarded.stderr)")
            var options = ReplayGPSD.Options()
            options.realTime = true
            let gpsd = try await ReplayGPSD.start(
                log: try NMEALog(contentsOf: Fixtures.log("telit-he910")), options: options)
            defer { gpsd.stop() }
            let daemon = try AgrigpsCommand(["run", "--gpsd", "127.0.0.1:\(gpsd.address.port)", "--state-dir", state])
            defer {
                daemon.process.terminate(grace: 2)
                daemon.cleanUp()
            }
            // Connected and subscribed: from here on a message for the tractor is pushed at once.
            let tractorID = try #require(await simulator.endpointIDs(named: "Tractor").first)
            #expect(
                try await eventually(within: 30) {
                    await simulator.subscriptions(endpoint: tractorID).contains(TechnicalMessageType.taskData)
                },
                "the daemon subscribed to TaskData")
            var farm = try await FarmSoftware.onboard(simulator, tan: "TANF000012")
            let chunks = try await farm.sendTaskData(
                TaskDataZip.make(fields: ["Ridge", "Hollow"], padding: 1_200_000, seed: 3))
            #expect(chunks >= 2, "big enough to be chunked")
            // Asked while the daemon writes: an answer that is not JSON (it says why on stderr) is asked again.
            var lastError: [String] = []
            func names() async throws -> [String] {
                let listing = try await AgrigpsCommand.run(["fields", "--json", "--state-dir", state])
                if listing.code != 0 { lastError = listing.stderr }
                let document =
                    (try? JSONSerialization.jsonObject(with: Data(listing.stdout.joined(separator: "\n").utf8)))
                    as? [String: Any]
                return (document?["fields"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
            }
            let stored = try await eventually(within: 60) { try await names() == ["Hollow", "Ridge"] }
            let listed = try await names()
            #expect(stored, "stored while running: \(listed) \(lastError)")
            #expect(
                try await eventually(within: 30) { await simulator.feed(endpoint: tractorID).isEmpty },
                "every chunk confirmed")

            // A TaskData that is no zip is refused and counted; the fields stay as they were.
            let garbage = try farm.encoder.encode(
                technicalMessageType: TechnicalMessageType.taskData,
                content: Data(Data("not a zip".utf8).base64EncodedString().utf8), chunk: nil, fileName: "TASKDATA.zip")
            try await farm.post([garbage])
            func taskData() async throws -> [String: Any]? {
                let status = try await AgrigpsCommand.run(["status", "--json", "--state-dir", state])
                if status.stdout.isEmpty { lastError = status.stderr }
                let document =
                    (try? JSONSerialization.jsonObject(with: Data(status.stdout.joined(separator: "\n").utf8)))
                    as? [String: Any]
                return document?["task_data"] as? [String: Any]
            }
            // The heartbeat's counts move on every 10 s.
            let refused = try await eventually(within: 40) { try await taskData()?["refused"] as? Int == 1 }
            let counts = try await taskData()
            #expect(refused, "\(String(describing: counts)) \(lastError)")
            #expect(
                counts?["imported"] as? Int == 1
                    && (counts?["last_problem"] as? String)?.hasPrefix("refused: ") == true,
                "\(String(describing: counts))")
            let text = try await AgrigpsCommand.run(["status", "--state-dir", state])
            #expect(
                text.stdout.contains {
                    $0.hasPrefix(
                        "TaskData from farm software since the daemon started: 1 imported, 1 refused; the last problem: refused: "
                    )
                },
                "\(text.stdout)")
            #expect(try await names() == ["Hollow", "Ridge"])
            kill(daemon.process.pid, SIGTERM)
            #expect(await daemon.process.wait(timeout: 10) == 143)
        }
    }
}
