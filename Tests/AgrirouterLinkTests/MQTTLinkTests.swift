import AgrirouterSim
import AgrirouterWire
import Clocks
import Foundation
import TestSupport
import Testing

@testable import AgrirouterLink

/// The MQTT transport against the local agrirouter's real broker (Debian's mosquitto, TLS with
/// client certificates, a per-endpoint ACL).
@Suite(.serialized, .timeLimit(.minutes(3)))
struct MQTTLinkTests {
    struct Machine {
        var endpoint: OnboardingResponse
        var connection: AgrirouterConnection
        /// Holds `directory`, which the connection makes: removed with the machine.
        var scratch: TemporaryDirectory
        var directory: String
    }

    @Test("past the inbox's bytes the largest messages go, so the small answers among a flood of large pushes stay")
    func aFloodDropsTheLargestFirst() {
        var (inbox, bytes, dropped) = ([Data](), 0, 0)
        let answer = Data(repeating: 1, count: 300)
        MQTTLink.admit(answer, to: &inbox, bytes: &bytes, dropped: &dropped)
        for _ in 0..<200 {
            MQTTLink.admit(Data(repeating: 2, count: 65_000), to: &inbox, bytes: &bytes, dropped: &dropped)
        }
        MQTTLink.admit(answer, to: &inbox, bytes: &bytes, dropped: &dropped)
        for _ in 0..<200 {
            MQTTLink.admit(Data(repeating: 2, count: 65_000), to: &inbox, bytes: &bytes, dropped: &dropped)
        }
        #expect(inbox.filter { $0.count == 300 }.count == 2, "an answer was dropped for a push")
        #expect(bytes == inbox.reduce(0) { $0 + $1.count } && bytes <= MQTTLink.inboxByteLimit)
        #expect(dropped == 402 - inbox.count)
        // Past the count, the oldest go, whatever their size.
        for _ in 0..<MQTTLink.inboxLimit {
            MQTTLink.admit(Data(repeating: 3, count: 10), to: &inbox, bytes: &bytes, dropped: &dropped)
        }
        #expect(inbox.count == MQTTLink.inboxLimit && inbox.allSatisfy { $0.count == 10 })
    }

    /// A local agrirouter with its MQTT broker.
    static func simulator(tans: [String: String]) async throws -> AgrirouterSimulator {
        var configuration = SimConfiguration(tans: tans)
        configuration.mqtt = true
        return try await AgrirouterSimulator.start(configuration)
    }

    static func onboard(_ simulator: AgrirouterSimulator, tan: String, id: String) async throws -> Machine {
        let endpoint = try await simulator.onboard(tan: tan, externalID: id, transport: .mqtt)
        let scratch = TemporaryDirectory("mqtt-link")
        let directory = scratch.file("link")
        let stored = StoredEndpoint(
            environment: "local", response: endpoint, settings: nil, trustedCAPEM: simulator.caCertificatePEM)
        let connection = try AgrirouterConnection.open(stored, directory: directory, minimumSpacing: 0.02)
        return Machine(endpoint: endpoint, connection: connection, scratch: scratch, directory: directory)
    }

    static func waitUntilConnected(_ link: any Link, seconds: Double = 15) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if link.state == .connected { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return false
    }

    static func answers(
        _ connection: AgrirouterConnection, for recipient: AgrirouterConnection.Recipient,
        count: Int, within seconds: Double = 10
    ) async throws -> [DecodedResponse] {
        var collected: [DecodedResponse] = []
        let deadline = Date().addingTimeInterval(seconds)
        while collected.count < count && Date() < deadline {
            await connection.waitForAnswers(atMost: 0.5)
            try await connection.poll()
            collected += await connection.answers(for: recipient)
        }
        return collected
    }

