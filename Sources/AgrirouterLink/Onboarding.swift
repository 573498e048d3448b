import Bounds
import Clocks
import Foundation
import JSONText

/// Which agrirouter to onboard to. QA and production have their own hosts and their own application ids.
public enum AgrirouterEnvironment: Sendable, Equatable, CustomStringConvertible {
    case qa
    case production
    /// A local agrirouter (agrirouter-sim): its onboarding URL and the CA it signs with.
    case local(onboardingURL: String, caCertificatePEM: String)

    public var name: String {
        switch self {
        case .qa: return "qa"
        case .production: return "production"
        case .local: return "local"
        }
    }

    public var description: String { name }

    public var onboardingURL: String {
        switch self {
        case .qa: return "https://endpoint-service.qa.agrirouter.farm/api/v1.0/registration/onboard"
        case .production: return "https://onboard.agrirouter.com/api/v1.0/registration/onboard"
        case .local(let url, _): return url
        }
    }

    /// The CA to trust instead of the system's; only a local agrirouter has one.
    public var caCertificatePEM: String? {
        if case .local(_, let pem) = self { return pem }
        return nil
    }
}

/// How the endpoint talks to agrirouter, chosen once at onboarding: agrirouter keeps it with the
/// endpoint (its gateway id) and refuses a change on re-onboarding.
public enum Transport: String, Sendable, Equatable, CaseIterable, CustomStringConvertible {
    case rest
    case mqtt

    /// agrirouter's gateway id for the transport.
    public var gatewayID: String { self == .rest ? "3" : "2" }

    public init?(gatewayID: String) {
        switch gatewayID {
        case "3": self = .rest
        case "2": self = .mqtt
        default: return nil
        }
    }

    public var description: String { self == .rest ? "REST" : "MQTT" }
}

/// What onboarding needs from the integrator's configuration.
public struct OnboardingSettings: Sendable, Equatable {
    public var applicationID: String
    public var certificationVersionID: String

    public init(applicationID: String, certificationVersionID: String) {
        self.applicationID = applicationID
        self.certificationVersionID = certificationVersionID
    }
}

/// agrirouter's answer to a CU onboarding. `authentication.secret` opens the key in `certificate`.
public struct OnboardingResponse: Codable, Sendable, Equatable {
    /// REST (gateway 3): `measures` and `commands` are URLs. MQTT (gateway 2): they are topics, and
    /// `host`, `port` and `clientId` say where and as whom to connect.
    public struct ConnectionCriteria: Codable, Sendable, Equatable {
        public var gatewayId: String
        public var measures: String
        public var commands: String
        public var host: String?
        public var port: Int?
        public var clientId: String?

        public init(
            gatewayId: String, measures: String, commands: String, host: String? = nil, port: Int? = nil,
            clientId: String? = nil
        ) {
            (self.gatewayId, self.measures, self.commands) = (gatewayId, measures, commands)
            (self.host, self.port, self.clientId) = (host, port, clientId)
        }

        enum CodingKeys: String, CodingKey { case gatewayId, measures, commands, host, port, clientId }

        /// agrirouter's examples give the port as a string, its table as an integer: both are read,
        /// and anything outside 1...65535 is refused here rather than trapping later.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            gatewayId = try container.decode(String.self, forKey: .gatewayId)
            measures = try container.decode(String.self, forKey: .measures)
            commands = try container.decode(String.self, forKey: .commands)
            host = try container.decodeIfPresent(String.self, forKey: .host)
            clientId = try container.decodeIfPresent(String.self, forKey: .clientId)
            if let number = try? container.decodeIfPresent(Int.self, forKey: .port) {
                port = number
            } else if let text = try container.decodeIfPresent(String.self, forKey: .port) {
                port = Int(text.trimmingCharacters(in: .whitespaces))
                if port == nil {
                    throw DecodingError.dataCorruptedError(
                        forKey: .port, in: container, debugDescription: "the port is not a number")
                }
            }
            if let port, !(1...65_535).contains(port) {
                throw DecodingError.dataCorruptedError(
                    forKey: .port, in: container, debugDescription: "the port is not 1 to 65535")
            }
        }
    }

    public struct Authentication: Codable, Sendable, Equatable {
        public var type: String
        public var secret: String
        public var certificate: String
    }

    public var deviceAlternateId: String
    public var capabilityAlternateId: String
    public var sensorAlternateId: String
    public var connectionCriteria: ConnectionCriteria
    public var authentication: Authentication
}

/// The onboarding request's body, as agrirouter's onboarding API names its fields.
struct OnboardingRequest: Encodable {
    var id: String
    var applicationId: String
    var certificationVersionId: String
    var gatewayId: String
    var certificateType = "PEM"
    var UTCTimestamp: String
    var timeZone = "+00:00"
}

