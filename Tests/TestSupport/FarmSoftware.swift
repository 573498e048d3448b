import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Foundation

/// Farm software at the local agrirouter: an endpoint that sends TaskData as the SDKs send it, in
/// chunks of 767,997 raw bytes, one request each.
public struct FarmSoftware {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public let endpoint: OnboardingResponse
    let credentials: ClientCredentials
    let client: HTTPSClient
    public var encoder = MessageEncoder()

    public var id: String { endpoint.deviceAlternateId }

    /// Onboards with `tan` and declares that it sends TaskData; returns once agrirouter took that.
    public static func onboard(_ simulator: AgrirouterSimulator, tan: String) async throws -> FarmSoftware {
        let endpoint = try await simulator.onboard(tan: tan, externalID: "urn:farm-software:\(tan)")
        guard
            let credentials = ClientCredentials(
                agrirouterPEM: endpoint.authentication.certificate, secret: endpoint.authentication.secret)
        else {
            throw Failure(description: "the local agrirouter's certificate for \(tan) could not be read")
        }
        var farm = FarmSoftware(
            endpoint: endpoint, credentials: credentials,
            client: HTTPSClient(trustedCAPEM: simulator.caCertificatePEM, connectTimeout: 5, totalTimeout: 30))
        var specification = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
        var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
        capability.technicalMessageType = TechnicalMessageType.taskData
        capability.direction = .send
        specification.capabilities = [capability]
        specification.appCertificationID = "app"
        specification.appCertificationVersionID = "v"
        let sent = try farm.encoder.encode(
            technicalMessageType: TechnicalMessageType.capabilities, payload: specification)
        try await farm.post([sent])
        guard
            try await farm.outbox().first(where: { $0.applicationMessageID == sent.applicationMessageID })?.body == .ack
        else {
            throw Failure(description: "the local agrirouter did not acknowledge the farm software's capabilities")
        }
        return farm
    }

    /// Publishes `zip` cut into chunks of 767,997 raw bytes, each a request of its own; returns how many.
    public mutating func sendTaskData(_ zip: Data) async throws -> Int {
        let parts = ChunkJoiner.split(zip, contextID: UUID().uuidString.lowercased())
        for part in parts {
            try await post([
                try encoder.encode(
                    technicalMessageType: TechnicalMessageType.taskData, content: part.payload,
                    chunk: part.position, fileName: "TASKDATA.zip")
            ])
        }
        return parts.count
    }

    public func post(_ messages: [EncodedMessage]) async throws {
        let body = try MeasuresBody(
            sensorAlternateID: endpoint.sensorAlternateId, capabilityAlternateID: endpoint.capabilityAlternateId,
            messages: messages
        ).json()
        let response = try await client.send(
            method: "POST", url: endpoint.connectionCriteria.measures, body: body,
            headers: ["Content-Type: application/json"], credentials: credentials)
        guard (200..<300).contains(response.status) else {
            throw Failure(description: "the local agrirouter answered \(response.status)")
        }
    }

    public func outbox() async throws -> [DecodedResponse] {
        let response = try await client.send(
            method: "GET", url: endpoint.connectionCriteria.commands, credentials: credentials)
        return try OutboxItem.list(from: response.body).map { try OutboxDecoder.decode(base64: $0.command.message) }
    }
}
