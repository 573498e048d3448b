import AgrirouterLink
import AgrirouterSim
import Foundation
import TestSupport
import Testing

/// A state directory beside the local agrirouter's CA certificate, and the flags `agrigps onboard`
/// needs to reach that agrirouter.
struct LocalOnboarding {
    let scratch: TemporaryDirectory
    let directory: String
    let local: [String]
    var state: String { directory + "/state" }

    init(_ simulator: AgrirouterSimulator, name: String) throws {
        scratch = TemporaryDirectory(name)
        directory = scratch.path
        try simulator.caCertificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        local = [
            "--env", "local", "--onboarding-url", simulator.onboardingURL, "--ca-file", directory + "/ca.pem",
            "--state-dir", directory + "/state", "--application-id", "app", "--certification-version-id", "version",
        ]
    }

    func remove() { scratch.remove() }
}

@Suite(.serialized, .timeLimit(.minutes(2)))
struct OnboardCommandTests {
    @Test func onboardReonboardRefuseAndDisconnectWithoutLeakingSecrets() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TANA123456": "Tractor", "TANB123456": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            let onboarding = try LocalOnboarding(simulator, name: "onboard")
            defer { onboarding.remove() }
            let (state, local) = (onboarding.state, onboarding.local)
            var printed: [String] = []
            func run(_ arguments: [String]) async throws -> (Int32?, [String], [String]) {
                let result = try await AgrigpsCommand.run(arguments, timeout: 60)
                printed += result.stdout + result.stderr
                return result
            }

            let first = try await run(["onboard", "--tan", "TANA123456"] + local)
            #expect(first.0 == 0, "\(first.2)")
            #expect(first.1.first?.hasPrefix("Onboarded to agrirouter local as endpoint ") == true)
            let endpoint = try String(contentsOfFile: state + "/endpoint.json", encoding: .utf8)
            let secret = try String(contentsOfFile: state + "/endpoint.secret", encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            for file in ["/endpoint-id", "/endpoint.json", "/endpoint.secret"] {
                #expect(
                    (try FileManager.default.attributesOfItem(atPath: state + file)[.posixPermissions] as? Int) == 0o600
                )
            }

            let again = try await run(["onboard", "--tan", "TANB123456"] + local)
            #expect(again.0 == 0)
            #expect(again.1.first == first.1.first, "re-onboarding keeps the endpoint")

            let refused = try await run(["onboard", "--tan", "TANC123456"] + local)
            #expect(refused.0 == 77 && refused.2.count == 1)
            #expect(refused.2.first?.contains("code 0401") == true)

            let otherEnvironment = try await run([
                "onboard", "--tan", "TANC123456", "--env", "qa", "--state-dir", state,
            ])
            #expect(otherEnvironment.0 == 64)
            #expect(otherEnvironment.2.first?.contains("agrigps disconnect") == true)

            let unconfirmed = try await run(["disconnect", "--state-dir", state])
            #expect(unconfirmed.0 == 64)
            #expect(FileManager.default.fileExists(atPath: state + "/endpoint.json"))
            let disconnected = try await run(["disconnect", "--yes", "--state-dir", state])
            #expect(disconnected.0 == 0)
            #expect(disconnected.1.contains { $0.contains("agrirouter UI") })
            #expect(!FileManager.default.fileExists(atPath: state + "/endpoint.json"))
            #expect(!FileManager.default.fileExists(atPath: state + "/endpoint.secret"))

            // Nothing printed, in any of these runs, holds a TAN, the secret or key material.
            let everything = printed.joined(separator: "\n")
            for secretText in ["TANA123456", "TANB123456", "TANC123456", secret, "PRIVATE KEY", "CERTIFICATE-----"] {
                #expect(!everything.contains(secretText), "output contains \(secretText.prefix(12))…")
            }
            #expect(endpoint.contains("ENCRYPTED PRIVATE KEY") && !endpoint.contains(secret))
        }
    }

    @Test func reOnboardingKeepsTheTransportAndRefusesTheOther() async throws {
        var configuration = SimConfiguration(tans: [
            "TANA123456": "Tractor", "TANB123456": "Tractor", "TANC123456": "Tractor",
        ])
        configuration.mqtt = true
        let simulator = try await AgrirouterSimulator.start(configuration)
        try await tearingDown({ await simulator.shutdown() }) {
            let onboarding = try LocalOnboarding(simulator, name: "transport")
            defer { onboarding.remove() }
            let (state, local) = (onboarding.state, onboarding.local)
            func gateway() throws -> String? {
                let object =
                    try JSONSerialization.jsonObject(
                        with: Data(contentsOf: URL(fileURLWithPath: state + "/endpoint.json"))) as? [String: Any]
                return ((object?["response"] as? [String: Any])?["connectionCriteria"] as? [String: Any])?["gatewayId"]
                    as? String
            }

            let first = try await AgrigpsCommand.run(
                ["onboard", "--tan", "TANA123456", "--transport", "mqtt"] + local, timeout: 60)
            #expect(first.code == 0, "\(first.stderr)")
            #expect(first.stdout.first?.hasSuffix(", over MQTT.") == true)
            #expect(try gateway() == "2")
            // Without --transport, and after a disconnect too, the endpoint keeps MQTT.
            #expect(try await AgrigpsCommand.run(["disconnect", "--yes", "--state-dir", state]).code == 0)
            let again = try await AgrigpsCommand.run(["onboard", "--tan", "TANB123456"] + local, timeout: 60)
            #expect(again.code == 0, "\(again.stderr)")
            #expect(try gateway() == "2")
            // Asking for REST is refused before any request: the TAN stays unused.
            let refused = try await AgrigpsCommand.run(
                ["onboard", "--tan", "TANC123456", "--transport", "rest"] + local, timeout: 60)
            #expect(refused.code == 64)
            #expect(refused.stderr.first?.contains("--transport mqtt") == true, "\(refused.stderr)")
            #expect(try gateway() == "2")
            let unknown = try await AgrigpsCommand.run(
                ["onboard", "--tan", "TANC123456", "--transport", "carrier-pigeon"] + local, timeout: 60)
            #expect(unknown.code == 64)
            // agrirouter keeps it too: the local one refuses a change of gateway for a known endpoint (0102).
            let environment = AgrirouterEnvironment.local(
                onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM)
            let externalID = try String(contentsOfFile: state + "/endpoint-id", encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines)
            await #expect(throws: OnboardingError.self) {
                _ = try await OnboardingClient(
                    environment: environment,
                    settings: OnboardingSettings(applicationID: "app", certificationVersionID: "version")
                )
                .onboard(tan: "TANC123456", externalID: externalID, transport: .rest)
            }
        }
    }
}
