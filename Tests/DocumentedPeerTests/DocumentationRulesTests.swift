import AgrirouterWire
import Foundation
import SwiftProtobuf
import Testing

/// The rules the documented peer holds agrigps to must be able to fail: a message that keeps them
/// passes, and each one broken in a single field is caught.
@Suite
struct DocumentationRulesTests {
    static func rules() -> DocumentationRules {
        DocumentationRules(
            endpointID: "peer", since: Date().addingTimeInterval(-5), subscribed: DocumentedPeerTests.subscribed)
    }

    static func gpsMessage(
        _ change: (inout FeedMessage, inout Agrirouter_Technicalmessagetype_GPSList.GPSEntry) -> Void = { _, _ in }
    ) -> FeedMessage {
        var entry = Agrirouter_Technicalmessagetype_GPSList.GPSEntry()
        entry.positionNorth = 52.1
        entry.positionEast = 8.6
        entry.positionStatus = .dGnss
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date().addingTimeInterval(-2))
        var message = FeedMessage()
        message.header.receiverID = "peer"
        message.header.senderID = "tractor"
        message.header.technicalMessageType = TechnicalTypes.gpsInfo
        message.header.messageID = UUID().uuidString
        message.header.sequenceNumber = 1
        message.header.sentTimestamp = Google_Protobuf_Timestamp(date: Date().addingTimeInterval(-1))
        message.header.createdAt = Google_Protobuf_Timestamp(date: Date())
        change(&message, &entry)
        var list = Agrirouter_Technicalmessagetype_GPSList()
        list.gpsEntries = [entry]
        message.content.value = try! list.serializedData()
        if message.header.payloadSize == 0 { message.header.payloadSize = Int64(message.content.value.count) }
        return message
    }

    @Test(
        "a feed message within the rules passes, and one field broken is caught",
        arguments: [
            "none", "receiver", "unsubscribed", "payload size", "sequence", "sent after created", "chunked", "latitude",
            "reserved status", "future fix",
        ])
    func feedMessage(broken field: String) {
        var rules = Self.rules()
        rules.check(
            Self.gpsMessage { message, entry in
                switch field {
                case "receiver": message.header.receiverID = "someone else"
                case "unsubscribed": message.header.technicalMessageType = "img:png"
                case "payload size": message.header.payloadSize = 3
                case "sequence": message.header.sequenceNumber = 0
                case "sent after created":
                    message.header.sentTimestamp = Google_Protobuf_Timestamp(date: Date().addingTimeInterval(30))
                case "chunked": message.header.chunkContext.total = 2
                case "latitude": entry.positionNorth = 91
                case "reserved status": entry.positionStatus = .UNRECOGNIZED(10)
                case "future fix":
                    entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date().addingTimeInterval(60))
                default: break
                }
            })
        #expect(rules.violations.isEmpty == (field == "none"), "\(field): \(rules.violations)")
    }

    @Test(
        "envelopes: a push answered 0, an ACK with a payload, an answer to nothing sent, an undefined type, a placeholder without its argument"
    )
    func envelopes() throws {
        var envelope = Agrirouter_Response_ResponseEnvelope()
        envelope.messageID = "m"
        envelope.timestamp = Google_Protobuf_Timestamp(date: Date())
        envelope.type = .pushNotification
        envelope.responseCode = 200
        var push = Google_Protobuf_Any()
        push.typeURL = DocumentationRules.prefix + Agrirouter_Feed_Push_Notification_PushNotification.protoMessageName

        var rules = Self.rules()
        rules.check(OutboxItem(envelope: envelope, details: push), sentIDs: [])
        #expect(rules.violations.isEmpty, "\(rules.violations)")

        var zero = envelope
        zero.responseCode = 0
        var ack = envelope
        (ack.type, ack.responseCode, ack.applicationMessageID) = (.ack, 201, "sent")
        var undefined = ack
        undefined.type = .UNRECOGNIZED(4)
        var unknown = ack
        unknown.applicationMessageID = "never sent"
        for (item, rule) in [
            (OutboxItem(envelope: zero, details: push), "not 200"),
            (OutboxItem(envelope: ack, details: push), "an ACK with a payload"),
            (OutboxItem(envelope: undefined, details: .init()), "undefined"),
            (OutboxItem(envelope: unknown, details: .init()), "never sent"),
        ] {
            var rules = Self.rules()
            rules.check(item, sentIDs: ["sent"])
            #expect(rules.violations.contains { $0.contains(rule) }, "\(rule): \(rules.violations)")
        }

        var message = Agrirouter_Commons_Message()
        (message.messageCode, message.message) = ("VAL_000206", "Message %messageId% confirmed")
        var messages = Agrirouter_Commons_Messages()
        messages.messages = [message]
        rules.check(messages)
        #expect(rules.violations.contains { $0.contains("%messageId%") })
    }

    @Test("a TimeLog whose team set has no description, or whose values name an element the description lacks")
    func teamSets() throws {
        var time = Efdi_Time()
        time.start = Google_Protobuf_Timestamp(date: Date())
        time.type = .dEffective
        time.positionStart.positionNorth = 52
        time.positionStart.positionStatus = .dGnss
        var value = Efdi_DataLogValue()
        value.processDataDdi = 397
        value.deviceElementIDRef.number = -2
        time.dataLogValue = [value]
        var log = Efdi_TimeLog()
        log.time = [time]
        var logMessage = Self.gpsMessage { message, _ in
            message.header.technicalMessageType = TechnicalTypes.timeLog
            message.header.teamSetContextID = "set"
        }
        logMessage.content.value = try log.serializedData()
        logMessage.header.payloadSize = Int64(logMessage.content.value.count)

        var alone = Self.rules()
        alone.check(logMessage)
        alone.checkTeamSets()
        #expect(alone.violations.contains { $0.contains("without its description") }, "\(alone.violations)")

        var element = Efdi_DeviceElement()
        element.deviceElementID.number = -1
        (element.deviceElementObjectID, element.deviceElementType) = (1, .cDevice)
        var device = Efdi_Device()
        device.clientName = Data(repeating: 0xA0, count: 8)
        device.deviceStructureLabel = Data(repeating: 1, count: 7)
        device.deviceLocalizationLabel = Data([0xFF, 0, 0, 0, 0x40, 0x65, 0x64])
        device.deviceElement = [element]
        var description = Efdi_ISO11783_TaskData()
        description.device = [device]
        var descriptionMessage = Self.gpsMessage { message, _ in
            message.header.technicalMessageType = TechnicalTypes.deviceDescription
            message.header.teamSetContextID = "set"
        }
        descriptionMessage.content.value = try description.serializedData()
        descriptionMessage.header.payloadSize = Int64(descriptionMessage.content.value.count)
        var both = Self.rules()
        both.check(descriptionMessage)
        both.check(logMessage)
        #expect(both.violations.isEmpty, "\(both.violations)")
        both.checkTeamSets()
        #expect(both.violations.contains { $0.contains("element -2") }, "\(both.violations)")
    }
}