    @Test func onboardingForMQTTGivesTheBrokerAndTheEndpointsTopics() async throws {
        let simulator = try await Self.simulator(tans: ["TAN0000001": "Tractor"])
        try await tearingDown({ await simulator.shutdown() }) {
            let machine = try await Self.onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:mqtt-1")
            defer { machine.connection.link.close() }
            let criteria = machine.endpoint.connectionCriteria
            #expect(criteria.gatewayId == "2")
            #expect(criteria.host == "127.0.0.1")
            #expect(criteria.port == simulator.brokerPort)
            #expect(criteria.clientId == machine.endpoint.deviceAlternateId)
            #expect(criteria.measures == "measures/\(machine.endpoint.deviceAlternateId)")
            #expect(machine.connection.link.transport == .mqtt)
            // The key stays encrypted in the file libmosquitto reads; its secret goes by callback only.
            let pem = try String(contentsOfFile: machine.directory + "/mqtt-credential.pem", encoding: .utf8)
            #expect(pem.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
            #expect(!pem.contains("-----BEGIN PRIVATE KEY-----"))
            #expect(!pem.contains(machine.endpoint.authentication.secret))
            var info = stat()
            #expect(stat(machine.directory + "/mqtt-credential.pem", &info) == 0 && info.st_mode & 0o077 == 0)
            #expect(
                await Self.waitUntilConnected(machine.connection.link),
                "connected with the encrypted key and the secret through the callback")
        }
    }

    @Test func aPublishIsAnsweredOnTheCommandsTopicAndRoutedByMessageID() async throws {
        let simulator = try await Self.simulator(tans: ["TAN0000001": "Tractor"])
        try await tearingDown({ await simulator.shutdown() }) {
            let machine = try await Self.onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:mqtt-2")
            defer { machine.connection.link.close() }
            #expect(await Self.waitUntilConnected(machine.connection.link))
            let ping = try await machine.connection.send(TechnicalMessageType.ping, payload: nil, for: .check)
            let setupPing = try await machine.connection.send(TechnicalMessageType.ping, payload: nil, for: .setup)
            let started = Date()
            let forCheck = try await Self.answers(machine.connection, for: .check, count: 1)
            #expect(forCheck.map(\.applicationMessageID) == [ping.applicationMessageID])
            #expect(Date().timeIntervalSince(started) < 5, "answered as it came, not at a poll's turn")
            let forSetup = try await Self.answers(machine.connection, for: .setup, count: 1)
            #expect(forSetup.map(\.applicationMessageID) == [setupPing.applicationMessageID])
            // An MQTT answer costs no request: only the two publishes were counted.
            #expect(await machine.connection.requestCount == 2)
            #expect(await simulator.sentMessages(endpoint: machine.endpoint.deviceAlternateId).count == 2)
        }
    }

    @Test func theACLRefusesAPublishToAnotherEndpointsTopic() async throws {
        let simulator = try await Self.simulator(tans: ["TAN0000001": "Tractor", "TAN0000002": "Harvester"])
        try await tearingDown({ await simulator.shutdown() }) {
            let tractor = try await Self.onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:mqtt-tractor")
            defer { tractor.connection.link.close() }
            let harvester = try await Self.onboard(simulator, tan: "TAN0000002", id: "urn:agrigps:mqtt-harvester")
            defer { harvester.connection.link.close() }
            // The tractor's own certificate, but the harvester's measures topic.
            var forged = tractor.endpoint
            forged.connectionCriteria.measures = harvester.endpoint.connectionCriteria.measures
            forged.connectionCriteria.clientId = tractor.endpoint.deviceAlternateId + "-forged"
            let stored = StoredEndpoint(
                environment: "local", response: forged, settings: nil, trustedCAPEM: simulator.caCertificatePEM)
            let intruder = try AgrirouterConnection.open(
                stored, directory: tractor.directory + "-forged", minimumSpacing: 0.02)
            defer { intruder.link.close() }
            #expect(await Self.waitUntilConnected(intruder.link))
            #expect(await Self.waitUntilConnected(harvester.connection.link))
            let forgedPing = try await intruder.send(TechnicalMessageType.ping, payload: nil, for: .check)
            // The harvester's own publish goes through: the broker is delivering, the refusal is the ACL's.
            let ownPing = try await harvester.connection.send(TechnicalMessageType.ping, payload: nil, for: .check)
            let answered = try await Self.answers(harvester.connection, for: .check, count: 1)
            #expect(answered.map(\.applicationMessageID) == [ownPing.applicationMessageID])
            let received = await simulator.sentMessages(endpoint: harvester.endpoint.deviceAlternateId).map(
                \.envelope.applicationMessageID)
            #expect(received == [ownPing.applicationMessageID])
            #expect(!received.contains(forgedPing.applicationMessageID))
            let log = try String(contentsOfFile: try #require(simulator.brokerLogPath), encoding: .utf8)
            #expect(log.contains("Denied PUBLISH"), "the broker says why: \(log.suffix(600))")
        }
    }

    @Test func answersComeBackAfterTheBrokerRestarts() async throws {
        let simulator = try await Self.simulator(tans: ["TAN0000001": "Tractor"])
        try await tearingDown({ await simulator.shutdown() }) {
            let machine = try await Self.onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:mqtt-restart")
            defer { machine.connection.link.close() }
            #expect(await Self.waitUntilConnected(machine.connection.link))
            _ = try await machine.connection.fetchOutbox()
            #expect(await machine.connection.looks == 1)
            let restart = Task { try await simulator.restartBroker(after: 3) }
            let deadline = uptime() + 10
            while machine.connection.link.state == .connected, uptime() < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
            // Disconnected, nothing can arrive: a collection then is no look that an answer could have come with.
            _ = try await machine.connection.fetchOutbox()
            #expect(await machine.connection.looks == 1)
            try await restart.value
            // Reconnected (2 s after the loss, doubling) and subscribed again: a clean session forgets it.
            #expect(await Self.waitUntilConnected(machine.connection.link, seconds: 30))
            let ping = try await machine.connection.send(TechnicalMessageType.ping, payload: nil, for: .check)
            let answered = try await Self.answers(machine.connection, for: .check, count: 1)
            #expect(answered.map(\.applicationMessageID) == [ping.applicationMessageID])
        }
    }

    @Test func anotherClientWithTheSameIDIsDetectedAndNotFoughtInALoop() async throws {
        let simulator = try await Self.simulator(tans: ["TAN0000001": "Tractor"])
        try await tearingDown({ await simulator.shutdown() }) {
            let machine = try await Self.onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:mqtt-takeover")
            defer { machine.connection.link.close() }
            #expect(await Self.waitUntilConnected(machine.connection.link))
            await simulator.takeOverClientID(try #require(machine.endpoint.connectionCriteria.clientId), for: 40)
            guard case .takenOver(let seconds) = machine.connection.link.state else {
                Issue.record("expected a take-over, the link says \(machine.connection.link.state)")
                return
            }
            #expect(seconds > 200, "the next attempt waits minutes, not seconds")
            let log = try String(contentsOfFile: try #require(simulator.brokerLogPath), encoding: .utf8)
            let kicks = log.components(separatedBy: "already connected, closing old connection").count - 1
            #expect(kicks <= 8, "a few attempts, then it stops: \(kicks) take-overs in 40 s")
        }
    }
}
