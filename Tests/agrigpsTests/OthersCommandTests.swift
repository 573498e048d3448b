import AgrirouterSim
import AgrirouterWire
import Foundation
import GNSS
import GRDB
import StateDirectory
import SwiftProtobuf
import TestSupport
import Testing

@Suite("agrigps others and status", .serialized, .timeLimit(.minutes(3)))
struct OthersCommandTests {
    let scratch = TemporaryDirectory("others-cli")
    /// Made by the store, or by the test, as each needs.
    var state: String { scratch.file("state") }

    /// A store holding one machine 908 m north-east of 52°N 8°E, heard from just now.
    func storeWithHarvester(heardAgo: Double = 0) async throws {
        var list = Agrirouter_Technicalmessagetype_GPSList()
        var entry = GPSEntry()
        entry.positionStatus = .dRtkFinteger
        entry.positionNorth = 52.006
        entry.positionEast = 8.009
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date())
        list.gpsEntries = [entry]
        let store = OtherMachinesStore(path: state + "/others.sqlite")
        let message = ReceivedFeedMessage(
            messageID: "m1", senderID: "harvester-id", technicalMessageType: TechnicalMessageType.gpsInfo,
            sentAt: Date(), content: try list.serializedBytes())
        _ = try await store.record([message], ownEndpointID: "me", receivedAt: Date().addingTimeInterval(-heardAgo))
        try await store.applyEndpointList(
            [("me", "Tractor"), ("harvester-id", "Harvester")], ownEndpointID: "me", at: Date())
    }

    func writeOwnFix(latitude: Double, longitude: Double) throws {
        var heartbeat = Heartbeat(pid: 1, onboarded: true)
        var sample = Heartbeat.Sample(Samples.fix(latitude: latitude, longitude: longitude, quality: .autonomous))
        sample.time = Date()
        heartbeat.lastFix = sample
        try heartbeat.write(to: state + "/heartbeat.json")
    }

    @Test("an empty store says nothing has been seen, and exits 0")
    func emptyStore() async throws {
        let result = try await AgrigpsCommand.run(["others", "--state-dir", state])
        #expect(result.code == 0)
        #expect(result.stdout.first == "No other machines seen yet.")
        let json = try await AgrigpsCommand.run(["others", "--json", "--state-dir", state])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [String: Any])
        #expect((object["machines"] as? [Any])?.isEmpty == true)
    }

    @Test("with no fix of our own, distance is unknown and said so; --near is refused")
    func noOwnFix() async throws {
        try await storeWithHarvester()
        let result = try await AgrigpsCommand.run(["others", "--state-dir", state])
        #expect(result.code == 0)
        #expect(
            result.stdout.contains {
                $0.hasPrefix("Harvester") && $0.contains("unknown") && $0.contains("RTK fixed")
                    && $0.hasSuffix("active")
            })
        #expect(result.stdout.contains("Our position: unknown (no fix yet), so distances and bearings are unknown."))
        #expect(result.stdout.contains { $0.hasPrefix("Last update: ") })
        let near = try await AgrigpsCommand.run(["others", "--near", "5km", "--state-dir", state])
        #expect(near.code == 69)
        #expect(near.stderr.first?.contains("--near needs this machine's position") == true)
    }

    @Test("with our fix: distance, bearing and --near filter")
    func withOwnFix() async throws {
        try await storeWithHarvester(heardAgo: 20)
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try writeOwnFix(latitude: 52, longitude: 8)
        let result = try await AgrigpsCommand.run(["others", "--state-dir", state])
        #expect(
            result.stdout.contains { $0.hasPrefix("Harvester") && $0.contains("908 m") && $0.contains("NE 43°") },
            "\(result.stdout)")
        let json = try await AgrigpsCommand.run(["others", "--json", "--state-dir", state])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [String: Any])
        let machine = try #require((object["machines"] as? [[String: Any]])?.first)
        #expect(machine["name"] as? String == "Harvester" && machine["distance_m"] as? Double == 908)
        #expect(machine["position_status"] as? String == "D_RTK_FINTEGER" && machine["state"] as? String == "active")
        let far = try await AgrigpsCommand.run(["others", "--near", "900m", "--state-dir", state])
        #expect(far.code == 0 && far.stdout.first == "No machine to show.")
        let near = try await AgrigpsCommand.run(["others", "--near", "1 km", "--state-dir", state])
        #expect(near.stdout.contains { $0.hasPrefix("Harvester") })
        let stale = try await AgrigpsCommand.run(["others", "--stale-after", "10", "--state-dir", state])
        #expect(stale.stdout.contains("1 stale, gone or silent machine not shown; --include-stale shows them."))
        let all = try await AgrigpsCommand.run([
            "others", "--stale-after", "10", "--include-stale", "--state-dir", state,
        ])
        #expect(all.stdout.contains { $0.hasPrefix("Harvester") && $0.hasSuffix("stale") })
    }

    @Test(
        "bad --near values are refused with what is allowed",
        arguments: [
            ("-3km", "is negative"), ("5ft", "unknown unit 'ft'"), ("far", "is not a distance"),
            ("", "a distance is needed"),
        ])
    func badNear(value: String, message: String) async throws {
        let result = try await AgrigpsCommand.run(["others", "--near", value, "--state-dir", state])
        #expect(result.code == 64)
        #expect(result.stderr.first?.contains(message) == true, "\(result.stderr)")
    }

    @Test("status with no daemon says so and exits 2")
    func statusWithoutDaemon() async throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        let result = try await AgrigpsCommand.run(["status", "--state-dir", state])
        #expect(result.code == 2)
        #expect(result.stdout.first?.hasPrefix("CRITICAL: daemon not running; spool: no spool yet") == true)
        #expect(result.stdout.dropFirst().first == "Daemon: NOT RUNNING (no heartbeat found)")
        #expect(result.stdout.contains("Other machines: 0 active, 0 stale, 0 gone"))
    }
}

