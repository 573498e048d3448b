import AgrirouterWire  // the messages generated from DKE's .proto files; none of agrigps's framing or mapping
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import SwiftProtobuf

/// Another endpoint, written from DKE's interface documentation (IFD) rather than from agrigps: its
/// onboarding, JSON, framing, HTTPS and MQTT are its own. It shares with agrigps only the protobuf
/// messages generated from DKE's definitions. Every answer it gets goes through `DocumentationRules`.
final class DocumentedPeer {
    let onboarding: PeerOnboarding
    private let transport: any PeerTransport
    private(set) var rules: DocumentationRules
    private var sequenceNumber: Int64 = 0
    private var sent: Set<String> = []
    private var answers: [String: OutboxItem] = [:]
    private(set) var pushed: [FeedMessage] = []

    private init(onboarding: PeerOnboarding, transport: any PeerTransport, rules: DocumentationRules) {
        self.onboarding = onboarding
        self.transport = transport
        self.rules = rules
    }

    /// Onboards with `tan` over `gatewayID` ("3" REST, "2" MQTT) and connects.
    static func onboard(
        url: String, tan: String, trusting caPEM: String, gatewayID: String, group: any EventLoopGroup,
        subscribed: Set<String>
    ) async throws -> DocumentedPeer {
        let since = Date()
        let (onboarding, onboardingViolations) = try await PeerOnboarding.request(
            url: url, tan: tan, trusting: caPEM, gatewayID: gatewayID, group: group)
        let tls = try onboarding.clientTLS(trusting: caPEM)
        let transport: any PeerTransport
        if gatewayID == "2" {
            guard let host = onboarding.host, let port = onboarding.port, let clientID = onboarding.clientID else {
                throw PeerError("MQTT criteria missing")
            }
            transport = try await MQTTPeerTransport.connect(
                host: host, port: port, clientID: clientID, measures: onboarding.measures,
                commands: onboarding.commands, tls: tls, group: group)
        } else {
            transport = RESTPeerTransport(
                https: PeerHTTPS(tls: tls, group: group), measures: onboarding.measures, commands: onboarding.commands)
        }
        var rules = DocumentationRules(endpointID: onboarding.deviceAlternateID, since: since, subscribed: subscribed)
        onboardingViolations.forEach { rules.broken($0) }
        return DocumentedPeer(onboarding: onboarding, transport: transport, rules: rules)
    }

    func close() async { await transport.close() }

    // MARK: Sending (integration/build-message.adoc)

    /// Sends one message, by default in mode DIRECT without recipients, as every `dke:*` command goes;
    /// its application message id.
    @discardableResult
    func send(
        _ technicalMessageType: String, _ payload: (any SwiftProtobuf.Message)?,
        mode: Agrirouter_Request_RequestEnvelope.Mode = .direct
    ) async throws -> String {
        sequenceNumber += 1
        var envelope = Agrirouter_Request_RequestEnvelope()
        envelope.applicationMessageID = UUID().uuidString.lowercased()
        envelope.applicationMessageSeqNo = sequenceNumber
        envelope.technicalMessageType = technicalMessageType
        envelope.mode = mode
        envelope.timestamp = Google_Protobuf_Timestamp(date: Date())
        var wrapper = Agrirouter_Request_RequestPayloadWrapper()
        if let payload {
            wrapper.details.typeURL = DocumentationRules.prefix + type(of: payload).protoMessageName
            wrapper.details.value = try payload.serializedData()
        }
        let framed = Self.delimited([try envelope.serializedData(), try wrapper.serializedData()])
        let body: [String: Any] = [
            "sensorAlternateId": onboarding.sensorAlternateID,
            "capabilityAlternateId": onboarding.capabilityAlternateID,
            // The documentation's form ("JSON setup"): an array of [message, timestamp], the time of
            // recording in milliseconds, as the protobuf variant's example gives it.
            "measures": [[framed.base64EncodedString(), String(Int(Date().timeIntervalSince1970 * 1000))]],
        ]
        sent.insert(envelope.applicationMessageID)
        try await transport.send(try JSONSerialization.data(withJSONObject: body))
        return envelope.applicationMessageID
    }

