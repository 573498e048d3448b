import AgrirouterLink
import AgrirouterWire
import Bounds
import Foundation
import JSONText
import Spool
import StateDirectory
import StateFiles
import SwiftProtobuf

/// The conversation after onboarding, then daily or when what it says changes: capabilities (gps:info
/// and EFDI's TimeLogs and device descriptions, sent as far as they are published and received
/// always, push on), their ACK, then the subscription to all three. Capabilities wipe subscriptions, so the
/// order matters. `EndpointSetupRecord` remembers the last one across restarts, so a crash loop
/// does not send them every few seconds.
public struct EndpointSetup: Sendable {
    public var applicationID: String
    public var certificationVersionID: String
    /// How long to wait for each answer.
    public var answerTimeout: Double
    /// What the box publishes positions as.
    public var outputs: [SpoolOutput]

    public init(
        applicationID: String, certificationVersionID: String, answerTimeout: Double = 120,
        outputs: [SpoolOutput] = SpoolOutput.all
    ) {
        self.applicationID = applicationID
        self.certificationVersionID = certificationVersionID
        self.answerTimeout = answerTimeout
        self.outputs = outputs
    }

    /// The message types read from others, and whether each is also sent.
    var messageTypes: [(type: String, sent: Bool)] {
        [
            (TechnicalMessageType.gpsInfo, outputs.contains(.gpsInfo)),
            (TechnicalMessageType.deviceDescription, outputs.contains(.efdi)),
            (TechnicalMessageType.timeLog, outputs.contains(.efdi)),
            // The farm's fields, from farm software; received only. Adding it changes the fingerprint,
            // so a box set up before runs the set-up once more.
            (TechnicalMessageType.taskData, false),
        ]
    }

    /// Runs the conversation. The other outbox items its polls bring (pushes, late answers) wait in
    /// the connection for whoever they are for.
    public func run(on connection: AgrirouterConnection) async throws(GatewayError) {
        try await request(TechnicalMessageType.capabilities, payload: capabilities, on: connection)
        try await request(TechnicalMessageType.subscription, payload: subscription, on: connection)
    }

    var capabilities: Agrirouter_Request_Payload_Endpoint_CapabilitySpecification {
        var specification = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
        specification.capabilities = messageTypes.map { type, sent in
            var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
            capability.technicalMessageType = type
            capability.direction = sent ? .sendReceive : .receive
            return capability
        }
        specification.appCertificationID = applicationID
        specification.appCertificationVersionID = certificationVersionID
        specification.enablePushNotifications = .enabled
        return specification
    }

    var subscription: Agrirouter_Request_Payload_Endpoint_Subscription {
        var subscription = Agrirouter_Request_Payload_Endpoint_Subscription()
        subscription.technicalMessageTypes = messageTypes.map { type, _ in
            var item = Agrirouter_Request_Payload_Endpoint_Subscription.MessageTypeSubscriptionItem()
            item.technicalMessageType = type
            if type == TechnicalMessageType.timeLog {
                // Positions are what is read; agrirouter 2.0 ignores DDI filters, and the middleware
                // asks for every DDI of the ISO 11783-11 list all the same.
                item.position = true
                item.ddis = Array(0...675)
            }
            return item
        }
        return subscription
    }

    /// What the set-up says, for one endpoint, as a short stable digest (FNV-1a of the two payloads):
    /// a change of capabilities or subscription makes the stored record stale.
    public func fingerprint(endpointID: String) -> String {
        var bytes = Array(endpointID.utf8)
        bytes += (try? capabilities.serializedBytes() as [UInt8]) ?? []
        bytes += (try? subscription.serializedBytes() as [UInt8]) ?? []
        return String(FNV1a.hash(bytes), radix: 16)
    }

    /// Sends one message and polls until its answer comes. What the polls bring for the others stays
    /// in the connection for them.
    private func request(
        _ type: String, payload: any SwiftProtobuf.Message,
        on connection: AgrirouterConnection
    ) async throws(GatewayError) {
        let sent = try await connection.send(type, payload: payload, for: .setup)
        let deadline = Date().addingTimeInterval(answerTimeout)
        while Date() < deadline {
            // Over MQTT the answer comes by itself: wait for it rather than spin; over REST the poll keeps the spacing.
            await connection.waitForAnswers(atMost: 1)
            try await connection.poll()
            for response in await connection.answers(for: .setup)
            where response.applicationMessageID == sent.applicationMessageID {
                switch response.body {
                case .ack, .ackWithMessages: return
                default: throw .refused(technicalMessageType: type, codes: response.messageCodes)
                }
            }
        }
        throw .noAnswer(technicalMessageType: type)
    }
}

/// When the set-up was last acknowledged, and for what: `STATE-DIR/endpoint-setup.json`.
public struct EndpointSetupRecord: Codable, Sendable, Equatable {
    public var endpointID: String
    public var fingerprint: String
    /// Seconds since 1970.
    public var acknowledgedAt: Double

    public init(endpointID: String, fingerprint: String, acknowledgedAt: Date) {
        self.endpointID = endpointID
        self.fingerprint = fingerprint
        self.acknowledgedAt = acknowledgedAt.timeIntervalSince1970
    }

    /// The record, if it is there and readable; a damaged one reads as none (the set-up runs again).
    public static func read(from path: String) -> EndpointSetupRecord? {
        guard let bytes = try? StateFile.read(path, limit: 4096),
            let record = try? JSONDecoder().decode(EndpointSetupRecord.self, from: Data(bytes)),
            Bounds.date(secondsSince1970: record.acknowledgedAt) != nil
        else { return nil }
        return record
    }

    public func write(to path: String) throws {
        try StateFile.replace(path, with: Array(try JSONWriter.encoder().encode(self)))
    }

    /// When a set-up for `endpointID` saying `fingerprint` was acknowledged no more than `maximumAge`
    /// ago (and not in the future), by this record; nil when it must run again.
    public func stillValid(endpointID: String, fingerprint: String, maximumAge: Double, now: Date = Date()) -> Date? {
        let at = Date(timeIntervalSince1970: acknowledgedAt)
        guard self.endpointID == endpointID, self.fingerprint == fingerprint,
            now.timeIntervalSince(at) >= 0, now.timeIntervalSince(at) < maximumAge
        else { return nil }
        return at
    }
}
