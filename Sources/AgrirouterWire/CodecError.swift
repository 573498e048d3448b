/// Why a message from or to agrirouter could not be encoded or decoded.
public enum CodecError: Error, Sendable, Equatable, CustomStringConvertible {
    case notBase64
    /// A length-delimited frame is cut short or has a malformed length.
    case truncatedFrame(index: Int)
    case malformedEnvelope(String)
    case malformedPayload(type: String, reason: String)
    case malformedJSON(String)
    case encodingFailed(String)

    public var description: String {
        switch self {
        case .notBase64: return "the outbox message is not valid base64"
        case .truncatedFrame(let index): return "frame \(index + 1) of the message is cut short"
        case .malformedEnvelope(let reason): return "the response envelope does not decode: \(reason)"
        case .malformedPayload(let type, let reason): return "the \(type) payload does not decode: \(reason)"
        case .malformedJSON(let reason): return "the outbox answer is not the expected JSON: \(reason)"
        case .encodingFailed(let reason): return "the message could not be encoded: \(reason)"
        }
    }
}
