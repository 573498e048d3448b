import AgrirouterLink
import AgrirouterWire
import Foundation
import GNSS
import Gateway
import SwiftASN1
import SwiftProtobuf
import TestSupport
import Testing
import X509

@testable import AgrirouterSim

/// An endpoint onboarded at the simulator, talking to it through libcurl over real TLS.
struct Endpoint {
    var deviceID: String
    var measuresURL: String
    var commandsURL: String
    var sensorID: String
    var capabilityID: String
    var credentials: ClientCredentials
    var client: HTTPSClient
    var encoder = MessageEncoder()

    mutating func send(
        _ type: String, mode: Agrirouter_Request_RequestEnvelope.Mode = .direct,
        payload: (any SwiftProtobuf.Message)?
    ) async throws -> EncodedMessage {
        let message = try encoder.encode(technicalMessageType: type, mode: mode, payload: payload)
        try await post([message])
        return message
    }

    func post(_ messages: [EncodedMessage]) async throws {
        let body = try MeasuresBody(
            sensorAlternateID: sensorID, capabilityAlternateID: capabilityID, messages: messages
        ).json()
        _ = try await client.send(
            method: "POST", url: measuresURL, body: body, headers: ["Content-Type: application/json"],
            credentials: credentials)
    }

    func outbox() async throws -> [DecodedResponse] {
        let response = try await client.send(method: "GET", url: commandsURL, credentials: credentials)
        return try OutboxItem.list(from: response.body).map { try OutboxDecoder.decode(base64: $0.command.message) }
    }
}

func onboardingBody(id: String, timestamp: Date = Date().addingTimeInterval(-10), drop field: String? = nil) -> Data {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    var body: [String: String] = [
        "id": id, "applicationId": "app", "certificationVersionId": "version", "gatewayId": "3",
        "certificateType": "PEM", "UTCTimestamp": formatter.string(from: timestamp), "timeZone": "+00:00",
    ]
    if let field { body[field] = nil }
    return try! JSONSerialization.data(withJSONObject: body)
}

func onboard(_ simulator: AgrirouterSimulator, tan: String, id: String) async throws -> Endpoint {
    let client = HTTPSClient(trustedCAPEM: simulator.caCertificatePEM, connectTimeout: 5, totalTimeout: 20)
    let response = try await client.send(
        method: "POST", url: simulator.onboardingURL, body: onboardingBody(id: id),
        headers: ["Authorization: Bearer \(tan)", "Content-Type: application/json"])
    let reply = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: Any])
    let criteria = try #require(reply["connectionCriteria"] as? [String: String])
    let authentication = try #require(reply["authentication"] as? [String: String])
    let credentials = try #require(
        ClientCredentials(agrirouterPEM: authentication["certificate"] ?? "", secret: authentication["secret"] ?? ""))
    return Endpoint(
        deviceID: try #require(reply["deviceAlternateId"] as? String),
        measuresURL: try #require(criteria["measures"]), commandsURL: try #require(criteria["commands"]),
        sensorID: try #require(reply["sensorAlternateId"] as? String),
        capabilityID: try #require(reply["capabilityAlternateId"] as? String), credentials: credentials, client: client)
}

func capabilities(push: Bool = true) -> Agrirouter_Request_Payload_Endpoint_CapabilitySpecification {
    var specification = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
    var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
    capability.technicalMessageType = TechnicalMessageType.gpsInfo
    capability.direction = .sendReceive
    specification.capabilities = [capability]
    specification.appCertificationID = "app"
    specification.appCertificationVersionID = "version"
    specification.enablePushNotifications = push ? .enabled : .disabled
    return specification
}

func gpsSubscription() -> Agrirouter_Request_Payload_Endpoint_Subscription {
    var subscription = Agrirouter_Request_Payload_Endpoint_Subscription()
    var item = Agrirouter_Request_Payload_Endpoint_Subscription.MessageTypeSubscriptionItem()
    item.technicalMessageType = TechnicalMessageType.gpsInfo
    subscription.technicalMessageTypes = [item]
    return subscription
}

