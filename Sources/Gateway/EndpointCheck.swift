import AgrirouterLink
import AgrirouterWire
import Clocks
import Foundation

/// Whether agrirouter still knows this endpoint: someone may delete it in agrirouter's UI, and
/// agrirouter offboards endpoints idle for 18 months. dke:ping answers ACK while the endpoint
/// exists and ACK_WITH_FAILURE (404, VAL_000011) once it is gone. Pinged daily, and at once when a
/// message is refused as coming from an unknown endpoint or the certificate is refused repeatedly.
struct EndpointCheck: Sendable {
    static let unknownEndpoint = "VAL_000011"

    var interval: Double
    /// A ping unanswered this long is asked again: the outbox keeps answers 5 minutes.
    var answerTimeout: Double = AgrirouterLimits.outboxLifetime
    /// When the last ping went out, on the monotonic clock.
    private(set) var lastSent: Double?
    private var awaiting: String?
    /// Set once a ping, or the set-up, says the endpoint is gone; it does not come back by itself.
    private(set) var deletedAt: Date?
    private var wanted = false

    init(interval: Double) {
        self.interval = interval
    }

    /// Whether to send a ping now.
    mutating func isDue(uptimeNow now: Double) -> Bool {
        if awaiting != nil, let sent = lastSent, now - sent >= answerTimeout {
            (awaiting, wanted) = (nil, true)  // its answer was lost: ask again
        }
        guard awaiting == nil, deletedAt == nil else { return false }
        return wanted || lastSent.map { now - $0 >= interval } ?? true
    }

    mutating func sent(_ id: String, uptimeNow now: Double) {
        (awaiting, lastSent, wanted) = (id, now, false)
    }

    /// A ping that could not be sent is tried again at the next turn.
    mutating func notSent() { wanted = true }

    /// Evidence that the endpoint may be gone: a refusal with "endpoint unknown", or repeated 401/403.
    mutating func suspect(codes: [String]) {
        if codes.contains(Self.unknownEndpoint) { wanted = true }
    }

    mutating func suspectCertificateRefusals(_ count: Int, uptimeNow: Double) {
        if count >= 3, lastSent.map({ uptimeNow - $0 >= 300 }) ?? true { wanted = true }
    }

    /// Takes the ping's answer out of `responses`, if it is there, and returns the rest.
    mutating func absorb(_ responses: [DecodedResponse], now: Date) -> [DecodedResponse] {
        guard let id = awaiting else { return responses }
        var rest: [DecodedResponse] = []
        for response in responses {
            guard response.applicationMessageID == id else {
                rest.append(response)
                continue
            }
            awaiting = nil
            if case .ackWithFailure = response.body,
                response.envelope.responseCode == 404 || response.messageCodes.contains(Self.unknownEndpoint)
            {
                deletedAt = now
            }
        }
        return rest
    }

    /// The set-up itself was refused as from an unknown endpoint: as good as a ping's answer.
    mutating func setUpRefused(_ error: GatewayError, now: Date) {
        if case .refused(_, let codes) = error, codes.contains(Self.unknownEndpoint) { deletedAt = now }
    }
}