    /// `writeDelimitedTo`: each message after its length as a varint.
    static func delimited(_ parts: [Data]) -> Data {
        var data = Data()
        for part in parts {
            var length = UInt64(part.count)
            repeat {
                data.append(UInt8(length & 0x7F) | (length > 0x7F ? 0x80 : 0))
                length >>= 7
            } while length > 0
            data.append(part)
        }
        return data
    }

    /// `parseDelimitedFrom` until the bytes end.
    static func undelimited(_ data: Data) throws -> [Data] {
        let bytes = [UInt8](data)
        var parts: [Data] = []
        var index = 0
        while index < bytes.count {
            var length: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard index < bytes.count, shift < 64 else { throw PeerError("a varint runs past the message") }
                let byte = bytes[index]
                index += 1
                length |= UInt64(byte & 0x7F) << shift
                shift += 7
                if byte & 0x80 == 0 { break }
            }
            guard length <= UInt64(bytes.count - index) else {
                throw PeerError("a part of \(length) bytes in \(bytes.count - index)")
            }
            parts.append(Data(bytes[index..<index + Int(length)]))
            index += Int(length)
        }
        return parts
    }

    // MARK: Receiving (integration/message-receiving.adoc, push-notification.adoc)

    /// Takes what the outbox holds, checks each item against the rules, files answers by their
    /// application message id and keeps pushed feed messages.
    func collect() async throws {
        for object in try await transport.take() {
            guard let item = try? JSONSerialization.jsonObject(with: object) as? [String: Any] else {
                rules.broken("an outbox item that is not a JSON object")
                continue
            }
            if Set(item.keys) != ["sensorAlternateId", "capabilityAlternateId", "command"] {
                rules.broken("outbox item keys \(item.keys.sorted())")
            }
            if item["sensorAlternateId"] as? String != onboarding.sensorAlternateID {
                rules.broken("an outbox item for another sensor")
            }
            guard let command = item["command"] as? [String: Any], let base64 = command["message"] as? String,
                let framed = Data(base64Encoded: base64)
            else {
                rules.broken("an outbox item without command.message in base64 (RFC 4648, no line breaks)")
                continue
            }
            let parts = try Self.undelimited(framed)
            guard parts.count == 2 else {
                rules.broken("an outbox message of \(parts.count) delimited parts, not envelope and wrapper")
                continue
            }
            let decoded = OutboxItem(
                envelope: try Agrirouter_Response_ResponseEnvelope(serializedBytes: parts[0]),
                details: try Agrirouter_Response_ResponsePayloadWrapper(serializedBytes: parts[1]).details)
            rules.check(decoded, sentIDs: sent)
            try file(decoded)
        }
    }

    private func file(_ item: OutboxItem) throws {
        switch item.envelope.type {
        case .pushNotification:
            // push-notification.proto's FeedMessage has the query's header field numbers.
            let push = try Agrirouter_Feed_Push_Notification_PushNotification(serializedBytes: item.details.value)
            for message in push.messages {
                let asQueried = try FeedMessage(serializedBytes: try message.serializedData())
                rules.check(asQueried)
                pushed.append(asQueried)
            }
        case .ackWithMessages, .ackWithFailure:
            rules.check(try Agrirouter_Commons_Messages(serializedBytes: item.details.value))
            answers[item.envelope.applicationMessageID] = item
        default:
            answers[item.envelope.applicationMessageID] = item
        }
    }

    /// The answer to `applicationMessageID`, waited for up to `seconds`.
    func answer(to applicationMessageID: String, within seconds: Double = 20) async throws -> OutboxItem {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            try await collect()
            if let item = answers.removeValue(forKey: applicationMessageID) { return item }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw PeerError("no answer to \(applicationMessageID) within \(Int(seconds)) s")
    }

    /// Sends a command and returns its answer, checked for the code and type the docs give.
    @discardableResult
    func command(
        _ technicalMessageType: String, _ payload: (any SwiftProtobuf.Message)?,
        mode: Agrirouter_Request_RequestEnvelope.Mode = .direct,
        expecting types: Set<BodyType>, codes: Set<Int32>
    ) async throws -> OutboxItem {
        let answer = try await answer(to: try await send(technicalMessageType, payload, mode: mode))
        if !types.contains(answer.envelope.type) || !codes.contains(answer.envelope.responseCode) {
            let text =
                (try? Agrirouter_Commons_Messages(serializedBytes: answer.details.value))?.messages.map(\.message) ?? []
            rules.broken(
                "\(technicalMessageType): answered \(answer.envelope.type) \(answer.envelope.responseCode) \(text), expected \(types) \(codes)"
            )
        }
        return answer
    }

    func pushedSoFar() async throws -> [FeedMessage] {
        try await collect()
        return pushed
    }

    // MARK: The feed (commands/feed.adoc)

    /// One page of the feed: messages sent from `since` on (a query needs at least one criterion).
    /// ACK_FOR_FEED_MESSAGE, 200, or 204 when nothing is left.
    func queryFeed(since: Date) async throws -> [FeedMessage] {
        var query = Agrirouter_Feed_Request_MessageQuery()
        query.validityPeriod.sentFrom = Google_Protobuf_Timestamp(date: since.addingTimeInterval(-60))
        query.validityPeriod.sentTo = Google_Protobuf_Timestamp(date: Date().addingTimeInterval(60))
        let answer = try await command(
            TechnicalTypes.feedMessageQuery, query, expecting: [.ackForFeedMessage], codes: [200, 204])
        let response = try Agrirouter_Feed_Response_MessageQueryResponse(serializedBytes: answer.details.value)
        // "Paging": 25 messages or 1 MB a page; the metrics count at least what the page holds.
        if response.messages.count > 25 { rules.broken("a feed page of \(response.messages.count) messages") }
        if Int(response.queryMetrics.totalMessagesInQuery) < response.messages.count {
            rules.broken("query metrics \(response.queryMetrics) below the page's count")
        }
        if (answer.envelope.responseCode == 204) != response.messages.isEmpty {
            rules.broken("\(answer.envelope.responseCode) with \(response.messages.count) messages")
        }
        if !response.messages.isEmpty, !(1...max(1, response.page.total)).contains(response.page.number) {
            rules.broken("page \(response.page)")
        }
        response.messages.forEach { rules.check($0) }
        return response.messages
    }

    /// Confirms `ids`: ACK_WITH_MESSAGES, 200, one VAL_000206 per id with the id in args.
    func confirm(_ ids: [String]) async throws {
        var confirm = Agrirouter_Feed_Request_MessageConfirm()
        confirm.messageIds = ids
        let answer = try await command(TechnicalTypes.feedConfirm, confirm, expecting: [.ackWithMessages], codes: [200])
        expectOnePerID(answer, ids: ids, code: "VAL_000206")
    }

    /// Deletes `ids`: ACK_WITH_MESSAGES, 201, one VAL_000209 per id with the id in args.
    func delete(_ ids: [String]) async throws {
        var delete = Agrirouter_Feed_Request_MessageDelete()
        delete.messageIds = ids
        let answer = try await command(TechnicalTypes.feedDelete, delete, expecting: [.ackWithMessages], codes: [201])
        expectOnePerID(answer, ids: ids, code: "VAL_000209")
    }

    private func expectOnePerID(_ answer: OutboxItem, ids: [String], code: String) {
        let messages = (try? Agrirouter_Commons_Messages(serializedBytes: answer.details.value))?.messages ?? []
        let named = messages.filter { $0.messageCode == code }.compactMap { $0.args["messageId"] }
        if Set(named) != Set(ids) || named.count != ids.count {
            rules.broken("\(code) for \(named.count) of \(ids.count) ids")
        }
    }

    func checkTeamSets() { rules.checkTeamSets() }
}

