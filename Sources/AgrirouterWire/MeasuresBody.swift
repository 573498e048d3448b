import Foundation
import JSONText

/// The JSON body POSTed to the measures URL, in the object form the SDKs use:
/// `{"sensorAlternateId", "capabilityAlternateId", "measures": [{"message", "timestamp"}]}`,
/// the timestamp a string of epoch seconds.
public struct MeasuresBody: Codable, Sendable, Equatable {
    public struct Measure: Codable, Sendable, Equatable {
        public var message: String
        public var timestamp: String
    }

    public var sensorAlternateId: String
    public var capabilityAlternateId: String
    public var measures: [Measure]

    public init(
        sensorAlternateID: String, capabilityAlternateID: String, messages: [EncodedMessage], at time: Date = Date()
    ) {
        sensorAlternateId = sensorAlternateID
        capabilityAlternateId = capabilityAlternateID
        let seconds = String(Int64(time.timeIntervalSince1970.rounded(.down)))
        measures = messages.map { Measure(message: $0.base64, timestamp: seconds) }
    }

    public func json() throws(CodecError) -> Data {
        do {
            return try JSONWriter.encoder().encode(self)
        } catch {
            throw .encodingFailed("\(error)")
        }
    }
}

extension MeasuresBody.Measure {
    /// Reads the object form the SDKs send, or the array form `[message, timestamp]` that the
    /// interface documentation's "JSON setup" (integration/build-message.adoc), its Postman
    /// collection and DKE's C++ SDK send. A timestamp may come as a string or a number.
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            let message = try array.decode(String.self)
            self.init(message: message, timestamp: try Self.timestamp { try array.decode($0) })
            return
        }
        let object = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            message: try object.decode(String.self, forKey: .message),
            timestamp: try Self.timestamp { try object.decode($0, forKey: .timestamp) })
    }

    private static func timestamp(_ decode: (any Decodable.Type) throws -> any Decodable) throws -> String {
        if let text = try? decode(String.self) as? String { return text }
        if let whole = try? decode(Int64.self) as? Int64 { return String(whole) }
        return String(try decode(Double.self) as? Double ?? 0)
    }
}
