import AgrirouterWire  // the messages generated from DKE's .proto files; none of agrigps's framing or mapping
import Foundation
import SwiftProtobuf

typealias FeedMessage = Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage
typealias BodyType = Agrirouter_Response_ResponseEnvelope.ResponseBodyType

/// One item of the outbox: the response envelope and what its payload wrapper holds.
struct OutboxItem {
    var envelope: Agrirouter_Response_ResponseEnvelope
    var details: Google_Protobuf_Any
}

/// The documentation's rules for what an endpoint receives, each checked on every envelope, header
/// and payload the peer gets; a broken rule is kept as a sentence naming the doc page. Sources:
/// DKE's interface documentation (IFD) pages as cited, the .proto comments, the ISOXML schema.
struct DocumentationRules {
    let endpointID: String
    let since: Date
    let subscribed: Set<String>
    private(set) var violations: [String] = []
    /// Every feed message got, by message id: one seen twice must be the same message.
    private(set) var messages: [String: FeedMessage] = [:]

    init(endpointID: String, since: Date, subscribed: Set<String>) {
        self.endpointID = endpointID
        self.since = since
        self.subscribed = subscribed
    }

    mutating func broken(_ rule: String) {
        if violations.count < 50 { violations.append(rule) }
    }

    static let prefix = "types.agrirouter.com/"

    /// integration/analyse-result.adoc: each body type's payload schema. ACK carries none.
    static let payloadType: [BodyType: String] = [
        .ack: "",
        .ackWithMessages: Agrirouter_Commons_Messages.protoMessageName,
        .ackWithFailure: Agrirouter_Commons_Messages.protoMessageName,
        .ackForFeedHeaderList: Agrirouter_Feed_Response_HeaderQueryResponse.protoMessageName,
        .ackForFeedMessage: Agrirouter_Feed_Response_MessageQueryResponse.protoMessageName,
        .ackForFeedFailedMessage: Agrirouter_Feed_Response_FailedMessageQueryResponse.protoMessageName,
        .endpointsListing: Agrirouter_Response_Payload_Account_ListEndpointsResponse.protoMessageName,
        .pushNotification: Agrirouter_Feed_Push_Notification_PushNotification.protoMessageName,
    ]

    /// A timestamp agrirouter set: present, and between the peer's start and now (a second's slack).
    mutating func checkTime(_ stamp: Google_Protobuf_Timestamp, present: Bool, _ what: String) {
        guard present, stamp.seconds > 0 else { return broken("\(what) is missing") }
        let date = stamp.date
        if date < since.addingTimeInterval(-1) || date > Date().addingTimeInterval(1) {
            broken("\(what) \(date) lies outside the exchange (\(since) to now)")
        }
    }

    /// The envelope's fields (response.proto; integration/analyse-result.adoc; communication.adoc).
    mutating func check(_ item: OutboxItem, sentIDs: Set<String>) {
        let envelope = item.envelope
        guard let expected = Self.payloadType[envelope.type] else {
            return broken("response type \(envelope.type.rawValue) is obsolete or undefined (analyse-result.adoc)")
        }
        checkTime(envelope.timestamp, present: envelope.hasTimestamp, "the envelope's timestamp")
        if envelope.messageID.isEmpty { broken("a \(envelope.type) envelope without message_id") }
        if envelope.type == .pushNotification {
            if !envelope.applicationMessageID.isEmpty {
                broken("a push notification answers application message \(envelope.applicationMessageID)")
            }
            // "200 ... also used with PUSH notifications" (integration/analyse-result.adoc).
            if envelope.responseCode != 200 {
                broken("a push notification's response code is \(envelope.responseCode), not 200")
            }
        } else if !sentIDs.contains(envelope.applicationMessageID) {
            broken(
                "an answer to application message '\(envelope.applicationMessageID)', which this endpoint never sent")
        }
        let failed = envelope.type == .ackWithFailure
        if failed != !(200..<300).contains(envelope.responseCode) {
            broken("response code \(envelope.responseCode) with body type \(envelope.type)")
        }
        if expected.isEmpty {
            if !item.details.typeURL.isEmpty || !item.details.value.isEmpty {
                broken("an ACK with a payload (\(item.details.typeURL))")
            }
        } else if item.details.typeURL != Self.prefix + expected {
            // integration/build-message.adoc: types.agrirouter.com/<full name>.
            broken("a \(envelope.type) payload typed '\(item.details.typeURL)', not '\(Self.prefix + expected)'")
        }
    }

    /// commons/message.proto; error-codes.adoc: a code, a text, and an argument for each placeholder.
    mutating func check(_ messages: Agrirouter_Commons_Messages) {
        if messages.messages.isEmpty { broken("ACK_WITH_MESSAGES without a message") }
        for message in messages.messages {
            if message.messageCode.range(of: #"^[A-Z]{3}_[0-9]{6}$"#, options: .regularExpression) == nil {
                broken("message code '\(message.messageCode)' is not of error-codes.adoc's form")
            }
            for placeholder in Self.placeholders(in: message.message) where message.args[placeholder] == nil {
                broken("\(message.messageCode): '%\(placeholder)%' without an argument")
            }
        }
    }

