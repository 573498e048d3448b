import AgrirouterLink
import AgrirouterSim
import AgrirouterWire

extension AgrirouterSimulator {
    /// An onboarding client of the tests' application ("app", version "v") for this local
    /// agrirouter, trusting only its CA.
    public var onboardingClient: OnboardingClient {
        OnboardingClient(
            environment: .local(onboardingURL: onboardingURL, caCertificatePEM: caCertificatePEM),
            settings: OnboardingSettings(applicationID: "app", certificationVersionID: "v"))
    }

    /// An endpoint onboarded here with `tan`, as the tests' application.
    public func onboard(tan: String, externalID: String, transport: Transport = .rest) async throws
        -> OnboardingResponse
    {
        try await onboardingClient.onboard(tan: tan, externalID: externalID, transport: transport)
    }
}
