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

    /// Onboards endpoint `externalID` with `tan`. The timestamp is 10 s in the past: agrirouter
    /// refuses any from the future (0110), however slightly.
    public func onboard(tan: String, externalID: String, now: Date = Date()) async throws(OnboardingError) -> OnboardingResponse {
        guard !tan.isEmpty, tan.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { throw .invalidTAN }
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
        let client = HTTPSClient(trustedCAPEM: environment.caCertificatePEM, totalTimeout: timeout)
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
        do {
            let decoded = try JSONDecoder().decode(OnboardingResponse.self, from: response.body)
            guard decoded.authentication.type == "PEM",
                  ClientCredentials(agrirouterPEM: decoded.authentication.certificate, secret: decoded.authentication.secret) != nil else {
                throw OnboardingError.unreadableResponse("the certificate is not an encrypted PEM key and certificate")
            }
            return decoded
        } catch let error as OnboardingError {
            throw error
        } catch {
            throw .unreadableResponse("unexpected JSON")
        }
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
        return .agrirouter(status: response.status, code: code, message: error?["message"] as? String ?? "")
    }
}
