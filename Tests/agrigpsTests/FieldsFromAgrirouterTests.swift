import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Foundation
import Testing
import TestSupport

/// Farm software at the local agrirouter, sending TaskData as the SDKs do (GatewayTests has the same
/// sender for the feed reader's own tests).
private struct FarmSender {
    let endpoint: OnboardingResponse
    let credentials: ClientCredentials
    let client: HTTPSClient
    var encoder = MessageEncoder()

    static func onboard(_ simulator: AgrirouterSimulator, tan: String) async throws -> FarmSender {
        let environment = AgrirouterEnvironment.local(onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM)
        let onboarding = OnboardingClient(environment: environment, settings: OnboardingSettings(applicationID: "app", certificationVersionID: "v"))
        let endpoint = try await onboarding.onboard(tan: tan, externalID: "urn:farm-software:\(tan)")
        var farm = FarmSender(endpoint: endpoint,
                              credentials: try #require(ClientCredentials(agrirouterPEM: endpoint.authentication.certificate, secret: endpoint.authentication.secret)),
                              client: HTTPSClient(trustedCAPEM: simulator.caCertificatePEM, connectTimeout: 5, totalTimeout: 30))
        var specification = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
        var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
        capability.technicalMessageType = TechnicalMessageType.taskData
        capability.direction = .send
        specification.capabilities = [capability]
        try await farm.post(try farm.encoder.encode(technicalMessageType: TechnicalMessageType.capabilities, payload: specification))
        return farm
    }

    /// Publishes `zip` in chunks of 767,997 raw bytes, one request each; returns how many.
    mutating func sendTaskData(_ zip: Data) async throws -> Int {
        let parts = ChunkJoiner.split(zip, contextID: UUID().uuidString.lowercased())
        for part in parts {
            try await post(try encoder.encode(technicalMessageType: TechnicalMessageType.taskData, content: part.payload, chunk: part.position))
        }
        return parts.count
    }

    func post(_ message: EncodedMessage) async throws {
        let body = try MeasuresBody(sensorAlternateID: endpoint.sensorAlternateId, capabilityAlternateID: endpoint.capabilityAlternateId,
                                    messages: [message]).json()
        let response = try await client.send(method: "POST", url: endpoint.connectionCriteria.measures, body: body,
                                             headers: ["Content-Type: application/json"], credentials: credentials)
        #expect(response.status == 200)
    }
}

@Suite(.serialized, .timeLimit(.minutes(5)))
struct FieldsFromAgrirouterTests {
    @Test("agrigps run stores the fields farm software sent through agrirouter, and the sender's next TaskData replaces them")
    func fieldsArriveThroughAgrirouter() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TANF000001": "Tractor", "TANF000002": "Farm software"]))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("agrigps-fields-\(UUID().uuidString)").path
        try await tearingDown({ await simulator.shutdown(); try? FileManager.default.removeItem(atPath: directory) }) {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try simulator.caCertificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
            let state = directory + "/tractor"
            let onboarded = try await AgrigpsCommand.run(["onboard", "--tan", "TANF000001", "--env", "local", "--onboarding-url", simulator.onboardingURL,
                                                          "--ca-file", directory + "/ca.pem", "--state-dir", state,
                                                          "--application-id", "app", "--certification-version-id", "v"])
            try #require(onboarded.code == 0, "\(onboarded.stderr)")
            func run() async throws {
                let run = try await AgrigpsCommand.run(["run", "--replay", Fixtures.log("ublox-lea-4h"), "--state-dir", state, "--spacing", "0.05"], timeout: 120)
                #expect(run.code == 0, "\(run.stderr.suffix(5))")
            }
            func fields() async throws -> [[String: Any]] {
                let listing = try await AgrigpsCommand.run(["fields", "--json", "--state-dir", state])
                #expect(listing.code == 0, "\(listing.stderr)")
                let document = try JSONSerialization.jsonObject(with: Data(listing.stdout.joined(separator: "\n").utf8)) as? [String: Any]
                return document?["fields"] as? [[String: Any]] ?? []
            }
            try await run()  // the set-up: TaskData in the capabilities and the subscription
            let tractorID = try #require(await simulator.endpointIDs(named: "Tractor").first)
            #expect(await simulator.subscriptions(endpoint: tractorID).contains(TechnicalMessageType.taskData))

            var farm = try await FarmSender.onboard(simulator, tan: "TANF000002")
            #expect(try await farm.sendTaskData(TaskDataZip.make(fields: ["North", "South", "Brook"], padding: 1_700_000, seed: 1)) == 3)
            try await run()
            let first = try await fields()
            #expect(first.compactMap { $0["name"] as? String } == ["Brook", "North", "South"])
            #expect(first.compactMap { $0["source"] as? String } == Array(repeating: "agrirouter: \(farm.endpoint.deviceAlternateId)", count: 3))

            #expect(try await farm.sendTaskData(TaskDataZip.make(fields: ["North", "Meadow"], padding: 900_000, seed: 2)) == 2)
            try await run()
            #expect(try await fields().compactMap { $0["name"] as? String } == ["Meadow", "North"])
            #expect(await simulator.feed(endpoint: tractorID).isEmpty, "every chunk confirmed")
        }
    }
}
