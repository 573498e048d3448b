import AgrirouterLink
import AgrirouterWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

@testable import AgrirouterSim

extension Endpoint {
    /// Sends `zip` as TaskData the way the SDKs do: cut into raw chunks of 767,997 bytes, each base64
    /// in a message of its own with the chunk component, one request per chunk. Returns the messages.
    mutating func sendTaskData(
        _ zip: Data, mode: Agrirouter_Request_RequestEnvelope.Mode = .publish, recipients: [String] = [],
        fileName: String = "TASKDATA.zip"
    ) async throws -> [EncodedMessage] {
        var sent: [EncodedMessage] = []
        for part in ChunkJoiner.split(zip, contextID: UUID().uuidString.lowercased()) {
            let message = try encoder.encode(
                technicalMessageType: TechnicalMessageType.taskData, mode: mode, recipients: recipients,
                content: part.payload, chunk: part.position, fileName: fileName)
            try await post([message])
            sent.append(message)
        }
        return sent
    }
}

func taskDataCapabilities(_ direction: Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Direction)
    -> Agrirouter_Request_Payload_Endpoint_CapabilitySpecification
{
    var specification = capabilities()
    var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
    capability.technicalMessageType = TechnicalMessageType.taskData
    capability.direction = direction
    specification.capabilities.append(capability)
    return specification
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct SimulatorTaskDataTests {
    @Test func chunkedTaskDataIsRoutedToSubscribersAndJoinsBackWhole() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Farm software", "TAN0000002": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var farm = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:farm")
            var tractor = try await onboard(simulator, tan: "TAN0000002", id: "urn:agrigps:tractor")
            var zip = Data([0x50, 0x4B, 0x03, 0x04])
            var random = SplitMix64(seed: 39)
            while zip.count < 1_800_000 { zip.append(UInt8(truncatingIfNeeded: random.next())) }

            // Without the capability, TaskData is refused.
            let early = try await farm.sendTaskData(Data([0x50, 0x4B, 0x03, 0x04, 1, 2, 3]))
            #expect(
                try await farm.outbox().first { $0.applicationMessageID == early.first?.applicationMessageID }?
                    .messageCodes == ["VAL_000004"])

            _ = try await farm.send(TechnicalMessageType.capabilities, payload: taskDataCapabilities(.send))
            #expect(try await farm.outbox().first?.body == .ack)
            _ = try await tractor.send(TechnicalMessageType.capabilities, payload: taskDataCapabilities(.receive))
            #expect(try await tractor.outbox().first?.body == .ack)
            var subscription = gpsSubscription()
            var item = Agrirouter_Request_Payload_Endpoint_Subscription.MessageTypeSubscriptionItem()
            item.technicalMessageType = TechnicalMessageType.taskData
            subscription.technicalMessageTypes.append(item)
            _ = try await tractor.send(TechnicalMessageType.subscription, payload: subscription)
            #expect(try await tractor.outbox().first?.body == .ack)

            let sent = try await farm.sendTaskData(zip)
            #expect(sent.count == 3)
            let answers = try await farm.outbox()
            #expect(
                Set(answers.filter { $0.body == .ack }.compactMap(\.applicationMessageID))
                    == Set(sent.map(\.applicationMessageID)))

            let pushed = try await tractor.outbox().flatMap(\.feedMessages)
            #expect(pushed.count == 3)
            #expect(
                pushed.allSatisfy {
                    $0.technicalMessageType == TechnicalMessageType.taskData && $0.senderID == farm.deviceID
                })
            var joiner = ChunkJoiner()
            var whole: ChunkJoiner.Joined?
            for message in pushed.reversed() {
                let position = try #require(message.chunk)
                let raw = try #require(ChunkJoiner.rawContent(message.content))
                #expect(raw.count <= AgrirouterLimits.payloadBytes)
                if case .complete(let joined) = joiner.add(
                    .init(
                        messageID: message.messageID, senderID: message.senderID, position: position,
                        sentAt: message.sentAt, bytes: raw), now: Date())
                {
                    whole = joined
                }
            }
            #expect(whole?.bytes == zip)
            #expect(
                await simulator.feed(endpoint: tractor.deviceID).count == 3,
                "the feed holds the chunks until they are confirmed")
            #expect(
                await simulator.feed(endpoint: farm.deviceID).isEmpty, "the sender does not receive its own TaskData")
        }
    }

    @Test func aChunkAboveTheCapIsRefusedWith413() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Farm software"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var farm = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:farm")
            _ = try await farm.send(TechnicalMessageType.capabilities, payload: taskDataCapabilities(.send))
            _ = try await farm.outbox()
            let oversized = Data(repeating: 7, count: AgrirouterLimits.payloadBytes + 1)
            let message = try farm.encoder.encode(
                technicalMessageType: TechnicalMessageType.taskData,
                content: Data(oversized.base64EncodedString().utf8),
                chunk: ChunkPosition(contextID: "c", current: 0, total: 1, totalSize: Int64(oversized.count)))
            let body = try MeasuresBody(
                sensorAlternateID: farm.sensorID, capabilityAlternateID: farm.capabilityID, messages: [message]
            ).json()
            let response = try await farm.client.send(
                method: "POST", url: farm.measuresURL, body: body, headers: ["Content-Type: application/json"],
                credentials: farm.credentials, anyStatus: true)
            #expect(response.status == 413)
            let fits = Data(repeating: 7, count: AgrirouterLimits.payloadBytes)
            let fitting = try farm.encoder.encode(
                technicalMessageType: TechnicalMessageType.taskData, content: Data(fits.base64EncodedString().utf8),
                chunk: ChunkPosition(contextID: "c", current: 0, total: 2, totalSize: Int64(fits.count) + 1))
            try await farm.post([fitting])
            #expect(try await farm.outbox().first?.body == .ack, "a full chunk of 767,997 raw bytes fits")
        }
    }
}
