import AgrirouterWire
import Clocks
import Crypto
import Foundation
import SwiftProtobuf
import X509

/// Everything the simulated agrirouter knows, behind one actor.
actor SimState {
    private let configuration: SimConfiguration
    private let authority: CertificateAuthority
    private var gatewayBase = ""
    private var unusedTANs: [String: String]
    private var endpoints: [String: SimEndpoint] = [:]
    /// Endpoints deleted in the UI: gone from every list and route, but their certificate still opens
    /// the door, and every message they send is answered "endpoint unknown" (dke:ping's way of telling).
    private var deleted: Set<String> = []
    private var deviceIDByExternalID: [String: String] = [:]
    private var faults: [SimFault] = []
    /// When each gateway request arrived (monotonic seconds), to check the client's spacing, and how
    /// many came for each endpoint (REST requests, or MQTT publishes).
    private var requestArrivals: [Double] = []
    private var requestsByEndpoint: [String: Int] = [:]
    /// Messages refused for a timestamp in the future.
    private var futureTimestampsRefused = 0
    /// Until when (monotonic seconds) every gateway request hangs unprocessed.
    private var stalledUntil: Double?

    /// The largest base64 message agrirouter takes: 767,997 bytes of protobuf.
    static let maximumMessageCharacters = AgrirouterLimits.messageCharacters

    init(configuration: SimConfiguration, authority: CertificateAuthority) {
        self.configuration = configuration
        self.authority = authority
        self.unusedTANs = configuration.tans
    }

    func setGatewayBase(_ url: String) { gatewayBase = url }

    /// The MQTT broker endpoints onboarded with gateway id 2 are sent to, and who is told when an
    /// answer or a push waits in such an endpoint's outbox; nil when the simulator runs without one.
    private var broker: (host: String, port: Int)?
    private var mqttOutboxChanged: (@Sendable (String) -> Void)?

    func setBroker(host: String, port: Int, outboxChanged: @escaping @Sendable (String) -> Void) {
        broker = (host, port)
        mqttOutboxChanged = outboxChanged
    }

    // MARK: - Onboarding

    func onboard(authorization: String?, body: Data, now: Date = Date()) -> SimResponse {
        guard let authorization, authorization.hasPrefix("Bearer "),
            let name = unusedTANs[String(authorization.dropFirst("Bearer ".count))]
        else {
            return .onboardingError(401, code: "0401", message: "Bearer not found")
        }
        guard let request = try? JSONDecoder().decode(SimOnboardingRequest.self, from: body) else {
            return .onboardingError(400, code: "0100", message: "Invalid payload")
        }
        if let missing = request.firstMissing {
            return .onboardingError(400, code: "0100", message: "Invalid payload: \(missing) is missing")
        }
        if let expected = configuration.applicationID, request.applicationId != expected {
            return .onboardingError(
                400, code: "0105",
                message: "applicationId invalid or registration code not generated for this application")
        }
        if let expected = configuration.certificationVersionID, request.certificationVersionId != expected {
            return .onboardingError(400, code: "0101", message: "Invalid certificationVersionId")
        }
        let gatewayID = request.gatewayId
        guard gatewayID == "3" || (gatewayID == "2" && broker != nil) else {
            return .onboardingError(
                400, code: "0102",
                message: gatewayID == "2"
                    ? "Invalid gateway id: this local agrirouter runs without MQTT (start it with --mqtt)"
                    : "Invalid gateway id")
        }
        // agrirouter keeps the gateway with the endpoint: re-onboarding cannot change it.
        if let known = deviceIDByExternalID[request.id], let endpoint = endpoints[known],
            endpoint.gatewayID != gatewayID
        {
            return .onboardingError(
                400, code: "0102",
                message: "Invalid gateway id: the endpoint was onboarded with gateway \(endpoint.gatewayID)")
        }
        guard request.certificateType == "PEM" else {
            return .onboardingError(400, code: "0103", message: "Invalid certificate type")
        }
        // The documented request of a communication unit has no UTCTimestamp (`integration/onboarding.adoc`);
        // the signed one of a farm management system does, and agrirouter refuses one ahead of its clock.
        if !request.utcTimestamp.isEmpty {
            guard let timestamp = ISO8601.parse(request.utcTimestamp), timestamp <= now.addingTimeInterval(1) else {
                return .onboardingError(400, code: "0110", message: "UTCTimestamp invalid or in the future")
            }
        }
        unusedTANs[String(authorization.dropFirst("Bearer ".count))] = nil

        let externalID = request.id
        let deviceID = deviceIDByExternalID[externalID] ?? UUID().uuidString.lowercased()
        do {
            let (certificate, key) = try authority.issueClientCertificate(endpointID: deviceID)
            let secret = Self.secret()
            let credential =
                try KeyEncryption.encryptedPEM(key, secret: secret) + certificate.serializeAsPEM().pemString + "\n"
            var endpoint =
                endpoints[deviceID]
                ?? SimEndpoint(
                    deviceID: deviceID, externalID: externalID, sensorID: UUID().uuidString.lowercased(),
                    capabilityID: UUID().uuidString.lowercased(), name: name, certificateSerial: "",
                    gatewayID: gatewayID)
            // Re-onboarding keeps the endpoint, its routes and its messages; only the newest certificate counts.
            endpoint.certificateSerial = certificate.serialNumber.description
            endpoints[deviceID] = endpoint
            deviceIDByExternalID[externalID] = deviceID
            var criteria = SimOnboardingAnswer.ConnectionCriteria(
                gatewayId: "3", measures: "\(gatewayBase)/iot/gateway/rest/measures/\(deviceID)",
                commands: "\(gatewayBase)/iot/gateway/rest/commands/\(deviceID)")
            if gatewayID == "2", let broker {
                // As agrirouter's examples give it: the port as a string, the client id the device's id.
                criteria = .init(
                    gatewayId: "2", measures: "measures/\(deviceID)", commands: "commands/\(deviceID)",
                    host: broker.host, port: String(broker.port), clientId: deviceID)
            }
            var answer = SimResponse.json(
                201,
                SimOnboardingAnswer(
                    deviceAlternateId: deviceID, capabilityAlternateId: endpoint.capabilityID,
                    sensorAlternateId: endpoint.sensorID,
                    connectionCriteria: criteria, authentication: .init(secret: secret, certificate: credential)))
            if let rewrite = configuration.rewriteOnboardingAnswer { answer.body = rewrite(answer.body) }
            return answer
        } catch {
            return .onboardingError(500, code: "0000", message: "certificate could not be issued")
        }
    }

    private static func secret() -> String {
        let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789")
        return String((0..<24).map { _ in alphabet.randomElement()! })
    }

    // MARK: - Gateway

    /// The endpoint a client certificate belongs to, if it is the current one for the URL's endpoint.
    private func authenticate(deviceID: String, certificate: Certificate?) -> SimResponse? {
        guard let certificate else { return .json(401, ["error": "client certificate required"]) }
        let commonName = certificate.subject.compactMap { $0.first { $0.type == .RDNAttributeType.commonName } }.first
        guard let endpoint = endpoints[deviceID], commonName?.value.description == deviceID,
            endpoint.certificateSerial == certificate.serialNumber.description
        else {
            return .json(401, ["error": "certificate does not belong to endpoint \(deviceID)"])
        }
        return nil
    }

    private func transportFault() -> SimResponse? {
        let now = ProcessInfo.processInfo.systemUptime
        if let until = stalledUntil, now < until {
            // A hung server: the request is not processed, and the connection closes unanswered when it ends.
            return SimResponse(status: 0, drop: true, delay: until - now)
        }
        guard
            let index = faults.firstIndex(where: {
                switch $0 {
                case .serviceUnavailable, .stall, .dropAfterBody: return true
                default: return false
                }
            })
        else { return nil }
        switch faults[index] {
        case .serviceUnavailable(let count):
            if count <= 1 { faults.remove(at: index) } else { faults[index] = .serviceUnavailable(count: count - 1) }
            return SimResponse(status: 503, body: Data("Service Unavailable".utf8), contentType: "text/plain")
        case .stall(let seconds):
            faults.remove(at: index)
            return SimResponse(status: 200, delay: seconds)
        default:
            faults.remove(at: index)
            return SimResponse(status: 0, drop: true)
        }
    }

    func measures(deviceID: String, certificate: Certificate?, body: Data, now: Date = Date()) -> SimResponse {
        requestArrivals.append(ProcessInfo.processInfo.systemUptime)
        requestsByEndpoint[deviceID, default: 0] += 1
        if let refusal = authenticate(deviceID: deviceID, certificate: certificate) { return refusal }
        var stall = 0.0
        if let fault = transportFault() {
            if fault.delay == 0 || fault.drop { return fault }
            stall = fault.delay
        }
        var response = accept(deviceID: deviceID, body: body, now: now)
        response.delay = stall
        if let index = faults.firstIndex(of: .takeThenDrop) {
            faults.remove(at: index)
            response.drop = true
        }
        if let index = faults.firstIndex(where: { if case .stallPublish = $0 { true } else { false } }),
            case .stallPublish(let seconds) = faults[index], Self.carriesGPSInfo(body)
        {
            faults.remove(at: index)
            response.delay = max(response.delay, seconds)
        }
        return response
    }

    private static func carriesGPSInfo(_ body: Data) -> Bool {
        guard let request = try? JSONDecoder().decode(MeasuresBody.self, from: body) else { return false }
        return request.measures.contains {
            (try? RequestDecoder.decode(base64: $0.message))?.envelope.technicalMessageType
                == TechnicalMessageType.gpsInfo
        }
    }

    private func accept(deviceID: String, body: Data, now: Date) -> SimResponse {
        guard let request = try? JSONDecoder().decode(MeasuresBody.self, from: body) else {
            return .json(400, ["error": "body is not a measures request"])
        }
        // The cap is on each payload; the envelope around it adds a little.
        let tooLarge = request.measures.contains { measure in
            // A chunk's content is base64 inside the message's base64, so it is measured as agrirouter
            // measures it: its raw bytes against the cap, its message against the larger character limit.
            if measure.message.count > AgrirouterLimits.chunkedMessageCharacters + 4096 { return true }
            guard let decoded = try? RequestDecoder.decode(base64: measure.message) else {
                return measure.message.count > Self.maximumMessageCharacters + 4096
            }
            if decoded.envelope.technicalMessageType == TechnicalMessageType.taskData {
                return (ChunkJoiner.rawContent(decoded.payload)?.count ?? decoded.payload.count)
                    > configuration.maximumPayloadBytes
            }
            return measure.message.count > Self.maximumMessageCharacters + 4096
                || decoded.payload.count > configuration.maximumPayloadBytes
        }
        if tooLarge {
            return SimResponse(status: 413, body: Data("Request too large".utf8), contentType: "text/plain")
        }
        for measure in request.measures {
            handle(measure.message, from: deviceID, sentAt: Self.measureTime(measure.timestamp), now: now)
        }
        return SimResponse(status: 200)
    }

    func commands(deviceID: String, certificate: Certificate?, now: Date = Date()) -> SimResponse {
        requestArrivals.append(ProcessInfo.processInfo.systemUptime)
        requestsByEndpoint[deviceID, default: 0] += 1
        if let refusal = authenticate(deviceID: deviceID, certificate: certificate) { return refusal }
        var stall = 0.0
        if let fault = transportFault() {
            if fault.delay == 0 || fault.drop { return fault }
            stall = fault.delay
        }
        if let index = faults.firstIndex(where: { if case .oversizedOutbox = $0 { true } else { false } }),
            case .oversizedOutbox(let bytes) = faults[index]
        {
            faults.remove(at: index)
            return SimResponse(status: 200, filler: max(2, bytes))
        }
        if let index = faults.firstIndex(where: { if case .stallOutbox = $0 { true } else { false } }),
            case .stallOutbox(let seconds) = faults[index]
        {
            faults.remove(at: index)
            stall = max(stall, seconds)
        }
        let endpoint = endpoints[deviceID]
        let live = (endpoint?.outbox ?? []).filter { $0.expires > now }
        endpoints[deviceID]?.outbox = []
        let items = endpoint.map { endpoint in live.map { SimOutboxItem(endpoint, message: $0.base64) } } ?? []
        var response = SimResponse.json(200, items)
        response.delay = stall
        return response
    }

    // MARK: - MQTT

    /// How long a measures message published now waits before it is read, while the gateway is stalled.
    func stallRemaining() -> Double {
        max(0, (stalledUntil ?? 0) - ProcessInfo.processInfo.systemUptime)
    }

    /// A measures body published on `measures/<deviceID>`. The broker's ACL has already tied the
    /// topic to the sender's certificate; what is validated next is what REST validates. MQTT has no
    /// reply to a publish: every answer goes to the commands topic.
    func mqttMeasures(deviceID: String, body: Data, now: Date = Date()) {
        requestArrivals.append(ProcessInfo.processInfo.systemUptime)
        requestsByEndpoint[deviceID, default: 0] += 1
        guard endpoints[deviceID]?.gatewayID == "2" else { return }
        // REST's stalled publish, over MQTT: the message is taken, and its answers wait.
        if let index = faults.firstIndex(where: { if case .stallPublish = $0 { true } else { false } }),
            case .stallPublish(let seconds) = faults[index], Self.carriesGPSInfo(body)
        {
            faults.remove(at: index)
            answersHeldUntil[deviceID] = now.addingTimeInterval(seconds)
        }
        _ = accept(deviceID: deviceID, body: body, now: now)
    }

    /// Until when an MQTT endpoint's answers are held back (a stalled publish).
    private var answersHeldUntil: [String: Date] = [:]

    /// Seconds until an MQTT endpoint's answers may go; 0 when they are not held.
    func answersHeld(deviceID: String, now: Date = Date()) -> Double {
        max(0, answersHeldUntil[deviceID]?.timeIntervalSince(now) ?? 0)
    }

    func mqttEndpointIDs() -> [String] {
        endpoints.values.filter { $0.gatewayID == "2" }.map(\.deviceID)
    }

    /// Empties an MQTT endpoint's outbox: one JSON object per item, as agrirouter publishes them.
    func takeOutbox(deviceID: String, now: Date = Date()) -> [Data] {
        guard let endpoint = endpoints[deviceID], answersHeld(deviceID: deviceID, now: now) == 0 else { return [] }
        let live = endpoint.outbox.filter { $0.expires > now }
        endpoints[deviceID]?.outbox = []
        return live.compactMap { SimJSON.encode(SimOutboxItem(endpoint, message: $0.base64)) }
    }

    // MARK: - Messages

    private func handle(_ base64: String, from deviceID: String, sentAt: Double?, now: Date) {
        guard let request = try? RequestDecoder.decode(base64: base64) else {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: "",
                messages: [("Error occured while decoding the message.", "VAL_000300")], now: now)
            return
        }
        endpoints[deviceID]?.sent.append(request)
        endpoints[deviceID]?.arrivals.append(now)
        let id = request.envelope.applicationMessageID
        if let index = faults.firstIndex(where: { if case .ackWithFailure = $0 { true } else { false } }),
            case .ackWithFailure(let code) = faults[index]
        {
            faults.remove(at: index)
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Failure on command", code)], now: now)
            return
        }
        if let index = faults.firstIndex(where: {
            if case .refuse(request.envelope.technicalMessageType, _) = $0 { true } else { false }
        }), case .refuse(_, let code) = faults[index] {
            faults.remove(at: index)
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Refused as the test asked", code)], now: now)
            return
        }
        if let problem = envelopeProblem(request, from: deviceID) {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [(problem, "VAL_000300")], now: now)
            return
        }
        if let problem = Self.futureTimestamp(request, sentAt: sentAt, now: now) {
            futureTimestampsRefused += 1
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [(problem, "VAL_000300")], now: now)
            return
        }
        endpoints[deviceID]?.seenMessageIDs.insert(id)
        if deleted.contains(deviceID) {
            answer(
                deviceID, type: .ackWithFailure, code: 404, applicationMessageID: id,
                messages: [("Endpoint is unknown", "VAL_000011")], now: now)
            return
        }
        switch request.envelope.technicalMessageType {
        case TechnicalMessageType.capabilities: capabilities(request, from: deviceID, now: now)
        case TechnicalMessageType.subscription: subscription(request, from: deviceID, now: now)
        case TechnicalMessageType.gpsInfo: publish(request, from: deviceID, now: now)
        case TechnicalMessageType.deviceDescription, TechnicalMessageType.timeLog:
            publishEFDI(request, from: deviceID, now: now)
        case TechnicalMessageType.taskData: publishTaskData(request, from: deviceID, now: now)
        case TechnicalMessageType.listEndpoints, TechnicalMessageType.listEndpointsUnfiltered:
            listEndpoints(request, for: deviceID, now: now)
        case TechnicalMessageType.ping: answer(deviceID, type: .ack, code: 200, applicationMessageID: id, now: now)
        case TechnicalMessageType.feedMessageQuery: feedQuery(request, for: deviceID, now: now)
        case TechnicalMessageType.feedConfirm: feedConfirm(request, for: deviceID, now: now)
        case TechnicalMessageType.feedDelete: feedDelete(request, for: deviceID, now: now)
        default:
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Unknown technical message type \(request.envelope.technicalMessageType)", "VAL_000300")],
                now: now)
        }
    }

    /// A measure's timestamp in seconds since 1970, in any form a client writes it: seconds (DKE's Java
    /// and .NET SDKs), milliseconds (the documentation's example), or ISO 8601 (DKE's Python SDK). The
    /// documentation does not fix the form; nil for none of these.
    static func measureTime(_ text: String) -> Double? {
        if !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
            let number = Double(text)
        {
            // Milliseconds from 13 digits on: seconds of that size are past the year 5000.
            return number >= 100_000_000_000 ? number / 1000 : number
        }
        return ISO8601.parse(text)?.timeIntervalSince1970
    }

    /// agrirouter has "some tolerance for timestamps in the past" and none for the future: a measure's
    /// or an envelope's timestamp more than a second ahead of this machine's clock (a measure's is in
    /// whole seconds) is refused. Payloads are not read for it: a replayed log's positions may carry
    /// any time, and agrirouter passes payloads on as they are.
    static func futureTimestamp(_ request: DecodedRequest, sentAt: Double?, now: Date) -> String? {
        let limit = now.timeIntervalSince1970 + 1
        if let sentAt, sentAt > limit { return "the measure's timestamp \(sentAt) is in the future" }
        let envelope = request.envelope.timestamp
        if Double(envelope.seconds) > limit { return "the envelope's timestamp \(envelope.seconds) is in the future" }
        return nil
    }

    /// What agrirouter checks on every envelope before it looks at the payload.
    private func envelopeProblem(_ request: DecodedRequest, from deviceID: String) -> String? {
        let envelope = request.envelope
        if envelope.applicationMessageSeqNo <= 0 { return "application_message_seq_no must be greater than 0" }
        if UUID(uuidString: envelope.applicationMessageID) == nil { return "application_message_id must be a UUID" }
        if endpoints[deviceID]?.seenMessageIDs.contains(envelope.applicationMessageID) == true {
            return "application_message_id \(envelope.applicationMessageID) was used before"
        }
        return nil
    }

    private func capabilities(_ request: DecodedRequest, from deviceID: String, now: Date) {
        let id = request.envelope.applicationMessageID
        guard
            let specification = try? Agrirouter_Request_Payload_Endpoint_CapabilitySpecification(
                serializedBytes: request.payload)
        else {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Payload is not a CapabilitySpecification", "VAL_000300")], now: now)
            return
        }
        let unchanged = endpoints[deviceID]?.capabilitySpecification == specification
        endpoints[deviceID]?.capabilitySpecification = specification
        endpoints[deviceID]?.capabilities = Dictionary(
            specification.capabilities.map { ($0.technicalMessageType, $0.direction) }, uniquingKeysWith: { $1 })
        endpoints[deviceID]?.pushEnabled = specification.enablePushNotifications != .disabled
        endpoints[deviceID]?.subscriptions = []  // capabilities wipe subscriptions
        if unchanged {
            answer(
                deviceID, type: .ackWithMessages, code: 201, applicationMessageID: id,
                messages: [("Skipping capabilities update because there are no differences", "VAL_000022")], now: now)
        } else {
            answer(deviceID, type: .ack, code: 201, applicationMessageID: id, now: now)
        }
    }

    private func subscription(_ request: DecodedRequest, from deviceID: String, now: Date) {
        let id = request.envelope.applicationMessageID
        guard let subscription = try? Agrirouter_Request_Payload_Endpoint_Subscription(serializedBytes: request.payload)
        else {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Payload is not a Subscription", "VAL_000300")], now: now)
            return
        }
        let types = subscription.technicalMessageTypes.map(\.technicalMessageType)
        if let missing = types.first(where: { endpoints[deviceID]?.accepts($0, receiving: true) != true }) {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Subscription type \(missing) is not in the capabilities", "VAL_000006")], now: now)
            return
        }
        endpoints[deviceID]?.subscriptions = Set(types)
        answer(deviceID, type: .ack, code: 201, applicationMessageID: id, now: now)
    }

    private func publish(_ request: DecodedRequest, from deviceID: String, now: Date) {
        let id = request.envelope.applicationMessageID
        guard endpoints[deviceID]?.accepts(TechnicalMessageType.gpsInfo, receiving: false) == true else {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("gps:info is not in the sender's capabilities", "VAL_000004")], now: now)
            return
        }
        if Self.looksLikeBase64(request.payload) {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("gps:info must be raw protobuf, not base64", "VAL_000300")], now: now)
            return
        }
        guard let list = try? Agrirouter_Technicalmessagetype_GPSList(serializedBytes: request.payload) else {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Payload is not a GPSList", "VAL_000300")], now: now)
            return
        }
        configuration.onAcceptedGPSInfo?(deviceID, id, list)
        for (receiverID, receiver) in endpoints
        where receiverID != deviceID && !deleted.contains(receiverID)
            && receiver.subscriptions.contains(TechnicalMessageType.gpsInfo)
        {
            deliver(
                request.payload, from: deviceID, to: receiverID,
                sequenceNumber: request.envelope.applicationMessageSeqNo,
                sentAt: request.envelope.timestamp, push: receiver.pushEnabled, now: now)
        }
        answer(deviceID, type: .ack, code: configuration.responseCodes.published, applicationMessageID: id, now: now)
    }

    /// EFDI as agrirouter checks it: in the sender's capabilities, raw protobuf of the right message,
    /// never chunked, a description with a team set context id and a TimeLog only under one the
    /// sender has described. A description nobody receives is answered VAL_000004, as agrirouter
    /// does; a TimeLog nobody receives is taken, as agrirouter 2.0 takes a publish nobody subscribed to.
    /// The DDIs agrirouter accepts in EFDI (VAL_000027 outside).
    static let validDDIs: ClosedRange<UInt32> = 1...65534

    private func publishEFDI(_ request: DecodedRequest, from deviceID: String, now: Date) {
        let id = request.envelope.applicationMessageID
        let type = request.envelope.technicalMessageType
        let isDescription = type == TechnicalMessageType.deviceDescription
        func refuse(_ text: String, _ code: String) {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id, messages: [(text, code)], now: now
            )
        }
        guard endpoints[deviceID]?.accepts(type, receiving: false) == true else {
            return refuse("\(type) is not in the sender's capabilities", "VAL_000004")
        }
        if request.envelope.hasChunkInfo { return refuse("EFDI cannot be chunked", "VAL_000019") }
        if Self.looksLikeBase64(request.payload) {
            return refuse("EFDI must be raw protobuf, not base64", "VAL_000300")
        }
        let teamSet = request.envelope.teamSetContextID
        if isDescription {
            guard let taskData = try? Efdi_ISO11783_TaskData(serializedBytes: request.payload), !taskData.device.isEmpty
            else {
                return refuse("Payload is not an ISO11783_TaskData with a device", "VAL_000015")
            }
            guard !teamSet.isEmpty else {
                return refuse("The device description has no team set context id", "VAL_000016")
            }
            let ddis = taskData.device.flatMap { $0.deviceProcessData.map(\.deviceProcessDataDdi) }
            if let ddi = ddis.first(where: { !Self.validDDIs.contains($0) }) {
                return refuse("DDI \(ddi) is out of range", "VAL_000027")
            }
            endpoints[deviceID]?.teamSets.insert(teamSet)
        } else {
            guard let timeLog = try? Efdi_TimeLog(serializedBytes: request.payload) else {
                return refuse("Payload is not a TimeLog", "VAL_000300")
            }
            if let ddi = timeLog.time.lazy.flatMap(\.dataLogValue).map(\.processDataDdi).first(where: {
                !Self.validDDIs.contains($0)
            }) {
                return refuse("DDI \(ddi) is out of range", "VAL_000027")
            }
            guard endpoints[deviceID]?.teamSets.contains(teamSet) == true else {
                return refuse(
                    "Team set context id \(teamSet) is unknown; send its device description first", "VAL_000020")
            }
        }
        configuration.onAcceptedEFDI?(deviceID, id, type, request.payload)
        var recipients = 0
        for (receiverID, receiver) in endpoints
        where receiverID != deviceID && !deleted.contains(receiverID) && receiver.subscriptions.contains(type) {
            deliver(
                request.payload, type: type, from: deviceID, to: receiverID,
                sequenceNumber: request.envelope.applicationMessageSeqNo,
                sentAt: request.envelope.timestamp, teamSetContextID: teamSet, push: receiver.pushEnabled, now: now)
            recipients += 1
        }
        if isDescription && recipients == 0 {
            return refuse("No recipients have been identified for \(type).", "VAL_000004")
        }
        answer(deviceID, type: .ack, code: configuration.responseCodes.published, applicationMessageID: id, now: now)
    }

    /// TaskData as agrirouter carries it: in the sender's capabilities (send), base64 in the payload,
    /// each chunk a message of its own with a chunk component agrirouter passes on unchanged, and no
    /// chunk above the cap (HTTP 413 before it gets here). Published, it reaches every endpoint
    /// subscribed to it, as gps:info and EFDI do; sent direct, the recipients that declared they
    /// receive it. Nobody to receive it is no error: agrirouter 2.0 takes a publish nobody subscribed to.
    private func publishTaskData(_ request: DecodedRequest, from deviceID: String, now: Date) {
        let id = request.envelope.applicationMessageID
        let type = TechnicalMessageType.taskData
        func refuse(_ text: String, _ code: String) {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id, messages: [(text, code)], now: now
            )
        }
        guard endpoints[deviceID]?.accepts(type, receiving: false) == true else {
            return refuse("\(type) is not in the sender's capabilities", "VAL_000004")
        }
        guard let raw = ChunkJoiner.rawContent(request.payload), !raw.isEmpty else {
            return refuse("TaskData must be a base64 zip", "VAL_000300")
        }
        var chunk: ChunkPosition?
        if request.envelope.hasChunkInfo {
            let info = request.envelope.chunkInfo
            guard !info.contextID.isEmpty, info.total >= 1, info.current >= 0, info.current <= info.total,
                info.totalSize >= Int64(raw.count)
            else {
                return refuse("The chunk component is incomplete or out of range", "VAL_000300")
            }
            chunk = ChunkPosition(
                contextID: info.contextID, current: info.current, total: info.total, totalSize: info.totalSize)
        }
        let fileName = request.envelope.hasMetadata ? request.envelope.metadata.fileName : ""
        var receivers = Set(endpoints.filter { $0.value.subscriptions.contains(type) }.keys)
        if request.envelope.mode != .publish {
            receivers.formUnion(
                request.envelope.recipients.filter { endpoints[$0]?.accepts(type, receiving: true) == true })
        }
        for receiverID in receivers.sorted() where receiverID != deviceID && !deleted.contains(receiverID) {
            deliver(
                request.payload, type: type, from: deviceID, to: receiverID,
                sequenceNumber: request.envelope.applicationMessageSeqNo,
                sentAt: request.envelope.timestamp, chunk: chunk, fileName: fileName,
                push: endpoints[receiverID]?.pushEnabled == true, now: now)
        }
        answer(deviceID, type: .ack, code: configuration.responseCodes.published, applicationMessageID: id, now: now)
    }

    /// Puts a message (gps:info unless told) into the receiver's feed, with its chunk component if it is one
    /// part of a chunked message (and, with push, a copy into its outbox). Returns its message id.
    /// `sentAt` is the sender's own timestamp, "provided by the sender", and `created_at` the time the
    /// message was added to the feed (`commands/feed.adoc`, the message header's fields).
    @discardableResult
    func deliver(
        _ content: Data, type: String = TechnicalMessageType.gpsInfo, from senderID: String, to receiverID: String,
        sequenceNumber: Int64 = 1,
        sentAt: Google_Protobuf_Timestamp, teamSetContextID: String = "", chunk: ChunkPosition? = nil,
        fileName: String = "",
        push pushing: Bool, now: Date = Date()
    ) -> String {
        var message = Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage()
        message.header.receiverID = receiverID
        message.header.senderID = senderID
        message.header.technicalMessageType = type
        message.header.teamSetContextID = teamSetContextID
        message.header.messageID = UUID().uuidString.lowercased()
        message.header.sequenceNumber = sequenceNumber
        message.header.payloadSize = Int64(content.count)
        message.header.sentTimestamp = sentAt
        message.header.createdAt = Google_Protobuf_Timestamp(date: now)
        if let chunk {
            message.header.chunkContext.contextID = chunk.contextID
            message.header.chunkContext.current = chunk.current
            message.header.chunkContext.total = chunk.total
            message.header.chunkContext.totalSize = chunk.totalSize
        }
        if !fileName.isEmpty { message.header.metadata.fileName = fileName }
        message.content.value = content  // type_url left empty, as agrirouter 2.0 does
        endpoints[receiverID]?.feed.append(message)
        if pushing { push(message, to: receiverID, now: now) }
        return message.header.messageID
    }

    private func push(
        _ message: Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage, to receiverID: String, now: Date
    ) {
        var pushed = Agrirouter_Feed_Push_Notification_PushNotification.FeedMessage()
        pushed.content = message.content
        if let bytes: Data = try? message.header.serializedBytes() {
            pushed.header =
                (try? Agrirouter_Feed_Push_Notification_PushNotification.Header(serializedBytes: bytes)) ?? .init()
        }
        var notification = Agrirouter_Feed_Push_Notification_PushNotification()
        notification.messages = [pushed]
        // 200, "also used with PUSH-Notifications" (`integration/analyse-result.adoc`).
        enqueue(
            receiverID, type: .pushNotification, code: configuration.responseCodes.push, applicationMessageID: "",
            messageID: message.header.messageID,
            payload: notification, now: now)
    }

    private func listEndpoints(_ request: DecodedRequest, for deviceID: String, now: Date) {
        var listing = Agrirouter_Response_Payload_Account_ListEndpointsResponse()
        listing.endpoints = endpoints.values.filter { !deleted.contains($0.deviceID) }.sorted { $0.name < $1.name }.map
        { endpoint in
            var entry = Agrirouter_Response_Payload_Account_ListEndpointsResponse.Endpoint()
            entry.endpointID = endpoint.deviceID
            entry.endpointName = endpoint.name
            entry.endpointType = "application"
            entry.status = "active"
            entry.externalID = endpoint.externalID
            entry.messageTypes = (endpoint.capabilities ?? [:]).sorted { $0.key < $1.key }.map { type, direction in
                var messageType = Agrirouter_Response_Payload_Account_ListEndpointsResponse.MessageType()
                messageType.technicalMessageType = type
                messageType.direction = .init(rawValue: direction.rawValue) ?? .send
                return messageType
            }
            return entry
        }
        enqueue(
            deviceID, type: .endpointsListing, code: 200, applicationMessageID: request.envelope.applicationMessageID,
            payload: listing, now: now)
    }

    // MARK: - Feed

    static let feedPageSize = 25

    private typealias FeedMessage = Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage

    /// The endpoint's feed messages that meet every criterion given (an empty criterion is ignored),
    /// sorted by sender, then time and sequence number, as agrirouter sorts them.
    private func matching(
        _ deviceID: String, ids: [String], senders: [String],
        period: Agrirouter_Feed_Request_ValidityPeriod?
    ) -> [FeedMessage] {
        (endpoints[deviceID]?.feed ?? []).filter { message in
            (ids.isEmpty || ids.contains(message.header.messageID))
                && (senders.isEmpty || senders.contains(message.header.senderID))
                && (period.map { period in
                    // Compared as numbers: a client's timestamp may be anything, and turning one near
                    // Int64's ends into a Date traps.
                    let sent = message.header.sentTimestamp.instant
                    return (!period.hasSentFrom || sent >= period.sentFrom.instant)
                        && (!period.hasSentTo || sent <= period.sentTo.instant)
                } ?? true)
        }.sorted {
            (
                $0.header.senderID, $0.header.sentTimestamp.instant.seconds, $0.header.sentTimestamp.instant.nanos,
                $0.header.sequenceNumber
            )
                < (
                    $1.header.senderID, $1.header.sentTimestamp.instant.seconds, $1.header.sentTimestamp.instant.nanos,
                    $1.header.sequenceNumber
                )
        }
    }

    private func feedQuery(_ request: DecodedRequest, for deviceID: String, now: Date) {
        let id = request.envelope.applicationMessageID
        guard let query = try? Agrirouter_Feed_Request_MessageQuery(serializedBytes: request.payload),
            !query.messageIds.isEmpty || !query.senders.isEmpty || query.hasValidityPeriod
        else {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Query does not contain any filtering criteria", "VAL_000017")], now: now)
            return
        }
        let found = matching(
            deviceID, ids: query.messageIds, senders: query.senders,
            period: query.hasValidityPeriod ? query.validityPeriod : nil)
        var response = Agrirouter_Feed_Response_MessageQueryResponse()
        response.queryMetrics.totalMessagesInQuery = Int32(found.count)
        response.queryMetrics.maxCountRestriction = Int32(Self.feedPageSize)
        response.page.number = found.isEmpty ? 0 : 1
        response.page.total = Int32((found.count + Self.feedPageSize - 1) / Self.feedPageSize)
        response.messages = Array(found.prefix(Self.feedPageSize))
        enqueue(
            deviceID, type: .ackForFeedMessage, code: found.isEmpty ? 204 : 200, applicationMessageID: id,
            payload: response, now: now)
    }

    private func feedConfirm(_ request: DecodedRequest, for deviceID: String, now: Date) {
        let id = request.envelope.applicationMessageID
        guard let confirm = try? Agrirouter_Feed_Request_MessageConfirm(serializedBytes: request.payload),
            !confirm.messageIds.isEmpty
        else {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Confirm does not contain any message ids", "VAL_000017")], now: now)
            return
        }
        let known = Set(endpoints[deviceID]?.feed.map(\.header.messageID) ?? [])
        endpoints[deviceID]?.feed.removeAll { confirm.messageIds.contains($0.header.messageID) }
        endpoints[deviceID]?.confirmations += confirm.messageIds.map { ($0, now) }
        // One message per id, its text the template of `error-codes.adoc` and the id in `args`.
        answer(
            deviceID, type: .ackWithMessages, code: 200, applicationMessageID: id,
            notes: confirm.messageIds.map { messageID in
                known.contains(messageID)
                    ? SimNote("Message %messageId% delivery had been confirmed.", "VAL_000206", messageId: messageID)
                    : SimNote(
                        "Message %messageId% not found. This ID will be ignored.", "VAL_000205", messageId: messageID)
            }, now: now)
    }

    private func feedDelete(_ request: DecodedRequest, for deviceID: String, now: Date) {
        let id = request.envelope.applicationMessageID
        guard let delete = try? Agrirouter_Feed_Request_MessageDelete(serializedBytes: request.payload),
            !delete.messageIds.isEmpty || !delete.senders.isEmpty || delete.hasValidityPeriod
        else {
            answer(
                deviceID, type: .ackWithFailure, code: 400, applicationMessageID: id,
                messages: [("Delete does not contain any filtering criteria", "VAL_000018")], now: now)
            return
        }
        let doomed = Set(
            matching(
                deviceID, ids: delete.messageIds, senders: delete.senders,
                period: delete.hasValidityPeriod ? delete.validityPeriod : nil
            ).map(\.header.messageID))
        endpoints[deviceID]?.feed.removeAll { doomed.contains($0.header.messageID) }
        // Nothing to delete: 204 and the text DKE's SDK tests read from agrirouter (`error-codes.adoc`
        // gives this as the code's reason and "No data is currently available for requested query"
        // as its text). Deleted: 201 in the SDK tests, one VAL_000209 per id with the id in `args`.
        if doomed.isEmpty {
            answer(
                deviceID, type: .ackWithMessages, code: 204, applicationMessageID: id,
                messages: [("Feed does not contain any data to be deleted.", "VAL_000208")], now: now)
        } else {
            answer(
                deviceID, type: .ackWithMessages, code: configuration.responseCodes.deleted, applicationMessageID: id,
                notes: doomed.sorted().map { SimNote("Message %messageId% deleted", "VAL_000209", messageId: $0) },
                now: now)
        }
    }

    private func answer(
        _ deviceID: String, type: Agrirouter_Response_ResponseEnvelope.ResponseBodyType, code: Int32,
        applicationMessageID: String, messages: [(String, String)] = [], now: Date
    ) {
        answer(
            deviceID, type: type, code: code, applicationMessageID: applicationMessageID,
            notes: messages.map { SimNote($0.0, $0.1) }, now: now)
    }

    private func answer(
        _ deviceID: String, type: Agrirouter_Response_ResponseEnvelope.ResponseBodyType, code: Int32,
        applicationMessageID: String, notes: [SimNote], now: Date
    ) {
        var payload: (any SwiftProtobuf.Message)?
        if !notes.isEmpty {
            var list = Agrirouter_Commons_Messages()
            list.messages = notes.map { note in
                var message = Agrirouter_Commons_Message()
                message.message = note.text
                message.messageCode = note.code
                message.args = note.args
                return message
            }
            payload = list
        }
        enqueue(
            deviceID, type: type, code: code, applicationMessageID: applicationMessageID, payload: payload, now: now)
    }

    private func enqueue(
        _ deviceID: String, type: Agrirouter_Response_ResponseEnvelope.ResponseBodyType, code: Int32,
        applicationMessageID: String, messageID: String = UUID().uuidString.lowercased(),
        payload: (any SwiftProtobuf.Message)?, now: Date
    ) {
        guard !faults.contains(.silentOutbox),
            let base64 = Self.outboxMessage(
                type: type, code: code, applicationMessageID: applicationMessageID, messageID: messageID,
                payload: payload, now: now)
        else { return }
        endpoints[deviceID]?.outbox.append((base64, now.addingTimeInterval(configuration.outboxLifetime)))
        if endpoints[deviceID]?.gatewayID == "2" { mqttOutboxChanged?(deviceID) }
    }

    /// `count` push notifications for `deviceID` as its commands topic carries them, each its own
    /// message from an endpoint nobody knows, with `size` bytes of content that is no technical
    /// message: a flood, for tests of what a box does under one. Not kept in any outbox or feed.
    func floodItems(for deviceID: String, count: Int, size: Int, now: Date = Date()) -> [Data] {
        guard let endpoint = endpoints[deviceID] else { return [] }
        let content = Data(repeating: 0xA5, count: max(0, min(size, 1 << 20)))
        return (0..<max(0, min(count, 100_000))).compactMap { index in
            var message = Agrirouter_Feed_Push_Notification_PushNotification.FeedMessage()
            message.header.messageID = "flood-\(index)-\(UUID().uuidString.lowercased())"
            message.header.senderID = "flooder"
            message.header.technicalMessageType = TechnicalMessageType.gpsInfo
            message.header.payloadSize = Int64(content.count)
            message.header.sentTimestamp = Google_Protobuf_Timestamp(date: now)
            message.content.value = content
            var notification = Agrirouter_Feed_Push_Notification_PushNotification()
            notification.messages = [message]
            guard
                let base64 = Self.outboxMessage(
                    type: .pushNotification, code: 0, applicationMessageID: "",
                    messageID: message.header.messageID, payload: notification, now: now)
            else { return nil }
            return SimJSON.encode(SimOutboxItem(endpoint, message: base64))
        }
    }

    /// One outbox message: the response envelope and its payload, framed and in base64.
    private static func outboxMessage(
        type: Agrirouter_Response_ResponseEnvelope.ResponseBodyType, code: Int32, applicationMessageID: String,
        messageID: String, payload: (any SwiftProtobuf.Message)?, now: Date
    ) -> String? {
        var envelope = Agrirouter_Response_ResponseEnvelope()
        envelope.responseCode = code
        envelope.type = type
        envelope.applicationMessageID = applicationMessageID
        envelope.messageID = messageID
        envelope.timestamp = Google_Protobuf_Timestamp(date: now)
        var wrapper = Agrirouter_Response_ResponsePayloadWrapper()
        if let payload, let bytes: Data = try? payload.serializedBytes() {
            wrapper.details.typeURL = TypeURL.of(Swift.type(of: payload).protoMessageName)
            wrapper.details.value = bytes
        }
        guard let envelopeBytes: Data = try? envelope.serializedBytes(),
            let wrapperBytes: Data = try? wrapper.serializedBytes()
        else { return nil }
        return DelimitedFrames.join([envelopeBytes, wrapperBytes]).base64EncodedString()
    }

    private static func looksLikeBase64(_ payload: Data) -> Bool {
        guard !payload.isEmpty, payload.count % 4 == 0 else { return false }
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=".utf8)
        return payload.allSatisfy(alphabet.contains) && Data(base64Encoded: payload) != nil
    }

    // MARK: - Control and inspection

    func inject(_ fault: SimFault) { faults.append(fault) }
    func stall(for seconds: Double) { stalledUntil = ProcessInfo.processInfo.systemUptime + seconds }
    func clearFaults() { faults.removeAll() }
    func pendingFaults() -> Int { faults.count }

    func sentMessages(endpoint deviceID: String) -> [DecodedRequest] { endpoints[deviceID]?.sent ?? [] }
    func arrivals(endpoint deviceID: String) -> [Date] { endpoints[deviceID]?.arrivals ?? [] }
    func gatewayRequestArrivals() -> [Double] { requestArrivals }
    func requestCount(endpoint deviceID: String) -> Int { requestsByEndpoint[deviceID] ?? 0 }
    func refusedForFutureTimestamps() -> Int { futureTimestampsRefused }
    func subscriptions(endpoint deviceID: String) -> Set<String> { endpoints[deviceID]?.subscriptions ?? [] }
    func feed(endpoint deviceID: String) -> [Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage] {
        endpoints[deviceID]?.feed ?? []
    }
    func confirmations(endpoint deviceID: String) -> [(messageID: String, at: Date)] {
        endpoints[deviceID]?.confirmations ?? []
    }

    /// Renames an endpoint, as its owner would in agrirouter's UI. False if there is no such endpoint.
    func rename(endpoint deviceID: String, to name: String) -> Bool {
        guard endpoints[deviceID] != nil else { return false }
        endpoints[deviceID]?.name = name
        return true
    }

    /// Deletes an endpoint, as its owner would in agrirouter's UI: it leaves every list.
    func delete(endpoint deviceID: String) -> Bool {
        guard let endpoint = endpoints[deviceID], !deleted.contains(deviceID) else { return false }
        deleted.insert(deviceID)
        deviceIDByExternalID[endpoint.externalID] = nil
        return true
    }

    func endpointIDs(named name: String) -> [String] {
        endpoints.values.filter { $0.name == name && !deleted.contains($0.deviceID) }.map(\.deviceID).sorted()
    }
}

