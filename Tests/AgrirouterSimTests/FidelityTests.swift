import AgrirouterLink
import AgrirouterWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

@testable import AgrirouterSim

/// Where the local agrirouter once answered otherwise than DKE's interface documentation and the
/// integration tests of DKE's SDKs (written against agrirouter QA) say agrirouter answers: one test
/// per difference, against the documented answer (see docs/agrirouter.md, "How faithful it is").
@Suite(.serialized, .timeLimit(.minutes(2)))
struct FidelityTests {
    /// A and B onboarded, each with gps:info both ways and push on, B subscribed to gps:info.
    static func pair(_ codes: SimResponseCodes = .documented) async throws -> (AgrirouterSimulator, Endpoint, Endpoint)
    {
        var configuration = SimConfiguration(tans: ["TAN0000001": "A", "TAN0000002": "B"])
        configuration.responseCodes = codes
        let simulator = try await AgrirouterSimulator.start(configuration)
        var a = try await onboard(simulator, tan: "TAN0000001", id: "urn:fidelity:a")
        var b = try await onboard(simulator, tan: "TAN0000002", id: "urn:fidelity:b")
        _ = try await a.send(TechnicalMessageType.capabilities, payload: capabilities())
        _ = try await b.send(TechnicalMessageType.capabilities, payload: capabilities())
        _ = try await b.send(TechnicalMessageType.subscription, payload: gpsSubscription())
        _ = try await a.outbox()
        _ = try await b.outbox()
        return (simulator, a, b)
    }

    /// `sender` publishes a gps:info; the message id of its push to `receiver`.
    static func pushedMessageID(from sender: inout Endpoint, to receiver: Endpoint) async throws -> String {
        _ = try await sender.send(TechnicalMessageType.gpsInfo, mode: .publish, payload: gpsList(latitude: 52))
        guard case .pushNotification(let push)? = try await receiver.outbox().first?.body else { throw PushMissing() }
        return try #require(push.messages.first?.header.messageID)
    }

    struct PushMissing: Error {}

    @Test(
        "a push notification's response code is 200 (0 in the earlier answers)",
        arguments: [SimResponseCodes.documented, .earlier])
    func pushCode(codes: SimResponseCodes) async throws {
        let expected: Int32 = codes == .documented ? 200 : 0
        let (simulator, a, b) = try await Self.pair(codes)
        var sender = a
        try await tearingDown({ await simulator.shutdown() }) {
            _ = try await sender.send(TechnicalMessageType.gpsInfo, mode: .publish, payload: gpsList(latitude: 52))
            let pushed = try #require(try await b.outbox().first)
            #expect(pushed.envelope.type == .pushNotification && pushed.envelope.responseCode == expected)
        }
    }

