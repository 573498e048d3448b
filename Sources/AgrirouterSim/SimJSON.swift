import Foundation
import JSONText

/// The simulator's JSON writer. Keys are sorted and "/" is written as "\/", as the simulator has
/// always written them, so answers and received-log lines stay byte for byte what clients and the
/// log's readers have seen. (Sorting is by code point, where Foundation's untyped writer ignored
/// case; the two orders agree for every key written here.)
enum SimJSON {
    /// nil when the value cannot be written, such as a NaN.
    static func encode(_ value: some Encodable) -> Data? {
        try? JSONWriter.encoder(escapingSlashes: true).encode(value)
    }
}

/// The fields of an onboarding request the simulator checks. A field that is absent, null or not a
/// string reads as "": agrirouter answers "… is missing" for all of these alike, so a mistyped field
/// must not fail the whole body (that answer is "Invalid payload", for a body that is no JSON object).
struct SimOnboardingRequest: Decodable {
    var id = ""
    var applicationId = ""
    var certificationVersionId = ""
    var gatewayId = ""
    var certificateType = ""
    var utcTimestamp = ""

    /// In the order agrirouter names the first missing one.
    enum CodingKeys: String, CodingKey, CaseIterable {
        case id, applicationId, certificationVersionId, gatewayId, certificateType
        case utcTimestamp = "UTCTimestamp"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func string(_ key: CodingKeys) -> String { (try? container.decodeIfPresent(String.self, forKey: key)) ?? "" }
        id = string(.id)
        applicationId = string(.applicationId)
        certificationVersionId = string(.certificationVersionId)
        gatewayId = string(.gatewayId)
        certificateType = string(.certificateType)
        utcTimestamp = string(.utcTimestamp)
    }

    /// The JSON name of the first required field that is missing. `UTCTimestamp` is not required:
    /// the documented request of a communication unit has none.
    var firstMissing: String? {
        let values: [CodingKeys: String] = [
            .id: id, .applicationId: applicationId, .certificationVersionId: certificationVersionId,
            .gatewayId: gatewayId, .certificateType: certificateType,
        ]
        return CodingKeys.allCases.first { $0 != .utcTimestamp && values[$0, default: ""].isEmpty }?.rawValue
    }
}

/// A successful onboarding's answer, as agrirouter gives it.
struct SimOnboardingAnswer: Encodable {
    struct ConnectionCriteria: Encodable {
        var gatewayId: String
        var measures: String
        var commands: String
        /// MQTT's only, absent (not null) for REST. The port is a string, as in agrirouter's examples.
        var host: String?
        var port: String?
        var clientId: String?
    }

    struct Authentication: Encodable {
        var type = "PEM"
        var secret: String
        var certificate: String
    }

    var deviceAlternateId: String
    var capabilityAlternateId: String
    var sensorAlternateId: String
    var connectionCriteria: ConnectionCriteria
    var authentication: Authentication
}

/// agrirouter's onboarding error body, with an empty target and no details.
struct SimOnboardingRefusal: Encodable {
    struct Body: Encodable {
        var code: String
        var message: String
        var target = ""
        var details: [String] = []
    }

    var error: Body
}

/// One outbox item as agrirouter gives it: the REST commands answer is an array of them, and MQTT
/// publishes each on its own.
struct SimOutboxItem: Encodable {
    struct Command: Encodable {
        var message: String
    }

    var sensorAlternateId: String
    var capabilityAlternateId: String
    var command: Command

    init(_ endpoint: SimEndpoint, message: String) {
        sensorAlternateId = endpoint.sensorID
        capabilityAlternateId = endpoint.capabilityID
        command = Command(message: message)
    }
}