/// What onboarding answered (integration/onboarding.adoc, "Onboarding response").
struct PeerOnboarding {
    var deviceAlternateID: String
    var capabilityAlternateID: String
    var sensorAlternateID: String
    var measures: String
    var commands: String
    var host: String?
    var port: Int?
    var clientID: String?
    var certificate: String
    var secret: String

    /// The documented communication-unit request: five fields, a bearer TAN, no signature.
    static func request(
        url: String, tan: String, trusting caPEM: String, gatewayID: String,
        group: any EventLoopGroup
    ) async throws -> (PeerOnboarding, [String]) {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8)))
        configuration.certificateVerification = .noHostnameVerification
        let https = PeerHTTPS(tls: try NIOSSLContext(configuration: configuration), group: group)
        let body = try JSONSerialization.data(withJSONObject: [
            "id": "urn:documented-peer:\(UUID().uuidString.lowercased())", "applicationId": "documented-peer-app",
            "certificationVersionId": "documented-peer-version", "gatewayId": gatewayID, "certificateType": "PEM",
        ])
        let reply = try await https.request(
            .POST, url, headers: [("Authorization", "Bearer \(tan)"), ("Content-Type", "application/json")], body: body)
        guard reply.status == 201 else {
            throw PeerError(
                "onboarding answered \(reply.status): \(String(decoding: reply.body.prefix(300), as: UTF8.self))")
        }
        guard let object = try JSONSerialization.jsonObject(with: reply.body) as? [String: Any],
            let criteria = object["connectionCriteria"] as? [String: Any],
            let authentication = object["authentication"] as? [String: Any]
        else {
            throw PeerError("onboarding's answer lacks connectionCriteria or authentication")
        }
        let text = { (key: String) in object[key] as? String ?? "" }
        let onboarding = PeerOnboarding(
            deviceAlternateID: text("deviceAlternateId"), capabilityAlternateID: text("capabilityAlternateId"),
            sensorAlternateID: text("sensorAlternateId"),
            measures: criteria["measures"] as? String ?? "", commands: criteria["commands"] as? String ?? "",
            host: criteria["host"] as? String,
            // "port is a string in examples, Integer in the IFD table": read both.
            port: (criteria["port"] as? Int) ?? (criteria["port"] as? String).flatMap(Int.init),
            clientID: criteria["clientId"] as? String,
            certificate: authentication["certificate"] as? String ?? "",
            secret: authentication["secret"] as? String ?? "")
        return (
            onboarding, onboarding.violations(gatewayID: gatewayID, criteria: criteria, authentication: authentication)
        )
    }

    func violations(gatewayID: String, criteria: [String: Any], authentication: [String: Any]) -> [String] {
        var broken: [String] = []
        if deviceAlternateID.isEmpty || capabilityAlternateID.isEmpty || sensorAlternateID.isEmpty {
            broken.append("onboarding: an alternate id is missing")
        }
        if criteria["gatewayId"] as? String != gatewayID {
            broken.append("onboarding: gatewayId \(criteria["gatewayId"] ?? "none"), asked \(gatewayID)")
        }
        if gatewayID == "2" {
            if measures != "measures/\(deviceAlternateID)" || commands != "commands/\(deviceAlternateID)" {
                broken.append("onboarding: MQTT topics \(measures), \(commands)")
            }
            if host?.isEmpty != false || !(1...65535).contains(port ?? 0) || clientID?.isEmpty != false {
                broken.append("onboarding: MQTT host, port or clientId")
            }
        } else {
            for url in [measures, commands] where !url.hasPrefix("https://") || !url.hasSuffix("/" + deviceAlternateID)
            {
                broken.append("onboarding: \(url) is not an https URL ending in the endpoint id")
            }
        }
        if authentication["type"] as? String != "PEM" {
            broken.append("onboarding: authentication type \(authentication["type"] ?? "none"), asked PEM")
        }
        if secret.isEmpty { broken.append("onboarding: no secret") }
        // PEM: the encrypted key, then the certificate, in one string.
        guard let key = certificate.range(of: "-----BEGIN ENCRYPTED PRIVATE KEY-----"),
            let cert = certificate.range(of: "-----BEGIN CERTIFICATE-----"),
            key.lowerBound < cert.lowerBound
        else {
            return broken + ["onboarding: the certificate is not an encrypted key followed by a certificate"]
        }
        return broken
    }

    /// Split at the certificate's start, as DKE's C++ SDK does: the key before, the certificate after.
    func clientTLS(trusting caPEM: String) throws -> NIOSSLContext {
        guard let split = certificate.range(of: "-----BEGIN CERTIFICATE-----") else {
            throw PeerError("no certificate in the onboarding answer")
        }
        let key = try NIOSSLPrivateKey(bytes: Array(certificate[..<split.lowerBound].utf8), format: .pem) {
            setPassphrase in
            setPassphrase(Array(secret.utf8))
        }
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8)))
        configuration.certificateChain = try NIOSSLCertificate.fromPEMBytes(
            Array(certificate[split.lowerBound...].utf8)
        ).map { .certificate($0) }
        configuration.privateKey = .privateKey(key)
        configuration.certificateVerification = .noHostnameVerification
        return try NIOSSLContext(configuration: configuration)
    }
}