    @Test(
        "a published message is answered ACK 201 (200 in the earlier answers)",
        arguments: [SimResponseCodes.documented, .earlier])
    func publishCode(codes: SimResponseCodes) async throws {
        let expected: Int32 = codes == .documented ? 201 : 200
        let (simulator, a, _) = try await Self.pair(codes)
        var sender = a
        try await tearingDown({ await simulator.shutdown() }) {
            let sent = try await sender.send(
                TechnicalMessageType.gpsInfo, mode: .publish, payload: gpsList(latitude: 52))
            let answer = try #require(try await sender.outbox().first)
            #expect(
                answer.body == .ack && answer.envelope.responseCode == expected
                    && answer.applicationMessageID == sent.applicationMessageID)
        }
    }

    @Test(
        "a feed delete: 201 with VAL_000209 and the id in args; nothing to delete: 204, \"Feed does not contain any data to be deleted.\""
    )
    func feedDelete() async throws {
        let (simulator, a, b) = try await Self.pair()
        var (sender, receiver) = (a, b)
        try await tearingDown({ await simulator.shutdown() }) {
            let id = try await Self.pushedMessageID(from: &sender, to: receiver)
            var delete = Agrirouter_Feed_Request_MessageDelete()
            delete.messageIds = [id]
            _ = try await receiver.send(TechnicalMessageType.feedDelete, payload: delete)
            let deleted = try #require(try await receiver.outbox().first)
            guard case .ackWithMessages(let messages) = deleted.body else {
                Issue.record("\(deleted.body)")
                return
            }
            #expect(deleted.envelope.responseCode == 201)
            #expect(messages.map(\.messageCode) == ["VAL_000209"] && messages.first?.args == ["messageId": id])
            #expect(messages.first?.message == "Message %messageId% deleted")

            _ = try await receiver.send(TechnicalMessageType.feedDelete, payload: delete)
            let nothing = try #require(try await receiver.outbox().first)
            guard case .ackWithMessages(let none) = nothing.body else {
                Issue.record("\(nothing.body)")
                return
            }
            #expect(nothing.envelope.responseCode == 204 && none.map(\.messageCode) == ["VAL_000208"])
            #expect(none.first?.message == "Feed does not contain any data to be deleted.")
        }
    }

    @Test("a feed confirm: 200, one message per id with the id in args, the text error-codes.adoc gives")
    func feedConfirm() async throws {
        let (simulator, a, b) = try await Self.pair()
        var (sender, receiver) = (a, b)
        try await tearingDown({ await simulator.shutdown() }) {
            let id = try await Self.pushedMessageID(from: &sender, to: receiver)
            var confirm = Agrirouter_Feed_Request_MessageConfirm()
            confirm.messageIds = [id, "no-such-message"]
            _ = try await receiver.send(TechnicalMessageType.feedConfirm, payload: confirm)
            let answer = try #require(try await receiver.outbox().first)
            guard case .ackWithMessages(let messages) = answer.body else {
                Issue.record("\(answer.body)")
                return
            }
            #expect(answer.envelope.responseCode == 200)
            #expect(messages.map(\.messageCode) == ["VAL_000206", "VAL_000205"])
            #expect(messages.map(\.args) == [["messageId": id], ["messageId": "no-such-message"]])
            #expect(
                messages.map(\.message) == [
                    "Message %messageId% delivery had been confirmed.",
                    "Message %messageId% not found. This ID will be ignored.",
                ])
        }
    }

    @Test("the feed header's sent_timestamp is the sender's own timestamp; created_at is when it reached the feed")
    func sentTimestamp() async throws {
        let (simulator, a, b) = try await Self.pair()
        var receiver = b
        try await tearingDown({ await simulator.shutdown() }) {
            var encoder = MessageEncoder()
            let recorded = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3600).rounded(.down))
            let message = try encoder.encode(
                technicalMessageType: TechnicalMessageType.gpsInfo, mode: .publish,
                payload: gpsList(latitude: 52), at: recorded)
            let before = Date().addingTimeInterval(-1)
            try await a.post([message])
            guard case .pushNotification(let push)? = try await receiver.outbox().first?.body else {
                Issue.record("no push")
                return
            }
            let header = try #require(push.messages.first?.header)
            #expect(header.sentTimestamp.seconds == Int64(recorded.timeIntervalSince1970))
            #expect(header.createdAt.date >= before && header.createdAt.date <= Date().addingTimeInterval(1))

            var query = Agrirouter_Feed_Request_MessageQuery()
            query.messageIds = [header.messageID]
            _ = try await receiver.send(TechnicalMessageType.feedMessageQuery, payload: query)
            guard case .feedMessages(let page)? = try await receiver.outbox().first?.body else {
                Issue.record("no feed answer")
                return
            }
            #expect(page.messages.first?.header.sentTimestamp.seconds == Int64(recorded.timeIntervalSince1970))
        }
    }

    @Test(
        "onboarding as the documented request of a communication unit, without UTCTimestamp or timeZone, is taken; a future UTCTimestamp is not"
    )
    func onboardingWithoutTimestamp() async throws {
        let state = SimState(
            configuration: SimConfiguration(tans: ["TAN0000001": "A", "TAN0000002": "B"]),
            authority: try CertificateAuthority())
        let documented = try JSONSerialization.data(withJSONObject: [
            "id": "mydeviceid", "applicationId": "e0eb00ff-e2ef-4429-85f5-2559aceedd6d",
            "certificationVersionId": "e0eb00ff-e2ef-4429-85f5-2559aceedd6d",
            "gatewayId": "3", "certificateType": "PEM",
        ])
        #expect(await state.onboard(authorization: "Bearer TAN0000001", body: documented).status == 201)
        let future = await state.onboard(
            authorization: "Bearer TAN0000002", body: onboardingBody(id: "x", timestamp: Date().addingTimeInterval(120))
        )
        #expect(future.status == 400 && String(decoding: future.body, as: UTF8.self).contains("0110"))
    }

    @Test(
        "a measure's timestamp is read as seconds, milliseconds or ISO 8601, and in each form refused ahead of the clock"
    )
    func measureTimestamps() async throws {
        let now = Date()
        let ahead = now.addingTimeInterval(3600)
        #expect(
            SimState.measureTime(String(Int(now.timeIntervalSince1970))) == now.timeIntervalSince1970.rounded(.down))
        #expect(SimState.measureTime("1547668247000") == 1_547_668_247)
        #expect(SimState.measureTime("2019-01-16T19:50:47.000000Z") == 1_547_668_247)
        for bad in ["", "soon", "-5", "1e9"] { #expect(SimState.measureTime(bad) == nil, "\(bad)") }

        let (simulator, a, _) = try await Self.pair()
        var sender = a
        try await tearingDown({ await simulator.shutdown() }) {
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for (form, refused) in [
                (iso.string(from: ahead), true), (String(Int64(ahead.timeIntervalSince1970 * 1000)), true),
                (iso.string(from: now.addingTimeInterval(-10)), false),
            ] {
                let message = try sender.encoder.encode(
                    technicalMessageType: TechnicalMessageType.gpsInfo, mode: .publish, payload: gpsList(latitude: 52))
                let body = try JSONSerialization.data(withJSONObject: [
                    "sensorAlternateId": sender.sensorID, "capabilityAlternateId": sender.capabilityID,
                    "measures": [["message": message.base64, "timestamp": form]],
                ])
                _ = try await sender.client.send(
                    method: "POST", url: sender.measuresURL, body: body,
                    headers: ["Content-Type: application/json"], credentials: sender.credentials)
                let answer = try #require(try await sender.outbox().first)
                #expect((answer.messageCodes == ["VAL_000300"]) == refused, "\(form): \(answer.body)")
            }
        }
    }
}