    static func placeholders(in text: String) -> [String] {
        let parts = text.split(separator: "%", omittingEmptySubsequences: false)
        return stride(from: 1, to: parts.count - 1, by: 2).map { String(parts[$0]) }.filter {
            !$0.isEmpty && !$0.contains(" ")
        }
    }

    /// A feed message's header (commands/feed.adoc, "Message header") and its content.
    mutating func check(_ message: FeedMessage) {
        let header = message.header
        let id = header.messageID
        guard !id.isEmpty else { return broken("a feed message without message_id") }
        if let earlier = messages[id] {
            if earlier != message { broken("message \(id) came twice with different contents") }
            return
        }
        messages[id] = message
        if header.receiverID != endpointID { broken("\(id): receiver_id '\(header.receiverID)' is not this endpoint") }
        if !subscribed.contains(header.technicalMessageType) {
            broken("\(id): '\(header.technicalMessageType)' was never subscribed to")
        }
        if header.senderID.isEmpty || header.senderID == endpointID { broken("\(id): sender_id '\(header.senderID)'") }
        // build-message.adoc: gps:info and EFDI are never chunked (VAL_000019).
        if header.hasChunkContext, header.chunkContext != Agrirouter_Commons_ChunkComponent() {
            broken("\(id): a chunk context on \(header.technicalMessageType)")
        }
        if header.payloadSize != Int64(message.content.value.count) {
            broken("\(id): payload_size \(header.payloadSize), content \(message.content.value.count) bytes")
        }
        // certification.adoc, "Id requirements": the sender's sequence number is above 0.
        if header.sequenceNumber <= 0 { broken("\(id): sequence_number \(header.sequenceNumber)") }
        checkTime(header.createdAt, present: header.hasCreatedAt, "\(id): created_at")
        checkTime(header.sentTimestamp, present: header.hasSentTimestamp, "\(id): sent_timestamp")
        if header.sentTimestamp.date > header.createdAt.date.addingTimeInterval(1) {
            broken("\(id): sent after it was put into the feed")
        }
        if !message.content.typeURL.isEmpty, !message.content.typeURL.hasPrefix(Self.prefix) {
            broken("\(id): content typed '\(message.content.typeURL)'")
        }
        checkContent(message)
    }

    private mutating func checkContent(_ message: FeedMessage) {
        let header = message.header
        let bytes = message.content.value
        switch header.technicalMessageType {
        case TechnicalTypes.gpsInfo:
            guard let list = try? Agrirouter_Technicalmessagetype_GPSList(serializedBytes: bytes) else {
                return broken("\(header.messageID): not a GPSList")
            }
            if list.gpsEntries.isEmpty { broken("\(header.messageID): a GPSList without entries") }
            for entry in list.gpsEntries {
                checkPosition(
                    latitude: entry.positionNorth, longitude: entry.positionEast, status: entry.positionStatus.rawValue,
                    dop: [entry.pdop, entry.hdop], time: entry.hasGpsUtcTimestamp ? entry.gpsUtcTimestamp : nil,
                    header: header)
            }
        case TechnicalTypes.timeLog:
            if header.teamSetContextID.isEmpty {
                broken("\(header.messageID): a TimeLog without team_set_context_id (VAL_000020)")
            }
            guard let log = try? Efdi_TimeLog(serializedBytes: bytes) else {
                return broken("\(header.messageID): not an efdi.TimeLog")
            }
            if log.time.isEmpty { broken("\(header.messageID): a TimeLog without Time") }
            for time in log.time {
                if !time.hasStart { broken("\(header.messageID): a Time without start") }
                // ISO 11783-10 TimeType: 1, 2, 4 to 8.
                if ![1, 2, 4, 5, 6, 7, 8].contains(time.type.rawValue) {
                    broken("\(header.messageID): Time type \(time.type.rawValue)")
                }
                guard time.hasPositionStart else {
                    broken("\(header.messageID): a Time without position_start")
                    continue
                }
                let position = time.positionStart
                checkPosition(
                    latitude: position.positionNorth, longitude: position.positionEast,
                    status: position.positionStatus.rawValue,
                    dop: [position.pdop, position.hdop],
                    time: position.hasGpsUtcTimestamp ? position.gpsUtcTimestamp : nil, header: header)
                for value in time.dataLogValue where !(1...65534).contains(value.processDataDdi) {
                    broken("\(header.messageID): DDI \(value.processDataDdi) out of range (VAL_000027)")
                }
            }
        case TechnicalTypes.deviceDescription:
            if header.teamSetContextID.isEmpty {
                broken("\(header.messageID): a device description without team_set_context_id (VAL_000016)")
            }
            guard let data = try? Efdi_ISO11783_TaskData(serializedBytes: bytes) else {
                return broken("\(header.messageID): not an efdi.ISO11783_TaskData")
            }
            if data.device.isEmpty { broken("\(header.messageID): a device description without a device (VAL_000015)") }
            for device in data.device { check(device, in: header.messageID) }
        default:
            break
        }
    }