/// Why onboarding failed, worded for the person who typed the TAN. agrirouter's code is kept.
public enum OnboardingError: Error, Sendable, Equatable, CustomStringConvertible {
    case missingSettings([String])
    case invalidTAN
    case agrirouter(status: Int, code: String, message: String)
    case transport(TransportError)
    case unreadableResponse(String)
    case alreadyOnboarded(environment: String)
    /// The endpoint was onboarded with the other transport; agrirouter does not let it change.
    case transportFixed(onboardedWith: Transport)
    case storage(String)
    /// The stored endpoint's MQTT connection cannot be made on this box (libmosquitto missing, its
    /// files unwritable): the credentials are fine.
    case mqttSetup(String)
    /// A setting of the onboarding (a URL, a CA file) is unusable; nothing was sent.
    case configuration(String)

    public var description: String {
        switch self {
        case .missingSettings(let keys):
            let names = keys.joined(separator: " and ")
            return
                "onboarding needs the \(names) of your agrirouter application in this environment; \(keys.count == 1 ? "it is" : "they are") not configured"
        case .invalidTAN:
            return "a TAN is the registration code from the agrirouter UI: letters and digits only"
        case .agrirouter(let status, let code, _):
            return
                "agrirouter refused the onboarding (code \(code.isEmpty ? "none" : code), HTTP \(status)): \(Self.advice(for: code, status: status))"
        case .transport(let error): return error.description
        case .unreadableResponse(let reason): return "agrirouter's onboarding answer could not be read: \(reason)"
        case .alreadyOnboarded(let environment):
            return
                "this machine is onboarded to agrirouter \(environment); run 'agrigps disconnect' before onboarding to another environment"
        case .transportFixed(let transport):
            return "this endpoint was onboarded for \(transport) and agrirouter keeps an endpoint's transport; "
                + "onboard again with --transport \(transport.rawValue), or remove the endpoint in the agrirouter UI and delete endpoint-id in the state directory for a new one"
        case .storage(let reason): return "the credentials could not be stored: \(reason)"
        case .mqttSetup(let reason): return "the MQTT connection cannot be set up: \(reason)"
        case .configuration(let reason): return reason
        }
    }

    static func advice(for code: String, status: Int) -> String {
        switch code {
        case "0401": return "the TAN is unknown or used up; create a new one in the agrirouter UI and onboard again"
        case "0110":
            return
                "the system clock is ahead of agrirouter's; set the clock (or let GNSS time set it) and onboard again"
        case "0105":
            return
                "the TAN was not created for this application, or the application id is wrong for this environment; check both"
        case "0101": return "the certification version id is wrong for this environment; check the configuration"
        case "0023":
            return
                "this endpoint was blocked after an earlier onboarding; remove it in the agrirouter UI, then onboard with a new TAN"
        case "0010", "0011": return "the agrirouter account is inactive or unknown; check it in the agrirouter UI"
        case "0020", "0021", "0022", "0024":
            return "the application is not approved for this account or not certified for CUs; contact the integrator"
        case "0100", "0102", "0103", "0104":
            return "agrirouter rejected the request itself; this is a defect in agrigps, please report it with the code"
        default:
            return status == 401
                ? "the TAN was not accepted; create a new one in the agrirouter UI" : "see agrirouter's code above"
        }
    }
}

/// The CU onboarding conversation: one POST with the TAN as bearer.
public struct OnboardingClient: Sendable {
    public var environment: AgrirouterEnvironment
    public var settings: OnboardingSettings
    public var timeout: Double

    public init(environment: AgrirouterEnvironment, settings: OnboardingSettings, timeout: Double = 60) {
        self.environment = environment
        self.settings = settings
        self.timeout = timeout
    }

    /// A TAN is letters and digits only, as the agrirouter UI shows it; at most 64 of them. Checked
    /// before any request, by the command line and the cab view as well.
    public static func isPlausibleTAN(_ tan: String) -> Bool {
        !tan.isEmpty && tan.count <= 64 && tan.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
    }