func gpsList(latitude: Double) -> Agrirouter_Technicalmessagetype_GPSList {
    let report = PositionReport(
        time: Date(), gpsdMode: 3, gpsdStatus: 3, latitude: latitude, longitude: 11.5, altitudeHAE: 500)
    var list = Agrirouter_Technicalmessagetype_GPSList()
    list.gpsEntries = [GPSEntry(PositionSample(sampledAt: Date(), state: report.fixState, report: report))]
    return list
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct SimulatorTests {
    @Test("a client's time is read in UTC or with an offset, to the same instant; anything else is refused")
    func clientTimes() {
        let instant = Date(timeIntervalSince1970: 1_774_494_538)  // 2026-03-26T03:08:58Z
        #expect(ISO8601.parse("2026-03-26T03:08:58Z") == instant)
        #expect(ISO8601.parse("2026-03-26T05:08:58+02:00") == instant)
        #expect(ISO8601.parse("2026-03-25T23:38:58-03:30") == instant)
        #expect(ISO8601.parse("2026-03-26T05:08:58.250+02:00") == instant.addingTimeInterval(0.25))
        for bad in [
            "2026-03-26T03:08:58", "2026-03-26T03:08:58+2:00", "2026-03-26T03:08:58+24:00", "2026-03-26 03:08:58Z",
            "+02:00", "",
        ] {
            #expect(ISO8601.parse(bad) == nil, "\(bad)")
        }
    }

    @Test func clientCertificateIsRequiredAndMustComeFromTheSimulatorsCA() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Tractor"]))
        let other = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000002": "Stranger"]))
        try await tearingDown({
            await simulator.shutdown()
            await other.shutdown()
        }) {
            let endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")
            #expect(try await endpoint.outbox().isEmpty)

            let stranger = try await onboard(other, tan: "TAN0000002", id: "urn:agrigps:b")
            for credentials in [nil, stranger.credentials] as [ClientCredentials?] {
                await #expect {
                    _ = try await endpoint.client.send(
                        method: "GET", url: endpoint.commandsURL, credentials: credentials)
                } throws: { error in
                    guard case .clientCertificateRejected = error as? TransportError else { return false }
                    return true
                }
            }
            let wrongSecret = ClientCredentials(
                certificatePEM: endpoint.credentials.certificatePEM,
                encryptedKeyPEM: endpoint.credentials.encryptedKeyPEM, secret: "not the secret")
            await #expect {
                _ = try await endpoint.client.send(method: "GET", url: endpoint.commandsURL, credentials: wrongSecret)
            } throws: { error in
                guard case .credentialsUnusable = error as? TransportError else { return false }
                return true
            }
            // A client that trusts only the system's CAs does not trust the simulator: no insecure fallback.
            await #expect {
                _ = try await HTTPSClient().send(
                    method: "GET", url: endpoint.commandsURL, credentials: endpoint.credentials)
            } throws: { error in
                guard case .serverNotTrusted = error as? TransportError else { return false }
                return true
            }
            #expect(!"\(endpoint.credentials)".contains(endpoint.credentials.secret))
        }
    }

    @Test func onboardingErrorsUseAgrirouterCodes() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Tractor", "TAN0000002": "Again"]))
        try await tearingDown({ await simulator.shutdown() }) {
            let client = HTTPSClient(trustedCAPEM: simulator.caCertificatePEM)
            func attempt(tan: String, body: Data) async -> (Int, String?) {
                do {
                    let response = try await client.send(
                        method: "POST", url: simulator.onboardingURL, body: body,
                        headers: ["Authorization: Bearer \(tan)", "Content-Type: application/json"])
                    return (response.status, nil)
                } catch {
                    return (0, "\(error)")
                }
            }
            // The transport turns 4xx into typed errors; the onboarding body is read from the simulator's state here.
            let state = SimState(
                configuration: SimConfiguration(tans: ["TAN0000003": "Direct"]), authority: try CertificateAuthority())
            func code(_ response: SimResponse) -> String? {
                ((try? JSONSerialization.jsonObject(with: response.body) as? [String: Any])?["error"] as? [String: Any])?[
                    "code"] as? String
            }
            #expect(code(await state.onboard(authorization: "Bearer WRONG", body: onboardingBody(id: "x"))) == "0401")
            #expect(
                code(
                    await state.onboard(
                        authorization: "Bearer TAN0000003",
                        body: onboardingBody(id: "x", timestamp: Date().addingTimeInterval(120)))) == "0110")
            #expect(
                code(
                    await state.onboard(
                        authorization: "Bearer TAN0000003",
                        body: onboardingBody(id: "x", drop: "certificationVersionId"))) == "0100")
            #expect(
                await state.onboard(authorization: "Bearer TAN0000003", body: onboardingBody(id: "x")).status == 201)
            #expect(
                code(await state.onboard(authorization: "Bearer TAN0000003", body: onboardingBody(id: "x"))) == "0401",
                "a TAN works once")

            let (status, error) = await attempt(tan: "WRONG", body: onboardingBody(id: "y"))
            #expect(status == 0 && error == "\(TransportError.unauthorized)")

            // Re-onboarding with the same id keeps the endpoint; the old certificate stops working.
            let first = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:same")
            let again = try await onboard(simulator, tan: "TAN0000002", id: "urn:agrigps:same")
            #expect(again.deviceID == first.deviceID)
            #expect(try await again.outbox().isEmpty)
            await #expect(throws: TransportError.unauthorized) { _ = try await first.outbox() }
        }
    }

    @Test func capabilitiesSubscriptionPublishAndPush() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Tractor A", "TAN0000002": "Tractor B"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var a = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")
            var b = try await onboard(simulator, tan: "TAN0000002", id: "urn:agrigps:b")

            let early = try await b.send(TechnicalMessageType.subscription, payload: gpsSubscription())
            let refused = try await b.outbox()
            #expect(refused.map(\.applicationMessageID) == [early.applicationMessageID])
            #expect(refused.first?.messageCodes == ["VAL_000006"], "subscription before capabilities")

            for endpoint in [a, b] {
                var endpoint = endpoint
                let sent = try await endpoint.send(TechnicalMessageType.capabilities, payload: capabilities())
                let answer = try await endpoint.outbox()
                #expect(
                    answer.first?.envelope.responseCode == 201 && answer.first?.body == .ack
                        && answer.first?.applicationMessageID == sent.applicationMessageID)
                _ = try await endpoint.send(TechnicalMessageType.capabilities, payload: capabilities())
                #expect(try await endpoint.outbox().first?.messageCodes == ["VAL_000022"])
                _ = try await endpoint.send(TechnicalMessageType.subscription, payload: gpsSubscription())
                #expect(try await endpoint.outbox().first?.body == .ack)
                if endpoint.deviceID == a.deviceID { a = endpoint } else { b = endpoint }
            }
            #expect(await simulator.subscriptions(endpoint: b.deviceID) == [TechnicalMessageType.gpsInfo])

            let published = try await a.send(
                TechnicalMessageType.gpsInfo, mode: .publish, payload: gpsList(latitude: 48.25))
            let ack = try await a.outbox()
            #expect(
                ack.count == 1 && ack.first?.body == .ack
                    && ack.first?.applicationMessageID == published.applicationMessageID)
            let pushed = try await b.outbox()
            guard case .pushNotification(let push)? = pushed.first?.body else {
                Issue.record("no push: \(pushed)")
                return
            }
            let message = try #require(push.messages.first)
            #expect(
                message.header.senderID == a.deviceID
                    && message.header.technicalMessageType == TechnicalMessageType.gpsInfo)
            #expect(try GPSInfoContent.gpsList(from: message.content.value).gpsEntries.map(\.positionNorth) == [48.25])

            _ = try await b.send(
                TechnicalMessageType.listEndpoints, payload: Agrirouter_Request_Payload_Account_ListEndpointsQuery())
            guard case .endpoints(let listing)? = try await b.outbox().first?.body else {
                Issue.record("no listing")
                return
            }
            #expect(listing.endpoints.map(\.endpointName) == ["Tractor A", "Tractor B"])
            #expect(
                await simulator.sentMessages(endpoint: a.deviceID).map(\.envelope.technicalMessageType)
                    == [
                        TechnicalMessageType.capabilities, TechnicalMessageType.capabilities,
                        TechnicalMessageType.subscription, TechnicalMessageType.gpsInfo,
                    ])
        }
    }

    @Test func invalidMessagesAreAnsweredAsAgrirouterWould() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")
            _ = try await endpoint.send(TechnicalMessageType.capabilities, payload: capabilities())
            _ = try await endpoint.outbox()

            // Undecodable: VAL_000300 with no application_message_id.
            let garbage = EncodedMessage(
                applicationMessageID: "", sequenceNumber: 0, technicalMessageType: "",
                base64: Data([1, 2, 3]).base64EncodedString(), payloadSize: 0)
            try await endpoint.post([garbage])
            let undecodable = try await endpoint.outbox()
            #expect(undecodable.first?.applicationMessageID == nil && undecodable.first?.messageCodes == ["VAL_000300"])

            // A repeated application_message_id, and gps:info sent as base64 text.
            let once = try await endpoint.send(TechnicalMessageType.ping, payload: nil)
            try await endpoint.post([once])
            let repeated = try await endpoint.outbox()
            #expect(repeated.count == 2)
            #expect(repeated.first?.body == .ack)
            #expect(repeated.last?.messageCodes == ["VAL_000300"], "a repeated application_message_id is refused")
            var request = try RequestDecoder.decode(
                base64: try endpoint.encoder.encode(
                    technicalMessageType: TechnicalMessageType.gpsInfo, mode: .publish, payload: gpsList(latitude: 1)
                ).base64)
            var details = Google_Protobuf_Any()
            details.typeURL = request.payloadTypeURL
            details.value = Data(request.payload.base64EncodedString().utf8)
            var wrapper = Agrirouter_Request_RequestPayloadWrapper()
            wrapper.details = details
            request.envelope.applicationMessageID = UUID().uuidString.lowercased()
            let frames = DelimitedFrames.join([try request.envelope.serializedBytes(), try wrapper.serializedBytes()])
            try await endpoint.post([
                EncodedMessage(
                    applicationMessageID: request.envelope.applicationMessageID, sequenceNumber: 9,
                    technicalMessageType: TechnicalMessageType.gpsInfo, base64: frames.base64EncodedString(),
                    payloadSize: 0)
            ])
            let base64Answer = try await endpoint.outbox()
            guard case .ackWithFailure(let messages)? = base64Answer.first?.body else {
                Issue.record("base64 gps:info accepted")
                return
            }
            #expect(messages.first?.message.contains("not base64") == true)

            // Over the SDKs' payload cap: HTTP 413.
            let huge = EncodedMessage(
                applicationMessageID: "x", sequenceNumber: 1, technicalMessageType: "gps:info",
                base64: String(repeating: "A", count: SimState.maximumMessageCharacters + 8192), payloadSize: 0)
            await #expect(throws: TransportError.payloadTooLarge) { try await endpoint.post([huge]) }
        }
    }

    @Test("a client's requests share one TLS connection; one the server closes is replaced")
    func requestsShareOneConnection() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")
            #expect(simulator.gatewayConnections == 0)
            for _ in 0..<3 {
                _ = try await endpoint.send(TechnicalMessageType.ping, payload: nil)
                _ = try await endpoint.outbox()
            }
            #expect(simulator.gatewayConnections == 1, "six requests, one handshake")

            // The server closes the connection without answering, as an idle one is closed: libcurl
            // sends the request again on a new connection, once.
            await simulator.inject(.dropAfterBody)
            #expect(try await endpoint.outbox().isEmpty)
            #expect(simulator.gatewayConnections == 2)
            _ = try await endpoint.outbox()
            #expect(simulator.gatewayConnections == 2)
        }
    }

    @Test(
        "a POST taken by the server and then cut off is never sent again behind the client's back, and is reported as possibly arrived"
    )
    func aPostCutOffAfterArrivalIsNotResent() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")
            _ = try await endpoint.outbox()  // the connection is now a reused one
            let before = await simulator.sentMessages(endpoint: endpoint.deviceID).count
            await simulator.inject(.takeThenDrop)
            await #expect {
                _ = try await endpoint.send(TechnicalMessageType.ping, payload: nil)
            } throws: { error in
                guard case .brokenAfterSending = error as? TransportError else { return false }
                return true
            }
            #expect(
                await simulator.sentMessages(endpoint: endpoint.deviceID).count == before + 1, "taken once, not resent")
            #expect(try await endpoint.outbox().count == 1, "its answer waits in the outbox")
        }
    }

    @Test(
        "outages: a hung gateway takes requests and never answers them; a suspended one refuses connections until resumed"
    )
    func outages() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")
            #expect(try await endpoint.outbox().isEmpty)

            await simulator.stallGateway(for: 1.5)
            let hung = HTTPSClient(trustedCAPEM: simulator.caCertificatePEM, connectTimeout: 2, totalTimeout: 5)
            await #expect(throws: TransportError.self) {
                _ = try await hung.send(method: "GET", url: endpoint.commandsURL, credentials: endpoint.credentials)
            }
            #expect(try await endpoint.outbox().isEmpty, "answers again once the time is up")

            await simulator.suspendGateway()
            await #expect {
                _ = try await HTTPSClient(trustedCAPEM: simulator.caCertificatePEM).send(
                    method: "GET", url: endpoint.commandsURL,
                    credentials: endpoint.credentials)
            } throws: { error in
                guard case .cannotConnect = error as? TransportError else { return false }
                return true
            }
            try await simulator.resumeGateway()
            _ = try await endpoint.send(TechnicalMessageType.ping, payload: nil)
            #expect(try await endpoint.outbox().count == 1, "the same port, the same state")
        }
    }

    @Test("requests waiting on a stalled gateway wait together on the one HTTP thread, not on a thread each")
    func requestsWaitOnOneThread() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            let endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")
            for _ in 0..<6 { await simulator.inject(.stall(seconds: 2)) }  // each answered 2 s late
            let client = HTTPSClient(trustedCAPEM: simulator.caCertificatePEM, connectTimeout: 5, totalTimeout: 30)
            let started = ContinuousClock.now
            let requests = (0..<6).map { _ in
                Task {
                    try await client.send(method: "GET", url: endpoint.commandsURL, credentials: endpoint.credentials)
                }
            }
            try await Task.sleep(for: .milliseconds(500))
            #expect(ThreadCensus.count(named: "agrigps-http") == 1)
            for request in requests {
                #expect(try await request.value.status == 200)
            }
            // Together: six in turn would take six stalls.
            #expect(ContinuousClock.now - started < .seconds(8))
        }
    }

    @Test(
        "a cancellable request waiting on a hung gateway ends when its task is cancelled: a GET as not sent, a POST whose body went out as maybe taken; any other waits"
    )
    func cancelledRequestsEnd() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            let endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")
            await simulator.stallGateway(for: 30)
            let client = HTTPSClient(trustedCAPEM: simulator.caCertificatePEM, connectTimeout: 5, totalTimeout: 60)
            for (method, body) in [("GET", nil), ("POST", Data("{}".utf8))] as [(String, Data?)] {
                let started = ContinuousClock.now
                let request = Task {
                    try await client.send(
                        method: method, url: method == "GET" ? endpoint.commandsURL : endpoint.measuresURL, body: body,
                        credentials: endpoint.credentials, cancellable: true)
                }
                try await Task.sleep(for: .milliseconds(500))
                request.cancel()
                let result = await request.result
                let ended = ContinuousClock.now - started
                #expect(ended < .seconds(5), "\(method) ended \(ended) after it began, not at the 60 s timeout")
                switch (method, result) {
                case ("GET", .failure(TransportError.stopping)), ("POST", .failure(TransportError.brokenAfterSending)):
                    break
                default: Issue.record("\(method): \(result)")
                }
            }
            // By default a request runs on: the outbox's answers it took must not be lost.
            let patient = Task {
                try await HTTPSClient(trustedCAPEM: simulator.caCertificatePEM, connectTimeout: 5, totalTimeout: 2)
                    .send(method: "GET", url: endpoint.commandsURL, credentials: endpoint.credentials)
            }
            let started = ContinuousClock.now
            try await Task.sleep(for: .milliseconds(300))
            patient.cancel()
            if case .success = await patient.result { Issue.record("a hung GET succeeded") }
            #expect(
                ContinuousClock.now - started > .milliseconds(1500), "ended by its own timeout, not the cancellation")
        }
    }

    @Test func faultsOnCommand() async throws {
        var configuration = SimConfiguration(tans: ["TAN0000001": "Tractor"])
        configuration.outboxLifetime = 0.3
        let simulator = try await AgrirouterSimulator.start(configuration)
        try await tearingDown({ await simulator.shutdown() }) {
            var endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:a")

            await simulator.inject(.serviceUnavailable(count: 1))
            await #expect(throws: TransportError.serverError(503)) { _ = try await endpoint.outbox() }
            #expect(try await endpoint.outbox().isEmpty)

            // A drop on a connection of its own is an error (a reused one is retried: see requestsShareOneConnection).
            await simulator.inject(.dropAfterBody)
            await #expect {
                _ = try await HTTPSClient(trustedCAPEM: simulator.caCertificatePEM).send(
                    method: "GET", url: endpoint.commandsURL,
                    credentials: endpoint.credentials)
            } throws: { error in
                guard case .connectionFailed = error as? TransportError else { return false }
                return true
            }

            await simulator.inject(.stall(seconds: 3))
            let impatient = HTTPSClient(trustedCAPEM: simulator.caCertificatePEM, connectTimeout: 2, totalTimeout: 1)
            await #expect(throws: TransportError.timedOut) {
                _ = try await impatient.send(
                    method: "POST", url: endpoint.measuresURL, body: Data("{}".utf8), credentials: endpoint.credentials)
            }

            await simulator.inject(.ackWithFailure(code: "VAL_000004"))
            _ = try await endpoint.send(TechnicalMessageType.ping, payload: nil)
            #expect(try await endpoint.outbox().first?.messageCodes == ["VAL_000004"])

            await simulator.inject(.silentOutbox)
            _ = try await endpoint.send(TechnicalMessageType.ping, payload: nil)
            #expect(try await endpoint.outbox().isEmpty)
            await simulator.clearFaults()

            // Answers not fetched within the outbox's lifetime are gone.
            _ = try await endpoint.send(TechnicalMessageType.ping, payload: nil)
            try await Task.sleep(for: .milliseconds(500))
            #expect(try await endpoint.outbox().isEmpty)
        }
    }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct SimulatorFeedTests {
    private func period(from: Date, to: Date) -> Agrirouter_Feed_Request_ValidityPeriod {
        var period = Agrirouter_Feed_Request_ValidityPeriod()
        period.sentFrom = Google_Protobuf_Timestamp(date: from)
        period.sentTo = Google_Protobuf_Timestamp(date: to)
        return period
    }

    @Test func feedQueryPagesConfirmAndDelete() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "A", "TAN0000002": "B"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var a = try await onboard(simulator, tan: "TAN0000001", id: "urn:a")
            var b = try await onboard(simulator, tan: "TAN0000002", id: "urn:b")
            _ = try await a.send(TechnicalMessageType.capabilities, payload: capabilities())
            _ = try await b.send(TechnicalMessageType.capabilities, payload: capabilities(push: false))
            _ = try await b.send(TechnicalMessageType.subscription, payload: gpsSubscription())
            _ = try await a.outbox()
            _ = try await b.outbox()
            for index in 0..<30 {
                _ = try await a.send(
                    TechnicalMessageType.gpsInfo, mode: .publish, payload: gpsList(latitude: Double(index)))
            }
            #expect(try await b.outbox().isEmpty, "push is off for B: nothing in its outbox")

            // Empty criteria are refused, as agrirouter does.
            _ = try await b.send(TechnicalMessageType.feedMessageQuery, payload: Agrirouter_Feed_Request_MessageQuery())
            _ = try await b.send(TechnicalMessageType.feedConfirm, payload: Agrirouter_Feed_Request_MessageConfirm())
            _ = try await b.send(TechnicalMessageType.feedDelete, payload: Agrirouter_Feed_Request_MessageDelete())
            #expect(try await b.outbox().map(\.messageCodes) == [["VAL_000017"], ["VAL_000017"], ["VAL_000018"]])

            var query = Agrirouter_Feed_Request_MessageQuery()
            query.validityPeriod = period(from: Date().addingTimeInterval(-900), to: Date().addingTimeInterval(5))
            _ = try await b.send(TechnicalMessageType.feedMessageQuery, payload: query)
            guard case .feedMessages(let page)? = try await b.outbox().first?.body else {
                Issue.record("no feed answer")
                return
            }
            #expect(page.messages.count == 25 && page.page.total == 2 && page.queryMetrics.totalMessagesInQuery == 30)
            #expect(
                try page.messages.map { try GPSInfoContent.gpsList(from: $0.content.value).gpsEntries[0].positionNorth }
                    == (0..<25).map(Double.init))

            var confirm = Agrirouter_Feed_Request_MessageConfirm()
            confirm.messageIds = page.messages.map(\.header.messageID) + ["unknown-id"]
            _ = try await b.send(TechnicalMessageType.feedConfirm, payload: confirm)
            let confirmed = try await b.outbox().first?.messageCodes ?? []
            #expect(confirmed.filter { $0 == "VAL_000206" }.count == 25 && confirmed.last == "VAL_000205")

            _ = try await b.send(TechnicalMessageType.feedMessageQuery, payload: query)
            guard case .feedMessages(let rest)? = try await b.outbox().first?.body else {
                Issue.record("no second page")
                return
            }
            #expect(rest.messages.count == 5 && rest.page.total == 1)

            var delete = Agrirouter_Feed_Request_MessageDelete()
            delete.senders = [a.deviceID]
            _ = try await b.send(TechnicalMessageType.feedDelete, payload: delete)
            #expect(try await b.outbox().first?.messageCodes == Array(repeating: "VAL_000209", count: 5))
            _ = try await b.send(TechnicalMessageType.feedDelete, payload: delete)
            let nothing = try await b.outbox().first
            #expect(nothing?.envelope.responseCode == 204 && nothing?.messageCodes == ["VAL_000208"])
            _ = try await b.send(TechnicalMessageType.feedMessageQuery, payload: query)
            let empty = try await b.outbox().first
            #expect(empty?.envelope.responseCode == 204)
        }
    }

    @Test func envelopeRulesAndUnknownTypes() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "A"]))
        try await tearingDown({ await simulator.shutdown() }) {
            var endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:a")
            var envelope = Agrirouter_Request_RequestEnvelope()
            envelope.applicationMessageID = UUID().uuidString.lowercased()
            envelope.applicationMessageSeqNo = 0
            envelope.technicalMessageType = TechnicalMessageType.ping
            let zero = DelimitedFrames.join([
                try envelope.serializedBytes(), try Agrirouter_Request_RequestPayloadWrapper().serializedBytes(),
            ])
            try await endpoint.post([
                EncodedMessage(
                    applicationMessageID: envelope.applicationMessageID, sequenceNumber: 0,
                    technicalMessageType: TechnicalMessageType.ping, base64: zero.base64EncodedString(), payloadSize: 0)
            ])
            guard case .ackWithFailure(let messages)? = try await endpoint.outbox().first?.body else {
                Issue.record("seq 0 accepted")
                return
            }
            #expect(messages.first?.message.contains("greater than 0") == true)
            _ = try await endpoint.send("dke:no_such_type", payload: nil)
            guard case .ackWithFailure(let unknown)? = try await endpoint.outbox().first?.body else {
                Issue.record("unknown type accepted")
                return
            }
            #expect(unknown.first?.message.contains("Unknown technical message type") == true)
            await #expect(throws: TransportError.notFound) {
                _ = try await endpoint.client.send(
                    method: "GET", url: endpoint.commandsURL + "/extra", credentials: endpoint.credentials)
            }
        }
    }
}

