import Foundation
import SwiftProtobuf
import Testing

@testable import AgrirouterWire

@Suite struct CodecTests {
    private func gpsList() -> Agrirouter_Technicalmessagetype_GPSList {
        var list = Agrirouter_Technicalmessagetype_GPSList()
        var entry = GPSEntry()
        (entry.positionNorth, entry.positionEast, entry.positionUp) = (48.123456789, 11.5, 547_235)
        (entry.positionStatus, entry.hdop, entry.pdop, entry.numberOfSatellites) = (.dDgnss, 0.7, 1.3, 17)
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(seconds: 1_790_000_000, nanos: 250_000_000)
        list.gpsEntries = [entry]
        return list
    }

    /// Every request payload the gateway sends, with its technical message type.
    private func requests() -> [(String, (any SwiftProtobuf.Message)?)] {
        var capabilities = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
        var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
        capability.technicalMessageType = TechnicalMessageType.gpsInfo
        capability.direction = .sendReceive
        capabilities.capabilities = [capability]
        capabilities.appCertificationID = "application-id"
        capabilities.appCertificationVersionID = "version-id"
        capabilities.enablePushNotifications = .enabled
        var subscription = Agrirouter_Request_Payload_Endpoint_Subscription()
        var item = Agrirouter_Request_Payload_Endpoint_Subscription.MessageTypeSubscriptionItem()
        item.technicalMessageType = TechnicalMessageType.gpsInfo
        subscription.technicalMessageTypes = [item]
        var query = Agrirouter_Feed_Request_MessageQuery()
        query.validityPeriod.sentFrom = Google_Protobuf_Timestamp(seconds: 1_790_000_000)
        query.validityPeriod.sentTo = Google_Protobuf_Timestamp(seconds: 1_790_000_900)
        var confirm = Agrirouter_Feed_Request_MessageConfirm()
        confirm.messageIds = ["a", "b"]
        var delete = Agrirouter_Feed_Request_MessageDelete()
        delete.validityPeriod = query.validityPeriod
        var list = Agrirouter_Request_Payload_Account_ListEndpointsQuery()
        list.technicalMessageType = TechnicalMessageType.gpsInfo
        list.direction = .sendReceive
        return [
            (TechnicalMessageType.capabilities, capabilities), (TechnicalMessageType.subscription, subscription),
            (TechnicalMessageType.feedMessageQuery, query), (TechnicalMessageType.feedHeaderQuery, query),
            (TechnicalMessageType.feedConfirm, confirm), (TechnicalMessageType.feedDelete, delete),
            (TechnicalMessageType.listEndpoints, list), (TechnicalMessageType.ping, nil),
            (TechnicalMessageType.gpsInfo, gpsList()),
        ]
    }

