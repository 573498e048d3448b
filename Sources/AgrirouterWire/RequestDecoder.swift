import Foundation
import SwiftProtobuf

/// One request as agrirouter receives it: the reverse of `MessageEncoder`.
public struct DecodedRequest: Sendable, Equatable {
    public var envelope: Agrirouter_Request_RequestEnvelope
    public var payloadTypeURL: String
    /// The payload's raw protobuf bytes (empty when the request has none).
    public var payload: Data
}

public enum RequestDecoder {
    public static func decode(base64: String) throws(CodecError) -> DecodedRequest {
        guard let data = Data(base64Encoded: base64) else { throw .notBase64 }
        let frames = try DelimitedFrames.split(data)
        guard frames.count == 2 else { throw .truncatedFrame(index: min(frames.count, 1)) }
        do {
            let envelope = try Agrirouter_Request_RequestEnvelope(serializedBytes: frames[0])
            let wrapper = try Agrirouter_Request_RequestPayloadWrapper(serializedBytes: frames[1])
            return DecodedRequest(
                envelope: envelope, payloadTypeURL: wrapper.details.typeURL, payload: wrapper.details.value)
        } catch {
            throw .malformedEnvelope("\(error)")
        }
    }
}