/// Two machines at one local agrirouter, each run through `agrigps run --replay`: the one started
/// again after the other has sent finds it by name through its feed.
@Suite("Two machines", .serialized, .timeLimit(.minutes(3)))
struct TwoMachineTests {
    /// Both formats (the default), and EFDI alone: then the peer is known only from its device
    /// description and TimeLogs, and named by the description's designator.
    @Test(
        "a gateway started after its peer has sent sees it by name, and status counts it",
        arguments: [nil, "efdi"] as [String?])
    func seeEachOther(formats: String?) async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TANA000001": "Tractor", "TANA000002": "Harvester"]))
        let scratch = TemporaryDirectory("two")
        let directory = scratch.path
        try await tearingDown({ await simulator.shutdown() }) {
            try simulator.caCertificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            try "[publishing]\nformats = [\"\(formats ?? "gps_info\", \"efdi")\"]\n".write(
                toFile: directory + "/agrigps.conf", atomically: true, encoding: .utf8)
            for (tan, name) in [("TANA000001", "tractor"), ("TANA000002", "harvester")] {
                let onboarded = try await AgrigpsCommand.run([
                    "onboard", "--tan", tan, "--env", "local", "--onboarding-url", simulator.onboardingURL,
                    "--ca-file", directory + "/ca.pem", "--state-dir", directory + "/" + name,
                    "--application-id", "app", "--certification-version-id", "v",
                ])
                try #require(onboarded.code == 0, "\(onboarded.stderr)")
            }
            func run(_ machine: String, _ log: String) async throws -> [String] {
                let run = try await AgrigpsCommand.run(
                    [
                        "run", "--replay", Fixtures.log(log), "--state-dir", directory + "/" + machine, "--spacing",
                        "0.05",
                        "--config", directory + "/agrigps.conf",
                    ], timeout: 120)
                #expect(run.code == 0, "\(run.stderr.suffix(5))")
                return run.stdout
            }
            _ = try await run("tractor", "ublox-lea-4h")
            _ = try await run("harvester", "nmea-rtk")
            let again = try await run("tractor", "ublox-lea-4h")
            // Everything the harvester published reached the tractor: its gps:info (unless off), its device
            // descriptions and its TimeLogs.
            let harvesterSent = try await simulator.sentMessages(endpoint: try endpointID(directory + "/harvester"))
                .map(\.envelope.technicalMessageType)
            let published = harvesterSent.count {
                [TechnicalMessageType.gpsInfo, TechnicalMessageType.deviceDescription, TechnicalMessageType.timeLog]
                    .contains($0)
            }
            #expect(again.last?.hasSuffix(" \(published) messages from other machines received") == true, "\(again)")
            #expect(harvesterSent.contains(TechnicalMessageType.gpsInfo) == (formats == nil), "\(harvesterSent)")
            #expect(
                harvesterSent.contains(TechnicalMessageType.timeLog)
                    && harvesterSent.contains(TechnicalMessageType.deviceDescription))
            // The name the tractor shows came from the harvester's device description.
            let store = try DatabaseQueue(path: directory + "/tractor/others.sqlite")
            let designators = try await store.read { db in
                try String.fetchAll(db, sql: "SELECT designator FROM machine WHERE designator IS NOT NULL")
            }
            #expect(designators == ["Harvester"])

            let others = try await AgrigpsCommand.run(["others", "--json", "--state-dir", directory + "/tractor"])
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(others.stdout.joined().utf8)) as? [String: Any])
            let machines = try #require(object["machines"] as? [[String: Any]])
            #expect(machines.map { $0["name"] as? String } == ["Harvester"])
            #expect(object["own_name"] as? String == "Tractor")
            #expect(machines.first?["distance_m"] is Double, "both positions known, so the distance is")
            let status = try await AgrigpsCommand.run(["status", "--state-dir", directory + "/tractor"])
            #expect(status.code == 2, "the daemon has stopped")
            #expect(status.stdout.contains("Other machines: 1 active, 0 stale, 0 gone"))
            #expect(
                status.stdout.contains {
                    $0.hasPrefix("agrirouter: onboarded (local), endpoint \"Tractor\"; certificate valid until 20")
                })
            #expect(status.stdout.contains("Sharing: active"))
            #expect(
                await simulator.feed(endpoint: try endpointID(directory + "/tractor")).isEmpty, "everything confirmed")
            // Nothing the commands print, for people or for scripts, carries the key's secret.
            let secret = try String(contentsOfFile: directory + "/tractor/endpoint.secret", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let json = try await AgrigpsCommand.run(["status", "--json", "--state-dir", directory + "/tractor"])
            let heartbeat = try String(contentsOfFile: directory + "/tractor/heartbeat.json", encoding: .utf8)
            #expect(secret.count >= 16)
            for text in [
                status.stdout.joined(), json.stdout.joined(), others.stdout.joined(), again.joined(), heartbeat,
            ] {
                #expect(!text.contains(secret))
            }
        }
    }

    func endpointID(_ state: String) throws -> String {
        let data = try Data(contentsOf: URL(fileURLWithPath: state + "/endpoint.json"))
        let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        return ((object?["response"] as? [String: Any])?["deviceAlternateId"] as? String) ?? ""
    }
}
