import Foundation

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

    public init(sensorAlternateID: String, capabilityAlternateID: String, messages: [EncodedMessage], at time: Date = Date()) {
        sensorAlternateId = sensorAlternateID
        capabilityAlternateId = capabilityAlternateID
        let seconds = String(Int64(time.timeIntervalSince1970.rounded(.down)))
        measures = messages.map { Measure(message: $0.base64, timestamp: seconds) }
    }

    public func json() throws(CodecError) -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes, .sortedKeys]
        do {
            return try encoder.encode(self)
        } catch {
            throw .encodingFailed("\(error)")
        }
    }
}
