import AgrirouterLink
import AgrirouterWire
import ArgumentParser
import Bounds
import CommandSupport
import Foundation
import StateDirectory

/// Where agrigps keeps its state: `--state-dir`, else systemd's $STATE_DIRECTORY, else /var/lib/agrigps.
enum EnvironmentChoice: String, ExpressibleByArgument, CaseIterable {
    case qa, production, local
}

extension OnboardingError: HasExitCode {
    public var exitCode: Int32 {
        switch self {
        case .missingSettings, .configuration: return 78  // EX_CONFIG
        case .invalidTAN, .alreadyOnboarded, .transportFixed: return 64
        case .agrirouter: return 77  // EX_NOPERM
        case .transport, .unreadableResponse: return 69
        case .storage: return 73  // EX_CANTCREAT
        case .mqttSetup: return 69  // EX_UNAVAILABLE
        }
    }
}

extension Transport: ExpressibleByArgument {}

struct Onboard: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Connect this machine to agrirouter with a TAN (registration code) from the agrirouter UI.",
        discussion: """
            QA is the default environment. The application id and certification version id come from \
            --application-id / --certification-version-id or AGRIGPS_APPLICATION_ID / \
            AGRIGPS_CERTIFICATION_VERSION_ID; QA and production have different ones.

            The credentials are stored in the state directory with mode 0600 and never printed. Running \
            onboard again with a new TAN re-onboards the same endpoint.

            --transport chooses how the machine talks to agrirouter: rest (the default) or mqtt, which \
            answers at once over one standing connection. agrirouter keeps the choice with the endpoint: \
            onboarding again keeps it, and asking for the other one is refused.

            To try agrigps without an account, use --env local with agrirouter-sim's --onboarding-url \
            and --ca-file.
            """
    )

    @Option(help: ArgumentHelp("The TAN from the agrirouter UI (also AGRIGPS_TAN).", valueName: "tan"))
    var tan: String?

    @Option(
        name: .customLong("env"),
        help: ArgumentHelp(
            "qa, production or local (default: the configuration file's, else qa).", valueName: "environment"))
    var environment: EnvironmentChoice?

    @Option(
        name: .customLong("application-id"),
        help: ArgumentHelp("Your application id in this environment.", valueName: "id"))
    var applicationID: String?

    @Option(
        name: .customLong("certification-version-id"),
        help: ArgumentHelp("Your certification version id in this environment.", valueName: "id"))
    var certificationVersionID: String?

    @Option(
        name: .customLong("onboarding-url"),
        help: ArgumentHelp("With --env local: the local agrirouter's onboarding URL.", valueName: "url"))
    var onboardingURL: String?

    @Option(
        name: .customLong("ca-file"),
        help: ArgumentHelp("With --env local: the CA certificate the local agrirouter signs with.", valueName: "path"))
    var caFile: String?

    @Option(help: ArgumentHelp("rest or mqtt (default: as first onboarded, else rest).", valueName: "transport"))
    var transport: Transport?

    @OptionGroup var config: ConfigurationOption
    @OptionGroup var state: StateDirectoryOption

    private var effectiveTAN: String { tan ?? ProcessInfo.processInfo.environment["AGRIGPS_TAN"] ?? "" }

    func validate() throws {
        guard !effectiveTAN.isEmpty else { throw ValidationError("give the TAN with --tan (or AGRIGPS_TAN)") }
        guard OnboardingClient.isPlausibleTAN(effectiveTAN) else {
            throw ValidationError("a TAN is letters and digits only, as the agrirouter UI shows it")
        }
        if environment == .local {
            guard let onboardingURL, onboardingURL.hasPrefix("https://") else {
                throw ValidationError("--env local needs --onboarding-url https://... (agrirouter-sim prints it)")
            }
            guard let caFile, FileManager.default.isReadableFile(atPath: caFile) else {
                throw ValidationError("--env local needs --ca-file with the local agrirouter's CA certificate")
            }
        } else if onboardingURL != nil || caFile != nil {
            throw ValidationError("--onboarding-url and --ca-file are for --env local only")
        }
    }

    func run() async throws {
        let store = CredentialStore(directory: state.resolved)
        let file = try config.load()
        do throws(OnboardingError) {
            let target = try resolveEnvironment(
                environment ?? file.text("agrirouter", "environment").flatMap(EnvironmentChoice.init) ?? .qa)
            let settings = Onboarder.settings(
                file: file, applicationID: applicationID, certificationVersionID: certificationVersionID)
            let response = try await Onboarder(store: store, settings: settings).onboard(
                tan: effectiveTAN, to: target, transport: transport)
            Output.line(
                "Onboarded to agrirouter \(target.name) as endpoint \(TerminalText.safe(response.deviceAlternateId)), over \(response.transport?.description ?? "REST")."
            )
            Output.line("Credentials stored in \(store.directory) (readable by this user only).")
        } catch {
            var text = error.description
            if case .missingSettings = error {
                text +=
                    " (give --application-id and --certification-version-id, or AGRIGPS_APPLICATION_ID and AGRIGPS_CERTIFICATION_VERSION_ID)"
            }
            throw CommandFailure(description: text, exitCode: error.exitCode)
        }
    }

    private func resolveEnvironment(_ environment: EnvironmentChoice) throws(OnboardingError) -> AgrirouterEnvironment {
        switch environment {
        case .qa: return .qa
        case .production: return .production
        case .local:
            guard let caFile, let onboardingURL, let pem = try? String(contentsOfFile: caFile, encoding: .utf8) else {
                throw .configuration(
                    "cannot read --ca-file; give a readable PEM file of the CA that signed the onboarding server")
            }
            return .local(onboardingURL: onboardingURL, caCertificatePEM: pem)
        }
    }
}

struct Disconnect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Remove this machine's agrirouter credentials.",
        discussion: """
            agrirouter offers a CU no way to delete itself: remove the endpoint in the agrirouter UI as well. \
            The endpoint id is kept, so onboarding again later with a new TAN is the same endpoint.
            """
    )

    @Flag(help: "Do not ask for confirmation.")
    var yes = false

    @OptionGroup var state: StateDirectoryOption

    func run() throws {
        let store = CredentialStore(directory: state.resolved)
        do {
            guard let endpoint = try store.load() else {
                Output.line("This machine is not onboarded; there are no credentials to remove.")
                return
            }
            if !yes {
                guard isatty(0) != 0 else {
                    throw CommandFailure(
                        description: "disconnect removes the credentials; confirm with --yes", exitCode: 64)
                }
                FileHandle.standardOutput.write(
                    Data(
                        "Remove the agrirouter credentials of endpoint \(TerminalText.safe(endpoint.response.deviceAlternateId))? [y/N] "
                            .utf8))
                guard let answer = readLine(), ["y", "yes"].contains(answer.lowercased()) else {
                    Output.line("Nothing removed.")
                    return
                }
            }
            try store.delete()
            Output.line(
                "Removed the credentials of endpoint \(TerminalText.safe(endpoint.response.deviceAlternateId)) (agrirouter \(TerminalText.safe(endpoint.environment)))."
            )
            Output.line("Now delete this endpoint in the agrirouter UI too, or it stays listed there.")
        } catch let error as OnboardingError {
            throw CommandFailure(error)
        }
    }
}