    @Test func everyRequestRoundTrips() throws {
        var encoder = MessageEncoder()
        var ids: Set<String> = []
        for (index, (type, payload)) in requests().enumerated() {
            let mode: Agrirouter_Request_RequestEnvelope.Mode =
                type == TechnicalMessageType.gpsInfo ? .publish : .direct
            let encoded = try encoder.encode(technicalMessageType: type, mode: mode, payload: payload)
            #expect(encoded.sequenceNumber == Int64(index + 1), "sequence numbers start at 1 and count up")
            #expect(!encoded.base64.contains("\n"))
            ids.insert(encoded.applicationMessageID)
            let decoded = try RequestDecoder.decode(base64: encoded.base64)
            #expect(decoded.envelope.applicationMessageID == encoded.applicationMessageID)
            #expect(decoded.envelope.applicationMessageSeqNo == encoded.sequenceNumber)
            #expect(decoded.envelope.technicalMessageType == type)
            #expect(decoded.envelope.mode == mode)
            #expect(decoded.envelope.hasTimestamp)
            if let payload {
                #expect(decoded.payloadTypeURL == TypeURL.of(Swift.type(of: payload).protoMessageName))
                #expect(
                    decoded.payload == (try payload.serializedBytes() as Data), "\(type): payload bytes are sent raw")
            } else {
                #expect(decoded.payload.isEmpty)
            }
        }
        #expect(ids.count == requests().count, "every application_message_id is fresh")
        var restarted = MessageEncoder()
        #expect(try restarted.encode(technicalMessageType: "dke:ping", payload: nil).sequenceNumber == 1)
    }

    @Test func gpsInfoPayloadIsRawProtobufNotBase64() throws {
        var encoder = MessageEncoder()
        let list = gpsList()
        let decoded = try RequestDecoder.decode(
            base64: try encoder.encode(
                technicalMessageType: TechnicalMessageType.gpsInfo, mode: .publish, payload: list
            ).base64)
        #expect(decoded.payloadTypeURL == "types.agrirouter.com/agrirouter.technicalmessagetype.GPSList")
        #expect(try Agrirouter_Technicalmessagetype_GPSList(serializedBytes: decoded.payload) == list)
        #expect(Data(base64Encoded: decoded.payload) == nil)
    }

    /// Every response type agrirouter sends, encoded as agrirouter would and decoded by type.
    @Test func everyResponseTypeRoundTrips() throws {
        var messages = Agrirouter_Commons_Messages()
        var message = Agrirouter_Commons_Message()
        message.message = "Skipping"
        message.messageCode = "VAL_000022"
        message.args = ["a": "b"]
        messages.messages = [message]
        var feed = Agrirouter_Feed_Response_MessageQueryResponse()
        feed.page.number = 1
        feed.page.total = 2
        feed.queryMetrics.totalMessagesInQuery = 26
        var feedMessage = Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage()
        feedMessage.header.senderID = "sender"
        feedMessage.header.messageID = "m1"
        feedMessage.header.technicalMessageType = TechnicalMessageType.gpsInfo
        feedMessage.content.value = try gpsList().serializedBytes()
        feed.messages = [feedMessage]
        var headers = Agrirouter_Feed_Response_HeaderQueryResponse()
        var headerFeed = Agrirouter_Feed_Response_HeaderQueryResponse.Feed()
        headerFeed.senderID = "sender"
        headers.feed = [headerFeed]
        var failed = Agrirouter_Feed_Response_FailedMessageQueryResponse()
        failed.reasons = [message]
        var endpoints = Agrirouter_Response_Payload_Account_ListEndpointsResponse()
        var endpoint = Agrirouter_Response_Payload_Account_ListEndpointsResponse.Endpoint()
        endpoint.endpointID = "e1"
        endpoint.endpointName = "Tractor 7"
        endpoints.endpoints = [endpoint]
        var push = Agrirouter_Feed_Push_Notification_PushNotification()
        var pushed = Agrirouter_Feed_Push_Notification_PushNotification.FeedMessage()
        pushed.header.messageID = "m2"
        pushed.content.value = try gpsList().serializedBytes() + Data([0, 0, 0])
        push.messages = [pushed]

        let cases:
            [(Agrirouter_Response_ResponseEnvelope.ResponseBodyType, (any SwiftProtobuf.Message)?, ResponseBody)] = [
                (.ack, nil, .ack),
                (.ackWithMessages, messages, .ackWithMessages(messages.messages)),
                (.ackWithFailure, messages, .ackWithFailure(messages.messages)),
                (.ackForFeedHeaderList, headers, .feedHeaders(headers)),
                (.ackForFeedMessage, feed, .feedMessages(feed)),
                (.ackForFeedFailedMessage, failed, .failedFeedMessages(failed)),
                (.endpointsListing, endpoints, .endpoints(endpoints)),
                (.pushNotification, push, .pushNotification(push)),
                (.cloudRegistrations, nil, .unhandled(type: 11)),
            ]
        for (type, payload, expected) in cases {
            for typeURL in ["types.agrirouter.com/x", ""] {  // agrirouter 2.0 may leave type_url empty
                var envelope = Agrirouter_Response_ResponseEnvelope()
                envelope.type = type
                envelope.responseCode = 200
                envelope.applicationMessageID = "app-id"
                var wrapper = Agrirouter_Response_ResponsePayloadWrapper()
                if let payload {
                    wrapper.details.typeURL = typeURL
                    wrapper.details.value = try payload.serializedBytes()
                }
                let base64 = DelimitedFrames.join([try envelope.serializedBytes(), try wrapper.serializedBytes()])
                    .base64EncodedString()
                let decoded = try OutboxDecoder.decode(base64: base64)
                #expect(decoded.body == expected, "\(type) with type_url '\(typeURL)'")
                #expect(decoded.applicationMessageID == "app-id")
            }
        }
        // The pushed gps:info was padded with zeros; its GPSList still reads.
        #expect(try GPSInfoContent.gpsList(from: pushed.content.value) == gpsList())
    }

    @Test func malformedInputIsATypedError() {
        #expect(throws: CodecError.notBase64) { try OutboxDecoder.decode(base64: "not base64!") }
        #expect(throws: CodecError.truncatedFrame(index: 0)) {
            try OutboxDecoder.decode(base64: Data([0x10, 0x08]).base64EncodedString())
        }
        #expect(throws: CodecError.self) {
            try OutboxDecoder.decode(base64: Data([0x02, 0xFF, 0xFF]).base64EncodedString())
        }
        #expect(throws: CodecError.self) { try OutboxItem.list(from: Data("{\"not\":\"a list\"}".utf8)) }
        #expect(throws: CodecError.self) { try GPSInfoContent.gpsList(from: Data([0xFF, 0xFF, 0xFF])) }
    }

    @Test func framingHandlesMultiByteLengths() throws {
        let frames = [
            Data(count: 0), Data(repeating: 7, count: 127), Data(repeating: 9, count: 128),
            Data(repeating: 1, count: 70_000),
        ]
        #expect(try DelimitedFrames.split(DelimitedFrames.join(frames)) == frames)
    }

    @Test func measuresBodyUsesTheObjectFormWithEpochSeconds() throws {
        var encoder = MessageEncoder()
        let message = try encoder.encode(technicalMessageType: TechnicalMessageType.ping, payload: nil)
        let body = MeasuresBody(
            sensorAlternateID: "sensor", capabilityAlternateID: "capability", messages: [message],
            at: Date(timeIntervalSince1970: 1_790_000_000.9))
        let json = try body.json()
        let object = try #require(try JSONSerialization.jsonObject(with: json) as? [String: Any])
        #expect(object["sensorAlternateId"] as? String == "sensor")
        #expect(object["capabilityAlternateId"] as? String == "capability")
        let measures = try #require(object["measures"] as? [[String: String]])
        #expect(measures == [["message": message.base64, "timestamp": "1790000000"]])
        #expect(!String(decoding: json, as: UTF8.self).contains("\\/"))
    }

    @Test(
        "a measures body is read in the SDKs' object form and in the documentation's array form, its timestamp a string or a number"
    )
    func measuresBodyReadsBothForms() throws {
        let json =
            #"{"sensorAlternateId":"s","capabilityAlternateId":"c","measures":[["AAA=","1790000000123"],["BBB=",1790000000],{"message":"CCC=","timestamp":"1790000001"},{"message":"DDD=","timestamp":1790000002.5}]}"#
        let body = try JSONDecoder().decode(MeasuresBody.self, from: Data(json.utf8))
        #expect(body.measures.map(\.message) == ["AAA=", "BBB=", "CCC=", "DDD="])
        #expect(body.measures.map(\.timestamp) == ["1790000000123", "1790000000", "1790000001", "1790000002.5"])
        for broken in [#"[["AAA="]]"#, #"[[1, "1"]]"#, #"[{"message":"AAA="}]"#, #"["AAA="]"#] {
            let text = #"{"sensorAlternateId":"s","capabilityAlternateId":"c","measures":"# + broken + "}"
            #expect(throws: DecodingError.self, "\(broken)") {
                try JSONDecoder().decode(MeasuresBody.self, from: Data(text.utf8))
            }
        }
    }

    @Test func outboxListParsesTheCommandsAnswer() throws {
        #expect(try OutboxItem.list(from: Data("[]".utf8)).isEmpty)
        let json = #"[{"sensorAlternateId":"s","capabilityAlternateId":"c","command":{"message":"AAA="}}]"#
        #expect(try OutboxItem.list(from: Data(json.utf8)).map(\.command.message) == ["AAA="])
    }
}
