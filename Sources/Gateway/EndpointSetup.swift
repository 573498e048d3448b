import Agrirouter
import SwiftProtobuf
import Foundation

/// The conversation after onboarding and at every start: capabilities (gps:info both ways, push on),
/// their ACK, then the subscription. Capabilities wipe subscriptions, so the order matters.
public struct EndpointSetup: Sendable {
    public var applicationID: String
    public var certificationVersionID: String
    /// How long to wait for each answer.
    public var answerTimeout: Double

    public init(applicationID: String, certificationVersionID: String, answerTimeout: Double = 120) {
        self.applicationID = applicationID
        self.certificationVersionID = certificationVersionID
        self.answerTimeout = answerTimeout
    }

    /// Runs the conversation. Returns the other outbox items seen meanwhile (pushes, late ACKs), which
    /// belong to whoever handles them next.
    public func run(on connection: AgrirouterConnection) async throws(GatewayError) -> [DecodedResponse] {
        var specification = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
        var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
        capability.technicalMessageType = TechnicalMessageType.gpsInfo
        capability.direction = .sendReceive
        specification.capabilities = [capability]
        specification.appCertificationID = applicationID
        specification.appCertificationVersionID = certificationVersionID
        specification.enablePushNotifications = .enabled
        var others = try await request(TechnicalMessageType.capabilities, payload: specification, on: connection)

        var subscription = Agrirouter_Request_Payload_Endpoint_Subscription()
        var item = Agrirouter_Request_Payload_Endpoint_Subscription.MessageTypeSubscriptionItem()
        item.technicalMessageType = TechnicalMessageType.gpsInfo
        subscription.technicalMessageTypes = [item]
        others += try await request(TechnicalMessageType.subscription, payload: subscription, on: connection)
        return others
    }

    private func request(_ type: String, payload: any SwiftProtobuf.Message,
                         on connection: AgrirouterConnection) async throws(GatewayError) -> [DecodedResponse] {
        let sent = try await connection.send(type, payload: payload)
        let deadline = Date().addingTimeInterval(answerTimeout)
        var others: [DecodedResponse] = []
        while Date() < deadline {
            let (responses, _) = try await connection.fetchOutbox()
            for response in responses {
                guard response.applicationMessageID == sent.applicationMessageID else {
                    others.append(response)
                    continue
                }
                switch response.body {
                case .ack, .ackWithMessages: return others
                default: throw .refused(technicalMessageType: type, codes: response.messageCodes)
                }
            }
        }
        throw .noAnswer(technicalMessageType: type)
    }
}


