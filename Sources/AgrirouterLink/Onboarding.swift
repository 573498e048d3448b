import Bounds
import Foundation

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
    public struct ConnectionCriteria: Codable, Sendable, Equatable {
        public var gatewayId: String
        public var measures: String
        public var commands: String
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

/// Why onboarding failed, worded for the person who typed the TAN. agrirouter's code is kept.
public enum OnboardingError: Error, Sendable, Equatable, CustomStringConvertible {
    case missingSettings([String])
    case invalidTAN
    case agrirouter(status: Int, code: String, message: String)
    case transport(TransportError)
    case unreadableResponse(String)
    case alreadyOnboarded(environment: String)
    case storage(String)

    public var description: String {
        switch self {
        case .missingSettings(let keys):
            let names = keys.joined(separator: " and ")
            return "onboarding needs the \(names) of your agrirouter application in this environment; \(keys.count == 1 ? "it is" : "they are") not configured"
        case .invalidTAN:
            return "a TAN is the registration code from the agrirouter UI: letters and digits only"
        case .agrirouter(let status, let code, _):
            return "agrirouter refused the onboarding (code \(code.isEmpty ? "none" : code), HTTP \(status)): \(Self.advice(for: code, status: status))"
        case .transport(let error): return error.description
        case .unreadableResponse(let reason): return "agrirouter's onboarding answer could not be read: \(reason)"
        case .alreadyOnboarded(let environment):
            return "this machine is onboarded to agrirouter \(environment); run 'agrigps disconnect' before onboarding to another environment"
        case .storage(let reason): return "the credentials could not be stored: \(reason)"
        }
    }

    static func advice(for code: String, status: Int) -> String {
        switch code {
        case "0401": return "the TAN is unknown or used up; create a new one in the agrirouter UI and onboard again"
        case "0110": return "the system clock is ahead of agrirouter's; set the clock (or let GNSS time set it) and onboard again"
        case "0105": return "the TAN was not created for this application, or the application id is wrong for this environment; check both"
        case "0101": return "the certification version id is wrong for this environment; check the configuration"
        case "0023": return "this endpoint was blocked after an earlier onboarding; remove it in the agrirouter UI, then onboard with a new TAN"
        case "0010", "0011": return "the agrirouter account is inactive or unknown; check it in the agrirouter UI"
        case "0020", "0021", "0022", "0024": return "the application is not approved for this account or not certified for CUs; contact the integrator"
        case "0100", "0102", "0103", "0104": return "agrirouter rejected the request itself; this is a defect in agrigps, please report it with the code"
        default: return status == 401 ? "the TAN was not accepted; create a new one in the agrirouter UI" : "see agrirouter's code above"
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
    public func onboard(tan: String, externalID: String, now: Date = Date()) async throws(OnboardingError) -> OnboardingResponse {
        guard Self.isPlausibleTAN(tan) else { throw .invalidTAN }
        let missing = [("applicationId", settings.applicationID), ("certificationVersionId", settings.certificationVersionID)]
            .filter { $0.1.isEmpty }.map(\.0)
        guard missing.isEmpty else { throw .missingSettings(missing) }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let request: [String: String] = [
            "id": externalID, "applicationId": settings.applicationID,
            "certificationVersionId": settings.certificationVersionID, "gatewayId": "3", "certificateType": "PEM",
            "UTCTimestamp": formatter.string(from: now.addingTimeInterval(-10)), "timeZone": "+00:00",
        ]
        // An onboarding answer is a few kilobytes: a credential and three ids.
        let client = HTTPSClient(trustedCAPEM: environment.caCertificatePEM, totalTimeout: timeout, maximumResponseBytes: 1_048_576)
        let response: HTTPResponse
        do {
            let body = try JSONSerialization.data(withJSONObject: request, options: [.sortedKeys])
            response = try await client.send(method: "POST", url: environment.onboardingURL, body: body,
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
        _ = try decoded.check(for: environment)
        return decoded
    }

    /// agrirouter's error body is `{"error":{"code":"0110","message":...}}`; the code may be a number.
    static func refusal(_ response: HTTPResponse) -> OnboardingError {
        let error = (try? JSONSerialization.jsonObject(with: response.body) as? [String: Any])?["error"] as? [String: Any]
        let code: String
        switch error?["code"] {
        case let text as String: code = text
        case let number as NSNumber: code = String(format: "%04d", number.intValue)
        default: code = ""
        }
        // The code is shown to the user: another party's text, escaped and cut.
        return .agrirouter(status: response.status, code: TerminalText.safe(code, limit: 16),
                           message: TerminalText.safe(error?["message"] as? String ?? "", limit: 200))
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
        for (name, id) in [("deviceAlternateId", deviceAlternateId), ("capabilityAlternateId", capabilityAlternateId),
                           ("sensorAlternateId", sensorAlternateId)] {
            guard Self.isPlainID(id) else {
                throw .unreadableResponse("\(name) \"\(shown(id, limit: 40))\" is not an id (1 to 128 letters, digits, - _ . :)")
            }
        }
        guard connectionCriteria.gatewayId == "3" else {
            throw .unreadableResponse("gateway id \"\(shown(connectionCriteria.gatewayId, limit: 20))\" is not REST's (3)")
        }
        let measures = try Self.endpointURL(connectionCriteria.measures, name: "measures", shown: shown(connectionCriteria.measures, limit: 80),
                                            deviceID: deviceAlternateId, environment: environment)
        let commands = try Self.endpointURL(connectionCriteria.commands, name: "commands", shown: shown(connectionCriteria.commands, limit: 80),
                                            deviceID: deviceAlternateId, environment: environment)
        guard measures.host == commands.host, measures.port == commands.port else {
            throw .unreadableResponse("the measures and commands URLs are on different hosts")
        }
        guard authentication.type == "PEM", !authentication.secret.isEmpty,
              let credentials = ClientCredentials(agrirouterPEM: authentication.certificate, secret: authentication.secret) else {
            throw .unreadableResponse("the certificate is not an encrypted PEM key and certificate")
        }
        do {
            return try credentials.check()
        } catch {
            throw .unreadableResponse("the credential cannot be used: \(error.description)")
        }
    }

    static func isPlainID(_ id: String) -> Bool {
        (1...128).contains(id.utf8.count) && id.unicodeScalars.allSatisfy { $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_.:".unicodeScalars.contains($0)) }
    }

    private static func endpointURL(_ text: String, name: String, shown: String, deviceID: String,
                                    environment: AgrirouterEnvironment) throws(OnboardingError) -> URLComponents {
        guard text.utf8.count <= 2048, let url = URLComponents(string: text), url.scheme?.lowercased() == "https",
              let host = url.host, !host.isEmpty, url.user == nil, url.password == nil, url.query == nil, url.fragment == nil else {
            throw .unreadableResponse("the \(name) URL \"\(shown)\" is not a plain https URL")
        }
        guard url.path.hasSuffix("/" + deviceID) else {
            throw .unreadableResponse("the \(name) URL \"\(shown)\" does not end in the endpoint id")
        }
        if case .local(let onboardingURL, _) = environment {
            guard let onboardingHost = URLComponents(string: onboardingURL)?.host, host.lowercased() == onboardingHost.lowercased() else {
                throw .unreadableResponse("the \(name) URL \"\(shown)\" is not on the local agrirouter's host")
            }
        } else {
            let isName = host.contains(".") && host.last?.isLetter == true && !host.hasSuffix(".localhost")
            guard isName, host.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-.".unicodeScalars.contains($0)) }) else {
                throw .unreadableResponse("the \(name) URL \"\(shown)\" is not on a DNS name")
            }
        }
        return url
    }
}
