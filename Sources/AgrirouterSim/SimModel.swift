import AgrirouterWire
import Foundation

/// How the simulator is set up.
public struct SimConfiguration: Sendable {
    /// Registration codes it accepts, each once, with the name the endpoint gets (as the user would
    /// name it in agrirouter's UI).
    public var tans: [String: String]
    /// The application and certification version ids it expects; nil accepts any.
    public var applicationID: String?
    public var certificationVersionID: String?
    /// How long an answer waits in an outbox before it is dropped, as agrirouter's 5 minutes.
    public var outboxLifetime: Double = AgrirouterLimits.outboxLifetime
    /// The largest payload accepted, in bytes of protobuf: the SDKs' chunk size, whose base64 stays
    /// within 1,024,000 characters. Larger ones get HTTP 413.
    public var maximumPayloadBytes = AgrirouterLimits.payloadBytes
    /// For tests of what a client accepts: rewrites each successful onboarding answer (its JSON body)
    /// before it is sent, into anything at all.
    public var rewriteOnboardingAnswer: (@Sendable (Data) -> Data)?
    /// Told of every gps:info it accepts, with the sender's endpoint id and the message id, before
    /// the acknowledgement goes to the sender's outbox: a record for checks from outside the process.
    public var onAcceptedGPSInfo:
        (
            @Sendable (_ endpointID: String, _ messageID: String, _ list: Agrirouter_Technicalmessagetype_GPSList) ->
                Void
        )?
    /// The same for every device description and TimeLog it accepts, with its technical message
    /// type and raw payload. A description nobody receives (VAL_000004) counts as accepted.
    /// Runs Debian's mosquitto beside the REST gateway, so that endpoints can onboard for MQTT
    /// (gateway id 2).
    public var mqtt = false
    public var onAcceptedEFDI:
        (
            @Sendable (_ endpointID: String, _ messageID: String, _ technicalMessageType: String, _ payload: Data) ->
                Void
        )?
    /// The response codes it answers with: as DKE's documentation and SDK tests give them, or as this
    /// local agrirouter gave them before (one of them, 0 on a push, seen in a recorded reply), for
    /// tests that a client copes with both.
    public var responseCodes: SimResponseCodes = .documented

    public init(tans: [String: String], applicationID: String? = nil, certificationVersionID: String? = nil) {
        self.tans = tans
        self.applicationID = applicationID
        self.certificationVersionID = certificationVersionID
    }
}

/// Which response codes the local agrirouter answers with where they have differed.
public enum SimResponseCodes: Sendable, Equatable {
    /// A published message 201, a push notification 200, a successful feed delete 201.
    case documented
    /// A published message 200, a push notification 0 (as in the recorded push of DKE's Java SDK
    /// tests), a successful feed delete 200.
    case earlier

    /// The code of the ACK to a message published or sent.
    var published: Int32 { self == .documented ? 201 : 200 }
    /// A push notification's code.
    var push: Int32 { self == .documented ? 200 : 0 }
    /// The code of a feed delete that deleted something.
    var deleted: Int32 { self == .documented ? 201 : 200 }
}

/// Misbehaviour on command, for tests of the client's error handling.
public enum SimFault: Sendable, Equatable {
    /// Answer the next `count` gateway requests with HTTP 503.
    case serviceUnavailable(count: Int)
    /// Wait this long before answering the next gateway request.
    case stall(seconds: Double)
    /// Handle the next POST that carries gps:info, then wait this long before answering it.
    case stallPublish(seconds: Double)
    /// Empty the outbox for the next outbox GET, then wait this long before answering it: the
    /// answers are gone from agrirouter whether or not the client stays to read them.
    case stallOutbox(seconds: Double)
    /// Read the next gateway request, then close the connection without an answer.
    case dropAfterBody
    /// Handle the next measures request in full (its answers go to the outbox), then close the
    /// connection without an HTTP answer: the request arrived, and the client cannot know it.
    case takeThenDrop
    /// Answer the next message with ACK_WITH_FAILURE and this code.
    case ackWithFailure(code: String)
    /// Answer the next message of this technical message type with ACK_WITH_FAILURE and this code.
    case refuse(technicalMessageType: String, code: String)
    /// Put no answers into outboxes until cleared.
    case silentOutbox
    /// Answer the next outbox GET with a body of this many bytes (a JSON array padded with spaces).
    case oversizedOutbox(bytes: Int)
}

/// A simple HTTP answer.
struct SimResponse: Sendable {
    var status: Int
    var body: Data = Data()
    var contentType = "application/json"
    /// Close the connection instead of answering.
    var drop = false
    var delay: Double = 0
    /// When above 0, the body is a JSON array of this many bytes, spaces between its brackets, written
    /// a chunk at a time as the client reads it: a client that stops reading costs the simulator only
    /// what it took, not the whole body made and encrypted at once.
    var filler = 0

    /// An empty body when the value cannot be written.
    static func json(_ status: Int, _ value: some Encodable) -> SimResponse {
        SimResponse(status: status, body: SimJSON.encode(value) ?? Data())
    }

    /// agrirouter's onboarding error body.
    static func onboardingError(_ status: Int, code: String, message: String) -> SimResponse {
        json(status, SimOnboardingRefusal(error: .init(code: code, message: message)))
    }
}

struct SimEndpoint: Sendable {
    var deviceID: String
    var externalID: String
    var sensorID: String
    var capabilityID: String
    var name: String
    var certificateSerial: String
    /// "3" for REST, "2" for MQTT: fixed at the first onboarding.
    var gatewayID = "3"
    var capabilities: [String: Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Direction]?
    var capabilitySpecification: Agrirouter_Request_Payload_Endpoint_CapabilitySpecification?
    var pushEnabled = false
    var subscriptions: Set<String> = []
    /// Team set context ids of the device descriptions this endpoint has published.
    var teamSets: Set<String> = []
    var seenMessageIDs: Set<String> = []
    var outbox: [(base64: String, expires: Date)] = []
    var feed: [Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage] = []
    /// Every message id the endpoint confirmed, with when.
    var confirmations: [(messageID: String, at: Date)] = []
    var sent: [DecodedRequest] = []
    /// When each of `sent` arrived.
    var arrivals: [Date] = []

    func accepts(_ type: String, receiving: Bool) -> Bool {
        guard let direction = capabilities?[type] else { return false }
        switch direction {
        case .sendReceive: return true
        case .send: return !receiving
        case .receive: return receiving
        default: return false
        }
    }
}
