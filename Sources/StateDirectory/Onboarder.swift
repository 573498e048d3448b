import AgrirouterLink
import AgrirouterWire
import Foundation

/// Onboarding as `agrigps onboard` and the cab view both do it: one path from a TAN to stored
/// credentials, with the same checks and the same refusals.
public struct Onboarder: Sendable {
    public var store: CredentialStore
    public var settings: OnboardingSettings

    public init(store: CredentialStore, settings: OnboardingSettings) {
        self.store = store
        self.settings = settings
    }

    /// The application and certification version ids: a flag, else the environment variable, else the file.
    public static func settings(
        file: ConfigurationFile, applicationID: String? = nil, certificationVersionID: String? = nil,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> OnboardingSettings {
        OnboardingSettings(
            applicationID: applicationID ?? environment["AGRIGPS_APPLICATION_ID"] ?? file.text(
                "agrirouter", "application_id") ?? "",
            certificationVersionID: certificationVersionID ?? environment["AGRIGPS_CERTIFICATION_VERSION_ID"]
                ?? file.text("agrirouter", "certification_version_id") ?? "")
    }

    /// Onboards (or re-onboards the same endpoint) and stores the credentials. Refused without a
    /// request when the TAN cannot be one, when the machine is onboarded to another environment
    /// (disconnect first), or when `transport` is not the one the endpoint was first onboarded with:
    /// agrirouter keeps an endpoint's transport. Without `transport` the recorded one is kept (REST
    /// for a first onboarding).
    public func onboard(tan: String, to target: AgrirouterEnvironment, transport: Transport? = nil)
        async throws(OnboardingError) -> OnboardingResponse
    {
        guard OnboardingClient.isPlausibleTAN(tan) else { throw .invalidTAN }
        let existing = try store.load()
        if let existing, existing.environment != target.name {
            throw .alreadyOnboarded(environment: existing.environment)
        }
        let recorded = store.recordedTransport() ?? existing?.response.transport
        if let transport, let recorded, transport != recorded { throw .transportFixed(onboardedWith: recorded) }
        let chosen = transport ?? recorded ?? .rest
        let response = try await OnboardingClient(environment: target, settings: settings)
            .onboard(tan: tan, externalID: try store.externalID(), transport: chosen)
        try store.record(chosen)
        try store.save(response, environment: target.name, settings: settings, trustedCAPEM: target.caCertificatePEM)
        return response
    }

    /// A local agrirouter named in the file ([agrirouter] onboarding_url and ca_file), if one is.
    public static func localEnvironment(file: ConfigurationFile) throws(OnboardingError) -> AgrirouterEnvironment? {
        guard let url = file.text("agrirouter", "onboarding_url") else { return nil }
        guard url.hasPrefix("https://") else {
            throw .configuration("[agrirouter] onboarding_url must start with https://")
        }
        guard let caFile = file.text("agrirouter", "ca_file"),
            let pem = try? String(contentsOfFile: caFile, encoding: .utf8)
        else {
            throw .configuration(
                "[agrirouter] onboarding_url needs ca_file, the local agrirouter's CA certificate, readable")
        }
        return .local(onboardingURL: url, caCertificatePEM: pem)
    }
}
