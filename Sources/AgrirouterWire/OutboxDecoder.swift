import Foundation
import SwiftProtobuf

/// One item of the JSON array the commands URL answers with.
public struct OutboxItem: Codable, Sendable, Equatable {
    public struct Command: Codable, Sendable, Equatable {
        public var message: String
    }

    public var sensorAlternateId: String?
    public var capabilityAlternateId: String?
    public var command: Command

    /// Parses the commands URL's answer: a JSON array, `[]` when there is nothing.
    public static func list(from json: Data) throws(CodecError) -> [OutboxItem] {
        do {
            return try JSONDecoder().decode([OutboxItem].self, from: json)
        } catch {
            throw .malformedJSON("\(error)")
        }
    }
}

/// What a response's payload is, chosen by the envelope's type and never by the payload's type_url.
public enum ResponseBody: Sendable, Equatable {
    case ack
    case ackWithMessages([Agrirouter_Commons_Message])
    case ackWithFailure([Agrirouter_Commons_Message])
    case feedHeaders(Agrirouter_Feed_Response_HeaderQueryResponse)
    case feedMessages(Agrirouter_Feed_Response_MessageQueryResponse)
    case failedFeedMessages(Agrirouter_Feed_Response_FailedMessageQueryResponse)
    case endpoints(Agrirouter_Response_Payload_Account_ListEndpointsResponse)
    case pushNotification(Agrirouter_Feed_Push_Notification_PushNotification)
    /// A type we do not read (obsolete MESSAGES, cloud registrations, or something new).
    case unhandled(type: Int)
}

/// One decoded outbox message.
public struct DecodedResponse: Sendable, Equatable {
    public var envelope: Agrirouter_Response_ResponseEnvelope
    /// The payload's type_url as received; may be empty.
    public var payloadTypeURL: String
    public var body: ResponseBody

    /// Nil when agrirouter could not decode the request it answers (VAL_000300 comes without one).
    public var applicationMessageID: String? {
        envelope.applicationMessageID.isEmpty ? nil : envelope.applicationMessageID
    }

    /// The codes of an ACK_WITH_MESSAGES or ACK_WITH_FAILURE, e.g. ["VAL_000022"].
    public var messageCodes: [String] {
        switch body {
        case .ackWithMessages(let messages), .ackWithFailure(let messages): return messages.map(\.messageCode)
        default: return []
        }
    }
}

public enum OutboxDecoder {
    /// Decodes `command.message`: base64 of a delimited ResponseEnvelope and ResponsePayloadWrapper.
    public static func decode(base64: String) throws(CodecError) -> DecodedResponse {
        guard let data = Data(base64Encoded: base64) else { throw .notBase64 }
        let frames = try DelimitedFrames.split(data)
        guard let first = frames.first else { throw .truncatedFrame(index: 0) }
        let envelope: Agrirouter_Response_ResponseEnvelope
        let wrapper: Agrirouter_Response_ResponsePayloadWrapper
        do {
            envelope = try Agrirouter_Response_ResponseEnvelope(serializedBytes: first)
        } catch {
            throw .malformedEnvelope("\(error)")
        }
        do {
            wrapper = try Agrirouter_Response_ResponsePayloadWrapper(
                serializedBytes: frames.count > 1 ? frames[1] : Data())
        } catch {
            throw .malformedPayload(type: "ResponsePayloadWrapper", reason: "\(error)")
        }
        let value = wrapper.details.value
        let body: ResponseBody
        switch envelope.type {
        case .ack: body = .ack
        case .ackWithMessages: body = .ackWithMessages(try parse(Agrirouter_Commons_Messages.self, value).messages)
        case .ackWithFailure: body = .ackWithFailure(try parse(Agrirouter_Commons_Messages.self, value).messages)
        case .ackForFeedHeaderList:
            body = .feedHeaders(try parse(Agrirouter_Feed_Response_HeaderQueryResponse.self, value))
        case .ackForFeedMessage:
            body = .feedMessages(try parse(Agrirouter_Feed_Response_MessageQueryResponse.self, value))
        case .ackForFeedFailedMessage:
            body = .failedFeedMessages(try parse(Agrirouter_Feed_Response_FailedMessageQueryResponse.self, value))
        case .endpointsListing:
            body = .endpoints(try parse(Agrirouter_Response_Payload_Account_ListEndpointsResponse.self, value))
        case .pushNotification:
            body = .pushNotification(try parse(Agrirouter_Feed_Push_Notification_PushNotification.self, value))
        default: body = .unhandled(type: envelope.type.rawValue)
        }
        return DecodedResponse(envelope: envelope, payloadTypeURL: wrapper.details.typeURL, body: body)
    }

    private static func parse<M: SwiftProtobuf.Message>(_ type: M.Type, _ value: Data) throws(CodecError) -> M {
        do {
            return try M(serializedBytes: value)
        } catch {
            throw .malformedPayload(type: M.protoMessageName, reason: "\(error)")
        }
    }
}

public enum GPSInfoContent {
    /// Parses the GPSList in a received gps:info's content. Some senders pad the bytes with zeros;
    /// those are dropped first (a 0 tag is never valid protobuf, so nothing real is lost).
    public static func gpsList(from content: Data) throws(CodecError) -> Agrirouter_Technicalmessagetype_GPSList {
        var bytes = content
        while bytes.last == 0 { bytes.removeLast() }
        do {
            return try Agrirouter_Technicalmessagetype_GPSList(serializedBytes: bytes)
        } catch {
            throw .malformedPayload(type: "GPSList", reason: "\(error)")
        }
    }
}
