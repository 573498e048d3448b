import AgrirouterWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

@testable import AgrirouterSim

/// The local agrirouter's EFDI rules, checked with messages shaped like a real terminal's: a
/// description with several elements, and TimeLogs with dozens of values per `Time`.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SimulatorEFDITests {
    static let efdiTypes = [TechnicalMessageType.deviceDescription, TechnicalMessageType.timeLog]

    func efdiCapabilities(_ types: [String] = efdiTypes) -> Agrirouter_Request_Payload_Endpoint_CapabilitySpecification
    {
        var specification = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
        specification.capabilities = types.map { type in
            var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
            capability.technicalMessageType = type
            capability.direction = .sendReceive
            return capability
        }
        specification.appCertificationID = "app"
        specification.appCertificationVersionID = "version"
        specification.enablePushNotifications = .disabled
        return specification
    }

    func efdiSubscription() -> Agrirouter_Request_Payload_Endpoint_Subscription {
        var subscription = Agrirouter_Request_Payload_Endpoint_Subscription()
        subscription.technicalMessageTypes = Self.efdiTypes.map { type in
            var item = Agrirouter_Request_Payload_Endpoint_Subscription.MessageTypeSubscriptionItem()
            item.technicalMessageType = type
            return item
        }
        return subscription
    }

    /// A combine's description: the device, and a boom with sections under it, with the process data
    /// a terminal logs.
    static func terminalDescription(ddis: [UInt32] = [397, 141, 1, 2, 90, 183, 184, 271, 272, 308])
        -> Efdi_ISO11783_TaskData
    {
        var device = Efdi_Device()
        device.deviceID.number = -1
        device.deviceID.uri = ["DVC-1"]
        device.deviceDesignator = "Combine 7"
        device.clientName = Data([0xA0, 0x00, 0x81, 0x00, 0x0F, 0xE0, 0x35, 0x12])
        device.deviceStructureLabel = Data(repeating: 0x31, count: 7)
        device.deviceLocalizationLabel = Data([0xFF, 0, 0, 0, 0x65, 0x6E, 0x50])
        device.deviceElement = (0..<9).map { index in
            var element = Efdi_DeviceElement()
            element.deviceElementID.number = -Int64(index + 1)
            element.deviceElementID.uri = ["DET-\(index + 1)"]
            element.deviceElementObjectID = UInt32(index + 1)
            element.deviceElementType = index == 0 ? .cDevice : .cSection
            element.deviceElementNumber = UInt32(index)
            element.parentObjectID = index == 0 ? 0 : 1
            return element
        }
        device.deviceProcessData = ddis.enumerated().map { offset, ddi in
            var data = Efdi_DeviceProcessData()
            data.deviceProcessDataObjectID = UInt32(100 + offset)
            data.deviceProcessDataDdi = ddi
            data.deviceProcessDataTriggerMethods = 1
            return data
        }
        var taskData = Efdi_ISO11783_TaskData()
        taskData.device = [device]
        return taskData
    }

    /// `count` Times a second apart, each with a position and `values` DataLogValues spread over
    /// the description's elements, as a terminal logs them.
    static func terminalTimeLog(count: Int, values: Int, ddi: UInt32? = nil) -> Efdi_TimeLog {
        var log = Efdi_TimeLog()
        log.timeLogType = .cBinaryTimelog
        let start = Date(timeIntervalSince1970: 1_790_000_000)
        log.time = (0..<count).map { index in
            var time = Efdi_Time()
            time.start = Google_Protobuf_Timestamp(date: start.addingTimeInterval(Double(index)))
            time.type = .dEffective
            time.positionStart.positionNorth = 52.1 + Double(index) * 1e-5
            time.positionStart.positionEast = 8.6
            time.positionStart.positionStatus = .dRtkFinteger
            time.dataLogValue = (0..<values).map { value in
                var entry = Efdi_DataLogValue()
                entry.processDataDdi = ddi ?? [397, 141, 1, 2, 90, 183, 184, 271, 272, 308][value % 10]
                entry.processDataValue = Int64(value * 1000 + index)
                entry.deviceElementIDRef.number = -Int64(value % 9 + 1)
                return entry
            }
            return time
        }
        return log
    }

    struct Pair {
        var terminal: Endpoint
        var listener: Endpoint
    }

    /// A terminal that sends EFDI, and a listener subscribed to it.
    func pair(_ simulator: AgrirouterSimulator) async throws -> Pair {
        var terminal = try await onboard(simulator, tan: "TAN0000001", id: "urn:terminal")
        var listener = try await onboard(simulator, tan: "TAN0000002", id: "urn:listener")
        _ = try await terminal.send(TechnicalMessageType.capabilities, payload: efdiCapabilities())
        _ = try await listener.send(TechnicalMessageType.capabilities, payload: efdiCapabilities())
        _ = try await listener.send(TechnicalMessageType.subscription, payload: efdiSubscription())
        _ = try await terminal.outbox()
        _ = try await listener.outbox()
        return Pair(terminal: terminal, listener: listener)
    }

    func codes(_ endpoint: inout Endpoint, _ type: String, _ payload: any SwiftProtobuf.Message, teamSet: String)
        async throws -> [String]
    {
        let message = try endpoint.encoder.encode(
            technicalMessageType: type, mode: .publish, payload: payload, teamSetContextID: teamSet)
        try await endpoint.post([message])
        let answers = try await endpoint.outbox().filter { $0.applicationMessageID == message.applicationMessageID }
        guard let answer = answers.first else { return ["no answer"] }
        if case .ack = answer.body { return [] }
        return answer.messageCodes
    }

    @Test func aTerminalsDescriptionAndTimeLogsAreCheckedAndRoutedWithTheirTeamSet() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Combine", "TAN0000002": "Office"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var pair = try await pair(simulator)
            let teamSet = "3f0a4c7e-6f0b-5d43-9d2e-8a1c2b3d4e5f"
            let log = Self.terminalTimeLog(count: 60, values: 40)

            #expect(
                try await codes(&pair.terminal, TechnicalMessageType.timeLog, log, teamSet: teamSet) == ["VAL_000020"],
                "a TimeLog before its team set's description")
            #expect(
                try await codes(
                    &pair.terminal, TechnicalMessageType.deviceDescription, Self.terminalDescription(), teamSet: "")
                    == ["VAL_000016"])
            #expect(
                try await codes(
                    &pair.terminal, TechnicalMessageType.deviceDescription, Efdi_ISO11783_TaskData(), teamSet: teamSet)
                    == ["VAL_000015"])
            #expect(
                try await codes(
                    &pair.terminal, TechnicalMessageType.deviceDescription, Self.terminalDescription(ddis: [397, 0]),
                    teamSet: teamSet)
                    == ["VAL_000027"])
            #expect(
                try await codes(
                    &pair.terminal, TechnicalMessageType.deviceDescription, Self.terminalDescription(), teamSet: teamSet
                ) == [])
            #expect(try await codes(&pair.terminal, TechnicalMessageType.timeLog, log, teamSet: teamSet) == [])
            #expect(
                try await codes(
                    &pair.terminal, TechnicalMessageType.timeLog, Self.terminalTimeLog(count: 2, values: 3, ddi: 65535),
                    teamSet: teamSet)
                    == ["VAL_000027"])
            #expect(
                try await codes(&pair.terminal, TechnicalMessageType.timeLog, log, teamSet: "another-team-set") == [
                    "VAL_000020"
                ])

            // The listener got exactly what was taken, byte for byte, under the sender's team set.
            let feed = await simulator.feed(endpoint: pair.listener.deviceID)
            #expect(feed.map(\.header.technicalMessageType) == Self.efdiTypes)
            #expect(
                feed.allSatisfy {
                    $0.header.teamSetContextID == teamSet && $0.header.senderID == pair.terminal.deviceID
                })
            let received = try Efdi_TimeLog(serializedBytes: try #require(feed.last).content.value)
            #expect(
                received == log && received.time.count == 60 && received.time.allSatisfy { $0.dataLogValue.count == 40 }
            )
            let description = try Efdi_ISO11783_TaskData(serializedBytes: try #require(feed.first).content.value)
            #expect(
                description.device.first?.deviceDesignator == "Combine 7"
                    && description.device.first?.deviceElement.count == 9)
        }
    }

    @Test func efdiIsNeverChunkedNorBase64NorSentWithoutTheCapability() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Combine", "TAN0000002": "Office"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var pair = try await pair(simulator)
            let teamSet = "team-1"
            #expect(
                try await codes(
                    &pair.terminal, TechnicalMessageType.deviceDescription, Self.terminalDescription(), teamSet: teamSet
                ) == [])

            // Chunked: the envelope says it is part 1 of 2.
            let log = Self.terminalTimeLog(count: 5, values: 10)
            var request = try RequestDecoder.decode(
                base64: try pair.terminal.encoder.encode(
                    technicalMessageType: TechnicalMessageType.timeLog,
                    mode: .publish, payload: log, teamSetContextID: teamSet
                ).base64)
            request.envelope.chunkInfo.current = 1
            request.envelope.chunkInfo.total = 2
            request.envelope.chunkInfo.contextID = "chunks"
            #expect(try await post(&pair.terminal, request, payload: request.payload) == ["VAL_000019"])
            // The payload as base64 text instead of raw protobuf.
            request.envelope.clearChunkInfo()
            #expect(
                try await post(&pair.terminal, request, payload: Data(request.payload.base64EncodedString().utf8)) == [
                    "VAL_000300"
                ])

            // An endpoint whose capabilities lack time_log.
            var office = pair.listener
            _ = try await office.send(
                TechnicalMessageType.capabilities, payload: efdiCapabilities([TechnicalMessageType.deviceDescription]))
            _ = try await office.outbox()
            #expect(try await codes(&office, TechnicalMessageType.timeLog, log, teamSet: teamSet) == ["VAL_000004"])
            #expect(
                await simulator.feed(endpoint: pair.listener.deviceID).map(\.header.technicalMessageType) == [
                    TechnicalMessageType.deviceDescription
                ],
                "nothing refused was routed")
        }
    }

    @Test func acceptedEFDIIsRecordedAndKeptAsSentAndRefusedEFDIIsNot() async throws {
        let scratch = TemporaryDirectory("received-efdi")
        let work = scratch.path
        var configuration = SimConfiguration(tans: ["TAN0000001": "Combine", "TAN0000002": "Office"])
        let log = try #require(ReceivedLog(path: work + "/received.jsonl", payloadDirectory: work + "/payloads"))
        configuration.onAcceptedEFDI = log.recordEFDI
        let simulator = try await AgrirouterSimulator.start(configuration)
        try await tearingDown({ await simulator.shutdown() }) {
            var pair = try await pair(simulator)
            let timeLog = Self.terminalTimeLog(count: 3, values: 40)
            #expect(
                try await codes(&pair.terminal, TechnicalMessageType.timeLog, timeLog, teamSet: "t") == ["VAL_000020"])
            #expect(
                try await codes(
                    &pair.terminal, TechnicalMessageType.deviceDescription, Self.terminalDescription(), teamSet: "t")
                    == [])
            #expect(try await codes(&pair.terminal, TechnicalMessageType.timeLog, timeLog, teamSet: "t") == [])

            let lines = try String(contentsOfFile: work + "/received.jsonl", encoding: .utf8).split(separator: "\n")
            let records = try lines.map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
            }
            #expect(records.map { $0["format"] as? String } == ["device_description", "time_log"])
            #expect(records.first?["designator"] as? String == "Combine 7")
            let entries = try #require(records.last?["entries"] as? [[String: Any]])
            #expect(entries.map { $0["status"] as? String } == ["dRtkFinteger", "dRtkFinteger", "dRtkFinteger"])
            #expect(entries.first?["time_ms"] as? Int == 1_790_000_000_000 && entries.first?["lat"] as? Double == 52.1)
            // Each DDI's first value in its Time (141 comes second of every ten: 1,000 plus the index).
            let values = entries.map { $0["values"] as? [String: Int] }
            #expect(values.map { $0?["141"] } == [1000, 1001, 1002] && values.allSatisfy { $0?.count == 10 })
            let kept = try FileManager.default.contentsOfDirectory(atPath: work + "/payloads").sorted()
            #expect(kept == ["0001-device_description.pb", "0002-time_log.pb"])
            let keptLog = try Data(contentsOf: URL(fileURLWithPath: work + "/payloads/0002-time_log.pb"))
            #expect(keptLog == (try timeLog.serializedBytes() as Data), "kept as sent, for protoc --decode")
        }
    }

    /// Posts `request` again under a new message id, with `payload` as its details.
    func post(_ endpoint: inout Endpoint, _ request: DecodedRequest, payload: Data) async throws -> [String] {
        var envelope = request.envelope
        envelope.applicationMessageID = UUID().uuidString.lowercased()
        var details = Google_Protobuf_Any()
        details.typeURL = request.payloadTypeURL
        details.value = payload
        var wrapper = Agrirouter_Request_RequestPayloadWrapper()
        wrapper.details = details
        let frames = DelimitedFrames.join([try envelope.serializedBytes(), try wrapper.serializedBytes()])
        try await endpoint.post([
            EncodedMessage(
                applicationMessageID: envelope.applicationMessageID, sequenceNumber: envelope.applicationMessageSeqNo,
                technicalMessageType: envelope.technicalMessageType, base64: frames.base64EncodedString(),
                payloadSize: payload.count)
        ])
        return try await endpoint.outbox().filter { $0.applicationMessageID == envelope.applicationMessageID }.flatMap(
            \.messageCodes)
    }
}