    /// Onboards endpoint `externalID` with `tan`. The timestamp is 10 s in the past: agrirouter
    /// refuses any from the future (0110), however slightly.
    public func onboard(tan: String, externalID: String, transport: Transport = .rest, now: Date = Date())
        async throws(OnboardingError) -> OnboardingResponse
    {
        guard Self.isPlausibleTAN(tan) else { throw .invalidTAN }
        let missing = [
            ("applicationId", settings.applicationID), ("certificationVersionId", settings.certificationVersionID),
        ]
        .filter { $0.1.isEmpty }.map(\.0)
        guard missing.isEmpty else { throw .missingSettings(missing) }
        let request = OnboardingRequest(
            id: externalID, applicationId: settings.applicationID,
            certificationVersionId: settings.certificationVersionID, gatewayId: transport.gatewayID,
            UTCTimestamp: ISO8601UTC.string(from: now.addingTimeInterval(-10)))
        // An onboarding answer is a few kilobytes: a credential and three ids.
        let client = HTTPSClient(
            trustedCAPEM: environment.caCertificatePEM, totalTimeout: timeout, maximumResponseBytes: 1_048_576)
        let response: HTTPResponse
        do {
            // Slashes escaped, as this request has always been sent.
            let body = try JSONWriter.encoder(escapingSlashes: true).encode(request)
            response = try await client.send(
                method: "POST", url: environment.onboardingURL, body: body,
                headers: ["Authorization: Bearer \(tan)", "Content-Type: application/json"], anyStatus: true)
        } catch let error as TransportError {
            throw .transport(error)
        } catch {
            throw .unreadableResponse("\(error)")
        }
        guard response.status == 201 || response.status == 200 else { throw Self.refusal(response) }
        let decoded: OnboardingResponse
        do {
            decoded = try JSONDecoder().decode(OnboardingResponse.self, from: response.body)
        } catch {
            throw .unreadableResponse("unexpected JSON")
        }
        guard decoded.transport == transport || decoded.transport == nil else {
            throw .unreadableResponse(
                "agrirouter answered for \(decoded.transport?.description ?? "another transport"), not the \(transport) asked for"
            )
        }
        _ = try decoded.check(for: environment)
        return decoded
    }

    /// agrirouter's error body is `{"error":{"code":"0110","message":...}}`; the code may be a number.
    struct Refusal: Decodable {
        struct Detail: Decodable {
            var code = ""
            var message = ""

            enum CodingKeys: String, CodingKey { case code, message }

            init(from decoder: any Decoder) throws {
                let keyed = try decoder.container(keyedBy: CodingKeys.self)
                if let text = try? keyed.decode(String.self, forKey: .code) {
                    code = text
                } else if let number = try? keyed.decode(Int.self, forKey: .code), (0...999_999).contains(number) {
                    code = String(format: "%04d", number)
                }
                message = (try? keyed.decode(String.self, forKey: .message)) ?? ""
            }
        }

        var error: Detail?
    }

    static func refusal(_ response: HTTPResponse) -> OnboardingError {
        let error = (try? JSONDecoder().decode(Refusal.self, from: response.body))?.error
        // The code is shown to the user: another party's text, escaped and cut.
        return .agrirouter(
            status: response.status, code: TerminalText.safe(error?.code ?? "", limit: 16),
            message: TerminalText.safe(error?.message ?? "", limit: 200))
    }
}

extension OnboardingResponse {
    /// Every check an answer passes before it may replace a stored credential; the first that fails
    /// is the reason it is refused. Returns what the credential says of itself.
    ///
    /// - The ids are printable and short (real ones are UUIDs), so they are safe in a terminal and a path.
    /// - The measures and commands URLs are https, on one host, without user info, a query or a
    ///   fragment, and end in the endpoint id, as agrirouter's do. A local agrirouter must answer on its
    ///   own host; QA and production on a DNS name (their hosts have moved before, so no name is fixed here).
    /// - The credential is PEM, its secret opens its key, and the key belongs to its certificate.
    public func check(for environment: AgrirouterEnvironment) throws(OnboardingError) -> CredentialFacts {
        // A passphrase, not a payload: checked first, so that a huge one cannot make the checks below slow.
        let secret = authentication.secret
        guard (1...1024).contains(secret.unicodeScalars.count) else {
            throw .unreadableResponse("the secret is not a passphrase of 1 to 1024 characters")
        }
        // A value is echoed to say what is wrong with it, escaped and cut, and never with the secret in
        // it. It is cut before the secret is looked for, but not so short that a secret that starts
        // in what is shown could be cut in two.
        func shown(_ text: String, limit: Int) -> String {
            let head = String(text.unicodeScalars.prefix(limit + secret.unicodeScalars.count))
            return TerminalText.safe(head.replacingOccurrences(of: secret, with: "[secret]"), limit: limit)
        }
        for (name, id) in [
            ("deviceAlternateId", deviceAlternateId), ("capabilityAlternateId", capabilityAlternateId),
            ("sensorAlternateId", sensorAlternateId),
        ] {
            guard Self.isPlainID(id) else {
                throw .unreadableResponse(
                    "\(name) \"\(shown(id, limit: 40))\" is not an id (1 to 128 letters, digits, - _ . :)")
            }
        }
        switch transport {
        case .rest?:
            let measures = try Self.endpointURL(
                connectionCriteria.measures, name: "measures", shown: shown(connectionCriteria.measures, limit: 80),
                deviceID: deviceAlternateId, environment: environment)
            let commands = try Self.endpointURL(
                connectionCriteria.commands, name: "commands", shown: shown(connectionCriteria.commands, limit: 80),
                deviceID: deviceAlternateId, environment: environment)
            guard measures.host == commands.host, measures.port == commands.port else {
                throw .unreadableResponse("the measures and commands URLs are on different hosts")
            }
        case .mqtt?:
            try checkBroker(environment: environment, shown: shown)
        case nil:
            throw .unreadableResponse(
                "gateway id \"\(shown(connectionCriteria.gatewayId, limit: 20))\" is neither REST's (3) nor MQTT's (2)")
        }
        guard authentication.type == "PEM", !authentication.secret.isEmpty,
            let credentials = ClientCredentials(
                agrirouterPEM: authentication.certificate, secret: authentication.secret)
        else {
            throw .unreadableResponse("the certificate is not an encrypted PEM key and certificate")
        }
        do {
            return try credentials.check()
        } catch {
            throw .unreadableResponse("the credential cannot be used: \(error.description)")
        }
    }