@Suite struct FutureTimestampTests {
    @Test("a message stamped more than a second ahead is refused, as agrirouter refuses it; a past one is not")
    func futureStampsAreRefused() throws {
        var encoder = MessageEncoder()
        let now = Date()
        func request(at time: Date) throws -> DecodedRequest {
            try RequestDecoder.decode(
                base64: try encoder.encode(
                    technicalMessageType: TechnicalMessageType.ping, mode: .direct, payload: nil, at: time
                ).base64)
        }
        #expect(
            SimState.futureTimestamp(
                try request(at: now.addingTimeInterval(-3600)), sentAt: now.timeIntervalSince1970 - 3600, now: now)
                == nil)
        #expect(
            SimState.futureTimestamp(try request(at: now.addingTimeInterval(0.5)), sentAt: nil, now: now) == nil,
            "within a second")
        #expect(
            SimState.futureTimestamp(try request(at: now.addingTimeInterval(7200)), sentAt: nil, now: now)?.contains(
                "envelope") == true)
        #expect(
            SimState.futureTimestamp(try request(at: now), sentAt: now.timeIntervalSince1970 + 60, now: now)?.contains(
                "measure") == true)
    }
}

/// What the field rig needs of the simulator: to be reached by another address than the one it listens
/// on, and a record of what it accepted that another process can read.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct SimulatorForOtherHostsTests {
    @Test func anAdvertisedAddressGoesIntoTheURLsAndTheServerCertificate() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Tractor"]), advertisedHost: "10.0.2.2")
        try await tearingDown({ await simulator.shutdown() }) {
            #expect(simulator.onboardingURL.hasPrefix("https://10.0.2.2:"))

            let authority = try CertificateAuthority()
            let names = { (host: String?) throws -> [GeneralName] in
                let certificate = try authority.issueServerCertificate(alsoFor: host).certificate
                return Array(try #require(try certificate.extensions.subjectAlternativeNames))
            }
            let loopback: [GeneralName] = [
                .dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
            ]
            #expect(try names(nil) == loopback)
            #expect(try names("127.0.0.1") == loopback)
            #expect(try names("10.0.2.2") == loopback + [.ipAddress(ASN1OctetString(contentBytes: [10, 0, 2, 2]))])
            #expect(try names("rig.example") == loopback + [.dnsName("rig.example")])
            #expect(CertificateAuthority.ipv4("10.0.2.256") == nil && CertificateAuthority.ipv4("10.0.2") == nil)
        }
    }

    @Test func acceptedPositionsAreRecordedBeforeTheyAreAcknowledged() async throws {
        let scratch = TemporaryDirectory("received")
        let path = scratch.file("received.jsonl")
        var configuration = SimConfiguration(tans: ["TAN0000001": "Tractor"])
        configuration.onAcceptedGPSInfo = try #require(ReceivedLog(path: path)).record
        let simulator = try await AgrirouterSimulator.start(configuration)
        try await tearingDown({ await simulator.shutdown() }) {
            var endpoint = try await onboard(simulator, tan: "TAN0000001", id: "urn:agrigps:received")
            _ = try await endpoint.send(TechnicalMessageType.capabilities, payload: capabilities())
            _ = try await endpoint.outbox()
            var list = gpsList(latitude: 48.25)
            list.gpsEntries.append(
                GPSEntry(
                    PositionSample(
                        sampledAt: Date(timeIntervalSince1970: 1_790_000_000.25), state: .noReceiver(.removed))))
            let published = try await endpoint.send(TechnicalMessageType.gpsInfo, mode: .publish, payload: list)
            #expect(try await endpoint.outbox().first?.body == .ack)

            let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            #expect(lines.count == 1)
            let record = try #require(try JSONSerialization.jsonObject(with: Data(lines[0].utf8)) as? [String: Any])
            #expect(record["endpoint"] as? String == endpoint.deviceID)
            #expect(record["message"] as? String == published.applicationMessageID)
            let entries = try #require(record["entries"] as? [[String: Any]])
            #expect(entries.map { $0["status"] as? String } == ["dRtkFinteger", "dNotAvailable"])
            #expect(entries.first?["lat"] as? Double == 48.25)
            #expect(entries.last?["time_ms"] as? Int == 1_790_000_000_250)
        }
    }

    @Test func aTimestampBeyondProtobufsRangeIsWrittenAsUnknown() {
        var time = Google_Protobuf_Timestamp()
        time.seconds = .max
        #expect(ReceivedLog.milliseconds(time) == -1)
        time.seconds = 1_790_000_000
        time.nanos = -5
        #expect(ReceivedLog.milliseconds(time) == -1)
        time.nanos = 998_999_999
        #expect(ReceivedLog.milliseconds(time) == 1_790_000_000_999)
        time.nanos = 999_999_999
        #expect(ReceivedLog.milliseconds(time) == 1_790_000_001_000)
    }
}
