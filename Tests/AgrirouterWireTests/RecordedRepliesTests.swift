import Foundation
import SwiftProtobuf
import TestSupport
import Testing

@testable import AgrirouterWire

/// Replies recorded from the real agrirouter, decoded by our codec.
@Suite struct RecordedRepliesTests {
    struct Reply: Decodable {
        var name: String
        var message: String
    }

    static let replies: [String: String] = {
        struct File: Decodable { var replies: [Reply] }
        let url = Fixtures.root.appendingPathComponent("Fixtures/agrirouter/recorded-replies.json")
        let file = try? JSONDecoder().decode(File.self, from: Data(contentsOf: url))
        return Dictionary(uniqueKeysWithValues: (file?.replies ?? []).map { ($0.name, $0.message) })
    }()

    private func decode(_ name: String) throws -> DecodedResponse {
        try OutboxDecoder.decode(base64: try #require(Self.replies[name], "fixture \(name) missing"))
    }

    @Test func capabilitiesUnchanged() throws {
        let reply = try decode("capabilities_unchanged")
        #expect(reply.envelope.responseCode == 201)
        #expect(reply.envelope.type == .ackWithMessages)
        #expect(reply.applicationMessageID == "9001287b-7609-4426-b573-15192d0c1242")
        #expect(reply.envelope.messageID == "c2deb3ee-2202-4052-ad2a-5125d487b7f6")
        #expect(reply.payloadTypeURL == "types.agrirouter.com/agrirouter.commons.Messages")
        guard case .ackWithMessages(let messages) = reply.body else {
            Issue.record("body \(reply.body)")
            return
        }
        #expect(messages.map(\.message) == ["Skipping capabilities update because there are no differences"])
        #expect(reply.messageCodes == ["VAL_000022"])
    }

    @Test func decodeErrorHasNoApplicationMessageID() throws {
        let reply = try decode("decode_error_without_application_message_id")
        #expect(reply.envelope.responseCode == 400)
        #expect(reply.envelope.type == .ackWithFailure)
        #expect(reply.applicationMessageID == nil)
        #expect(reply.messageCodes == ["VAL_000300"])
    }

    @Test func noRecipients() throws {
        let reply = try decode("no_recipients")
        #expect(reply.envelope.responseCode == 400)
        #expect(reply.applicationMessageID == "4092757b-b621-4c39-8322-78238f727747")
        guard case .ackWithFailure(let messages) = reply.body else {
            Issue.record("body \(reply.body)")
            return
        }
        #expect(
            messages.first?.message
                == "No recipients have been identified for iso:11783:-10:device_description:protobuf.")
        #expect(reply.messageCodes == ["VAL_000004"])
    }

    @Test func pushNotificationWithEmptyContentTypeURL() throws {
        let reply = try decode("push_notification")
        #expect(reply.envelope.responseCode == 0)
        #expect(reply.envelope.type == .pushNotification)
        #expect(reply.applicationMessageID == nil)
        #expect(reply.envelope.messageID == "f935fddd-8d92-4fc2-a36f-0c72cef75187")
        guard case .pushNotification(let push) = reply.body else {
            Issue.record("body \(reply.body)")
            return
        }
        #expect(push.messages.count == 1)
        let message = try #require(push.messages.first)
        #expect(message.header.technicalMessageType == "dke:other")
        #expect(message.content.typeURL == "")
        #expect(
            String(decoding: message.content.value, as: UTF8.self)
                == "[rq52_givenSinglePushNotificationReceiver_PushNotification_ShouldBeDeliveredToTheOutbox] MESSAGE CONTENT FOR TESTING, GENERATED AT [2019-04-12T09:21:50.649Z]"
        )
    }

    @Test func endpointsListing() throws {
        let reply = try decode("endpoints_listing")
        #expect(reply.envelope.responseCode == 200)
        #expect(reply.envelope.type == .endpointsListing)
        guard case .endpoints(let listing) = reply.body else {
            Issue.record("body \(reply.body)")
            return
        }
        #expect(
            listing.endpoints.map(\.endpointType) == [
                "application", "application", "application", "pairedAccount", "messageRecordingReplay", "endpointGroup",
            ])
        #expect(listing.endpoints.first?.endpointName == "Agrirouter API Implementation Example CU")
        #expect(listing.endpoints.allSatisfy { $0.status == "active" })
        #expect(listing.endpoints.first?.messageTypes.first?.technicalMessageType == "img:jpeg")
        #expect(listing.endpoints.first?.messageTypes.first?.direction == .sendReceive)
    }

    @Test func recordedRepliesReencodeWithoutLoss() throws {
        // Our .proto files carry agrirouter's field numbers: decoding and encoding again loses nothing.
        for (name, base64) in Self.replies {
            let frames = try DelimitedFrames.split(try #require(Data(base64Encoded: base64)))
            let envelope = try Agrirouter_Response_ResponseEnvelope(serializedBytes: frames[0])
            let wrapper = try Agrirouter_Response_ResponsePayloadWrapper(serializedBytes: frames[1])
            let again = DelimitedFrames.join([try envelope.serializedBytes(), try wrapper.serializedBytes()])
            #expect(
                try OutboxDecoder.decode(base64: again.base64EncodedString()) == OutboxDecoder.decode(base64: base64),
                "\(name)")
            #expect(
                envelope.unknownFields.data.isEmpty && wrapper.unknownFields.data.isEmpty,
                "\(name): fields we do not know")
            // The recorded push writes response_code 0 explicitly, which proto3 leaves out: bytes differ there only.
            if name != "push_notification" {
                #expect(again.base64EncodedString() == base64, "\(name)")
            }
        }
        #expect(Self.replies.count == 5)
    }
}