    /// The transport agrirouter set up the endpoint for; nil for a gateway id agrigps does not speak.
    public var transport: Transport? { Transport(gatewayID: connectionCriteria.gatewayId) }

    /// MQTT's criteria: a broker on a DNS name (a local agrirouter's on its own host), a port, a client
    /// id that is a plain id, and the endpoint's own measures and commands topics, without wildcards.
    private func checkBroker(environment: AgrirouterEnvironment, shown: (String, Int) -> String) throws(OnboardingError)
    {
        guard let host = connectionCriteria.host, let port = connectionCriteria.port,
            let clientID = connectionCriteria.clientId
        else {
            throw .unreadableResponse("the MQTT answer lacks the broker's host, port or client id")
        }
        guard (1...65_535).contains(port) else {
            throw .unreadableResponse("the broker port \(port) is not 1 to 65535")
        }
        guard Self.isPlainID(clientID) else {
            throw .unreadableResponse(
                "the client id \"\(shown(clientID, 40))\" is not an id (1 to 128 letters, digits, - _ . :)")
        }
        try Self.checkHost(host, name: "broker", shown: shown(host, 80), environment: environment)
        for (name, topic) in [("measures", connectionCriteria.measures), ("commands", connectionCriteria.commands)] {
            guard topic.hasPrefix(name + "/"), Self.isPlainID(String(topic.dropFirst(name.count + 1))) else {
                throw .unreadableResponse("the \(name) topic \"\(shown(topic, 80))\" is not \(name)/ and an id")
            }
        }
    }

    /// A local agrirouter answers on its own host; QA and production on a DNS name (their hosts have
    /// moved before, so no name is fixed here).
    private static func checkHost(_ host: String, name: String, shown: String, environment: AgrirouterEnvironment)
        throws(OnboardingError)
    {
        if case .local(let onboardingURL, _) = environment {
            guard let onboardingHost = URLComponents(string: onboardingURL)?.host,
                host.lowercased() == onboardingHost.lowercased()
            else {
                throw .unreadableResponse("the \(name) \"\(shown)\" is not on the local agrirouter's host")
            }
        } else {
            let isName = host.contains(".") && host.last?.isLetter == true && !host.hasSuffix(".localhost")
            guard isName,
                host.unicodeScalars.allSatisfy({
                    $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-.".unicodeScalars.contains($0))
                })
            else {
                throw .unreadableResponse("the \(name) \"\(shown)\" is not on a DNS name")
            }
        }
    }

    static func isPlainID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count)
            && id.unicodeScalars.allSatisfy {
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.:".unicodeScalars.contains($0))
            }
    }

    private static func endpointURL(
        _ text: String, name: String, shown: String, deviceID: String,
        environment: AgrirouterEnvironment
    ) throws(OnboardingError) -> URLComponents {
        guard text.utf8.count <= 2048, let url = URLComponents(string: text), url.scheme?.lowercased() == "https",
            let host = url.host, !host.isEmpty, url.user == nil, url.password == nil, url.query == nil,
            url.fragment == nil
        else {
            throw .unreadableResponse("the \(name) URL \"\(shown)\" is not a plain https URL")
        }
        guard url.path.hasSuffix("/" + deviceID) else {
            throw .unreadableResponse("the \(name) URL \"\(shown)\" does not end in the endpoint id")
        }
        try checkHost(host, name: "\(name) URL", shown: shown, environment: environment)
        return url
    }
}
