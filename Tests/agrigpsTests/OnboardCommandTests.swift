import AgrirouterSim
import Foundation
import Testing
import TestSupport

@Suite(.serialized, .timeLimit(.minutes(2)))
struct OnboardCommandTests {
    @Test func onboardReonboardRefuseAndDisconnectWithoutLeakingSecrets() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TANA123456": "Tractor", "TANB123456": "Tractor"]))
        defer { Task { await simulator.shutdown() } }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("agrigps-onboard-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let caFile = directory + "/ca.pem"
        try simulator.caCertificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8)
        let state = directory + "/state"
        let local = ["--env", "local", "--onboarding-url", simulator.onboardingURL, "--ca-file", caFile, "--state-dir", state,
                     "--application-id", "app", "--certification-version-id", "version"]
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
        let secret = try String(contentsOfFile: state + "/endpoint.secret", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        for file in ["/endpoint-id", "/endpoint.json", "/endpoint.secret"] {
            #expect((try FileManager.default.attributesOfItem(atPath: state + file)[.posixPermissions] as? Int) == 0o600)
        }

        let again = try await run(["onboard", "--tan", "TANB123456"] + local)
        #expect(again.0 == 0)
        #expect(again.1.first == first.1.first, "re-onboarding keeps the endpoint")

        let refused = try await run(["onboard", "--tan", "TANC123456"] + local)
        #expect(refused.0 == 77 && refused.2.count == 1)
        #expect(refused.2.first?.contains("code 0401") == true)

        let otherEnvironment = try await run(["onboard", "--tan", "TANC123456", "--env", "qa", "--state-dir", state])
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
