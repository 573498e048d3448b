import AgrirouterWire
import Crypto
import Foundation
import TestSupport
import Testing

@testable import AgrirouterLink
@testable import AgrirouterSim

@Suite(.serialized, .timeLimit(.minutes(2)))
struct OnboardingTests {
    let settings = OnboardingSettings(applicationID: "app", certificationVersionID: "version")

    @Test func onboardsAndReonboardsTheSameEndpoint() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Tractor", "TAN0000002": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            let client = OnboardingClient(
                environment: .local(
                    onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM),
                settings: settings)
            let first = try await client.onboard(tan: "TAN0000001", externalID: "urn:agrigps:endpoint:1")
            #expect(first.authentication.type == "PEM")
            #expect(first.authentication.certificate.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
            #expect(first.connectionCriteria.gatewayId == "3")
            let again = try await client.onboard(tan: "TAN0000002", externalID: "urn:agrigps:endpoint:1")
            #expect(again.deviceAlternateId == first.deviceAlternateId)
            #expect(again.authentication.certificate != first.authentication.certificate)
        }
    }

    @Test("the encrypted key is PKCS#8 PBES2 that OpenSSL opens with the secret, and with no other")
    func keyOpensWithOpenSSL() async throws {
        let key = P256.Signing.PrivateKey()
        let pem = try KeyEncryption.encryptedPEM(key, secret: "Secret-1234")
        let scratch = TemporaryDirectory("key")
        let file = scratch.file("key.pem")
        try Data(pem.utf8).write(to: URL(fileURLWithPath: file))
        func open(_ secret: String) async throws -> (code: Int32?, output: String) {
            try await SystemTool.run(
                "/usr/bin/openssl", ["pkey", "-in", file, "-passin", "env:KEY_SECRET", "-noout", "-text"],
                environment: SystemTool.path.merging(["KEY_SECRET": secret]) { $1 })
        }
        let opened = try await open("Secret-1234")
        #expect(opened.code == 0, "\(opened.output)")
        // The private scalar OpenSSL prints is the key's own.
        let printed = opened.output.components(separatedBy: "priv:").last?.components(separatedBy: "pub:").first ?? ""
        let hex = printed.filter(\.isHexDigit).lowercased()
        let own = key.rawRepresentation.map { String(format: "%02x", $0) }.joined()
        #expect(hex.hasSuffix(own), "\(opened.output)")
        #expect(try await open("Secret-1235").code != 0, "a wrong secret opened the key")
    }

    @Test func refusalsCarryAgrirouterCodesAndAdvice() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Tractor"], applicationID: "app"))
        await tearingDown({ await simulator.shutdown() }) {
            let environment = AgrirouterEnvironment.local(
                onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM)
            let client = OnboardingClient(environment: environment, settings: settings)

            await #expect(throws: OnboardingError.agrirouter(status: 401, code: "0401", message: "Bearer not found")) {
                _ = try await client.onboard(tan: "WRONG00000", externalID: "urn:x")
            }
            // A clock running two minutes fast makes even "10 s in the past" a future timestamp.
            do throws(OnboardingError) {
                _ = try await client.onboard(
                    tan: "TAN0000001", externalID: "urn:x", now: Date().addingTimeInterval(120))
                Issue.record("a future timestamp was accepted")
            } catch {
                guard case .agrirouter(400, "0110", _) = error else {
                    Issue.record("\(error)")
                    return
                }
                #expect(error.description.contains("clock"))
            }
            let otherApplication = OnboardingClient(
                environment: environment,
                settings: OnboardingSettings(applicationID: "other", certificationVersionID: "v"))
            do throws(OnboardingError) {
                _ = try await otherApplication.onboard(tan: "TAN0000001", externalID: "urn:x")
                Issue.record("a wrong application id was accepted")
            } catch {
                guard case .agrirouter(400, "0105", _) = error else {
                    Issue.record("\(error)")
                    return
                }
            }
            let unconfigured = OnboardingClient(
                environment: environment, settings: OnboardingSettings(applicationID: "", certificationVersionID: ""))
            await #expect(throws: OnboardingError.missingSettings(["applicationId", "certificationVersionId"])) {
                _ = try await unconfigured.onboard(tan: "TAN0000001", externalID: "urn:x")
            }
            await #expect(throws: OnboardingError.invalidTAN) {
                _ = try await client.onboard(tan: "TAN 0001!", externalID: "urn:x")
            }
            // None of the refusals repeats the TAN.
            for error in [
                OnboardingError.agrirouter(status: 401, code: "0401", message: "Bearer not found"), .invalidTAN,
            ] {
                #expect(!error.description.contains("TAN0000001") && !error.description.contains("WRONG00000"))
            }
        }
    }

    @Test func credentialStoreKeepsSecretsApartAndPrivate() throws {
        // The store makes its directory itself, with its own mode.
        let scratch = TemporaryDirectory("store")
        let directory = scratch.file("credentials")
        let store = CredentialStore(directory: directory)
        let id = try store.externalID()
        #expect(id.hasPrefix("urn:agrigps:endpoint:"))
        #expect(try store.externalID() == id, "the onboarding id is made once and kept")
        let response = OnboardingResponse(
            deviceAlternateId: "device", capabilityAlternateId: "capability", sensorAlternateId: "sensor",
            connectionCriteria: .init(gatewayId: "3", measures: "https://m", commands: "https://c"),
            authentication: .init(
                type: "PEM", secret: "s3cr3t-value",
                certificate:
                    "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAA\n-----END ENCRYPTED PRIVATE KEY-----\n-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n"
            ))
        try store.save(response, environment: "qa")
        let json = try String(contentsOfFile: directory + "/endpoint.json", encoding: .utf8)
        #expect(!json.contains("s3cr3t-value"))
        #expect(json.contains("ENCRYPTED PRIVATE KEY"))
        for file in ["", "/endpoint-id", "/endpoint.json", "/endpoint.secret"] {
            let mode =
                (try FileManager.default.attributesOfItem(atPath: directory + file)[.posixPermissions] as? Int) ?? 0
            #expect(mode == (file.isEmpty ? 0o700 : 0o600), "\(file) has mode \(String(mode, radix: 8))")
        }
        let loaded = try #require(try store.load())
        #expect(loaded.response == response && loaded.environment == "qa")
        #expect(loaded.credentials != nil)
        try store.delete()
        #expect(try store.load() == nil)
        #expect(try store.externalID() == id, "disconnecting keeps the id for re-onboarding")
    }

    /// A power cut after each durable step of a save, first onboarding and re-onboarding: the next
    /// start finds the old credential or the new one, and its key opens; or, before the first
    /// onboarding's commit, none at all. Never a key with the wrong secret.
    @Test func aSaveCutShortLeavesAWholeCredentialOrNone() async throws {
        let simulator = try await AgrirouterSimulator.start(
            SimConfiguration(tans: ["TAN0000001": "Tractor", "TAN0000002": "Tractor"]))
        try await tearingDown({ await simulator.shutdown() }) {
            let client = OnboardingClient(
                environment: .local(
                    onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM),
                settings: settings)
            let old = try await client.onboard(tan: "TAN0000001", externalID: "urn:agrigps:endpoint:cut")
            let new = try await client.onboard(tan: "TAN0000002", externalID: "urn:agrigps:endpoint:cut")
            for (before, expectedAfterCommit) in [(OnboardingResponse?.none, new), (old, new)] {
                let steps = CredentialStore.SaveStep.allCases
                for done in 0...steps.count {
                    let scratch = TemporaryDirectory("cut")
                    let directory = scratch.file("credentials")
                    let store = CredentialStore(directory: directory)
                    if let before { try store.save(before, environment: "local", settings: settings) }
                    let pending = try store.prepare(new, environment: "local", settings: settings, trustedCAPEM: nil)
                    for step in steps.prefix(done) { try store.perform(step, of: pending) }
                    let loaded = try store.load()
                    let committed = done >= 2
                    let expected = committed ? expectedAfterCommit : before
                    #expect(
                        loaded?.response.authentication.certificate == expected?.authentication.certificate,
                        "after \(done) of \(steps.count) steps, \(before == nil ? "first onboarding" : "re-onboarding")"
                    )
                    if let loaded {
                        #expect(throws: Never.self, "the key opens after \(done) steps") {
                            try #require(loaded.credentials).check()
                        }
                    }
                }
            }
        }
    }
}