/// One message of an ACK_WITH_MESSAGES or ACK_WITH_FAILURE: its text (a template, where the
/// documentation gives one, whose `%placeholders%` the client fills from `args`), code and args.
struct SimNote {
    var text: String
    var code: String
    var args: [String: String] = [:]

    init(_ text: String, _ code: String, messageId: String? = nil) {
        self.text = text
        self.code = code
        if let messageId { args["messageId"] = messageId }
    }
}

enum ISO8601 {
    /// An internet date-time as clients send it: in UTC ("Z"), or with an offset ("+02:00"), which
    /// is taken off to give the same instant.
    static func parse(_ text: String) -> Date? {
        guard text.utf8.count > 6, !text.hasSuffix("Z") else { return ISO8601UTC.date(from: text) }
        let offset = Array(text.utf8.suffix(6))
        guard offset[0] == UInt8(ascii: "+") || offset[0] == UInt8(ascii: "-"), offset[3] == UInt8(ascii: ":"),
            let hours = Int(String(decoding: offset[1..<3], as: UTF8.self)),
            let minutes = Int(String(decoding: offset[4..<6], as: UTF8.self)),
            hours < 24, minutes < 60, let local = ISO8601UTC.date(from: String(text.dropLast(6)) + "Z")
        else { return nil }
        let seconds = Double(hours * 3600 + minutes * 60)
        return local.addingTimeInterval(offset[0] == UInt8(ascii: "+") ? -seconds : seconds)
    }
}

extension Google_Protobuf_Timestamp {
    /// Seconds and nanoseconds as a comparable pair, without converting to a Date.
    var instant: Instant { Instant(seconds: seconds, nanos: nanos) }

    struct Instant: Comparable {
        var seconds: Int64
        var nanos: Int32

        static func < (left: Instant, right: Instant) -> Bool {
            (left.seconds, left.nanos) < (right.seconds, right.nanos)
        }
    }
}
