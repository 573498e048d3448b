import Foundation
import SwiftProtobuf

/// One request ready for the measures JSON.
public struct EncodedMessage: Sendable, Equatable {
    public var applicationMessageID: String
    public var sequenceNumber: Int64
    public var technicalMessageType: String
    /// Base64 (no line breaks) of the delimited RequestEnvelope and RequestPayloadWrapper.
    public var base64: String
    /// Size of the encoded payload message, in bytes of protobuf.
    public var payloadSize: Int

    public init(
        applicationMessageID: String, sequenceNumber: Int64, technicalMessageType: String, base64: String,
        payloadSize: Int
    ) {
        self.applicationMessageID = applicationMessageID
        self.sequenceNumber = sequenceNumber
        self.technicalMessageType = technicalMessageType
        self.base64 = base64
        self.payloadSize = payloadSize
    }
}

/// Builds request envelopes. Sequence numbers start at 1 for each encoder, so make one per start of
/// the program; each message gets a fresh UUID as its application_message_id.
public struct MessageEncoder: Sendable {
    private var nextSequenceNumber: Int64 = 1

    public init() {}

    /// Encodes `payload` (nil for commands without one, such as dke:ping) as `technicalMessageType`.
    /// `applicationMessageID` lets a caller use an id it already tracks (a spool batch's); it must be a
    /// fresh UUID all the same.
    public mutating func encode(
        applicationMessageID: String = UUID().uuidString.lowercased(),
        technicalMessageType: String,
        mode: Agrirouter_Request_RequestEnvelope.Mode = .direct,
        recipients: [String] = [],
        payload: (any SwiftProtobuf.Message)?,
        teamSetContextID: String = "",
        at time: Date = Date()
    ) throws(CodecError) -> EncodedMessage {
        var envelope = envelope(
            applicationMessageID, technicalMessageType, mode: mode, recipients: recipients, at: time)
        envelope.teamSetContextID = teamSetContextID
        var wrapper = Agrirouter_Request_RequestPayloadWrapper()
        var payloadSize = 0
        if let payload {
            // gps:info and every other payload go in as raw protobuf bytes, never base64.
            let bytes: Data
            do {
                bytes = try payload.serializedBytes()
            } catch {
                throw .encodingFailed("\(error)")
            }
            payloadSize = bytes.count
            var any = Google_Protobuf_Any()
            any.typeURL = TypeURL.of(type(of: payload).protoMessageName)
            any.value = bytes
            wrapper.details = any
        }
        return try framed(envelope, wrapper, payloadSize: payloadSize)
    }

    /// Encodes one message whose payload is bytes already in their wire form (TaskData's base64 text),
    /// with its chunk component when it is one part of a chunked content.
    public mutating func encode(
        applicationMessageID: String = UUID().uuidString.lowercased(),
        technicalMessageType: String,
        mode: Agrirouter_Request_RequestEnvelope.Mode = .publish,
        recipients: [String] = [],
        content: Data,
        chunk: ChunkPosition?,
        fileName: String? = nil,
        at time: Date = Date()
    ) throws(CodecError) -> EncodedMessage {
        var envelope = envelope(
            applicationMessageID, technicalMessageType, mode: mode, recipients: recipients, at: time)
        if let chunk {
            var component = Agrirouter_Commons_ChunkComponent()
            component.contextID = chunk.contextID
            component.current = chunk.current
            component.total = chunk.total
            component.totalSize = chunk.totalSize
            envelope.chunkInfo = component
        }
        if let fileName { envelope.metadata.fileName = fileName }
        var wrapper = Agrirouter_Request_RequestPayloadWrapper()
        wrapper.details.value = content
        return try framed(envelope, wrapper, payloadSize: content.count)
    }

    /// The envelope's fields every message has; this message takes the next sequence number.
    private func envelope(
        _ applicationMessageID: String, _ technicalMessageType: String, mode: Agrirouter_Request_RequestEnvelope.Mode,
        recipients: [String], at time: Date
    ) -> Agrirouter_Request_RequestEnvelope {
        var envelope = Agrirouter_Request_RequestEnvelope()
        envelope.applicationMessageID = applicationMessageID
        envelope.applicationMessageSeqNo = nextSequenceNumber
        envelope.technicalMessageType = technicalMessageType
        envelope.mode = mode
        envelope.recipients = recipients
        envelope.timestamp = Google_Protobuf_Timestamp(date: time)
        return envelope
    }

    /// Envelope and payload as length-delimited frames in base64; the sequence number moves on only
    /// for a message that was made.
    private mutating func framed(
        _ envelope: Agrirouter_Request_RequestEnvelope, _ wrapper: Agrirouter_Request_RequestPayloadWrapper,
        payloadSize: Int
    ) throws(CodecError) -> EncodedMessage {
        do {
            let frames = DelimitedFrames.join([try envelope.serializedBytes(), try wrapper.serializedBytes()])
            nextSequenceNumber += 1
            return EncodedMessage(
                applicationMessageID: envelope.applicationMessageID, sequenceNumber: envelope.applicationMessageSeqNo,
                technicalMessageType: envelope.technicalMessageType, base64: frames.base64EncodedString(),
                payloadSize: payloadSize)
        } catch {
            throw .encodingFailed("\(error)")
        }
    }
}