    /// gps.proto and efdi.proto's Position: WGS84 degrees, a defined status, no negative DOP, and
    /// never a fix time after agrirouter received it.
    private mutating func checkPosition(
        latitude: Double, longitude: Double, status: Int, dop: [Double], time: Google_Protobuf_Timestamp?,
        header: Agrirouter_Feed_Response_MessageQueryResponse.Header
    ) {
        let id = header.messageID
        if !(-90...90).contains(latitude) || !(-180...180).contains(longitude) {
            broken("\(id): position \(latitude), \(longitude) out of range")
        }
        if !(0...8).contains(status), status != 14, status != 15 {
            broken("\(id): position status \(status) is reserved")
        }
        if dop.contains(where: { !$0.isFinite || $0 < 0 }) { broken("\(id): DOP \(dop)") }
        if let time, time.date > header.createdAt.date.addingTimeInterval(1) {
            broken("\(id): a fix time \(time.date) after the message arrived")
        }
    }

    /// The ISOXML schema's limits for a device (EFDI.md §4; VAL_000014, VAL_000021, VAL_000027).
    private mutating func check(_ device: Efdi_Device, in id: String) {
        if device.clientName.count != 8 {
            broken("\(id): client NAME of \(device.clientName.count) bytes, not 8 (VAL_000021)")
        }
        if !(7...39).contains(device.deviceStructureLabel.count) {
            broken("\(id): structure label of \(device.deviceStructureLabel.count) bytes")
        }
        if device.deviceLocalizationLabel.count != 7 || device.deviceLocalizationLabel.first != 0xFF {
            broken("\(id): localization label \(device.deviceLocalizationLabel.map { String($0, radix: 16) })")
        }
        if device.deviceDesignator.count > 32 { broken("\(id): designator longer than 32 characters") }
        if device.deviceElement.isEmpty { broken("\(id): a device without elements") }
        for element in device.deviceElement {
            if !(1...65534).contains(element.deviceElementObjectID) {
                broken("\(id): element object id \(element.deviceElementObjectID)")
            }
            if !(1...7).contains(element.deviceElementType.rawValue) {
                broken("\(id): element type \(element.deviceElementType.rawValue)")
            }
            if element.deviceElementNumber > 4095 { broken("\(id): element number \(element.deviceElementNumber)") }
        }
        for data in device.deviceProcessData {
            if !(1...65534).contains(data.deviceProcessDataDdi) {
                broken("\(id): DDI \(data.deviceProcessDataDdi) (VAL_000027)")
            }
            if data.deviceProcessDataProperty > 7 || data.deviceProcessDataTriggerMethods > 31 {
                broken("\(id): DPD property or triggers out of range")
            }
        }
        for presentation in device.deviceValuePresentation {
            if !(1e-9...1e8).contains(abs(presentation.scale)) || presentation.numberOfDecimals > 7 {
                broken("\(id): DVP scale or decimals out of range")
            }
        }
    }

    /// tmt/efdi.adoc: a TimeLog's team set is one a description was sent for, and its values
    /// reference elements of that description.
    mutating func checkTeamSets() {
        let descriptions = messages.values.filter { $0.header.technicalMessageType == TechnicalTypes.deviceDescription }
        var elements: [String: Set<Int64>] = [:]
        for message in descriptions {
            let data = (try? Efdi_ISO11783_TaskData(serializedBytes: message.content.value)) ?? .init()
            elements[message.header.teamSetContextID, default: []].formUnion(
                data.device.flatMap(\.deviceElement).map(\.deviceElementID.number))
        }
        for message in messages.values where message.header.technicalMessageType == TechnicalTypes.timeLog {
            guard let known = elements[message.header.teamSetContextID] else {
                broken(
                    "\(message.header.messageID): TimeLog of team set \(message.header.teamSetContextID) without its description (VAL_000020)"
                )
                continue
            }
            let log = (try? Efdi_TimeLog(serializedBytes: message.content.value)) ?? .init()
            for value in log.time.flatMap(\.dataLogValue) where !known.contains(value.deviceElementIDRef.number) {
                broken(
                    "\(message.header.messageID): a value for element \(value.deviceElementIDRef.number), not in its description"
                )
            }
        }
    }
}

/// The technical message types, as commands/overview.adoc and tmt/efdi.adoc spell them.
enum TechnicalTypes {
    static let gpsInfo = "gps:info"
    static let timeLog = "iso:11783:-10:time_log:protobuf"
    static let deviceDescription = "iso:11783:-10:device_description:protobuf"
    static let capabilities = "dke:capabilities"
    static let subscription = "dke:subscription"
    static let feedMessageQuery = "dke:feed_message_query"
    static let feedConfirm = "dke:feed_confirm"
    static let feedDelete = "dke:feed_delete"
}
