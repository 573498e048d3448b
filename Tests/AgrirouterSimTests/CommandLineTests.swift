@testable import Agrirouter
import Foundation
import Testing

/// The `agrirouter-sim` binary as the demo and a user start it.
@Suite(.timeLimit(.minutes(1)))
struct SimulatorCommandLineTests {
    /// `swift build` puts the binary beside the test bundle.
    static let path = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? "")
        .deletingLastPathComponent().appendingPathComponent("agrirouter-sim").path

    final class Run {
        let process = Process()
        let output = FileManager.default.temporaryDirectory.appendingPathComponent("agrirouter-sim-\(UUID().uuidString)")

        init(_ arguments: [String]) throws {
            FileManager.default.createFile(atPath: output.path + ".out", contents: nil)
            FileManager.default.createFile(atPath: output.path + ".err", contents: nil)
            process.executableURL = URL(fileURLWithPath: SimulatorCommandLineTests.path)
            process.arguments = arguments
            process.standardInput = Pipe()
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output.path + ".out"))
            process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: output.path + ".err"))
            try process.run()
        }

        var stdout: String { (try? String(contentsOfFile: output.path + ".out", encoding: .utf8)) ?? "" }
        var stderr: String { (try? String(contentsOfFile: output.path + ".err", encoding: .utf8)) ?? "" }

        func finish() -> Int32 {
            process.waitUntilExit()
            return process.terminationStatus
        }

        deinit {
            if process.isRunning { process.terminate() }
            for suffix in [".out", ".err", ".pem"] { try? FileManager.default.removeItem(atPath: output.path + suffix) }
        }
    }

    @Test func helpSaysWhatItDoes() throws {
        let run = try Run(["--help"])
        #expect(run.finish() == 0)
        #expect(run.stdout.contains("rename ENDPOINT-ID NEW NAME"))
        #expect(run.stdout.contains("--tan <TAN=NAME>"))
    }

    @Test(arguments: [
        ([], "give at least one --tan TAN=NAME"),
        (["--tan", "TAN0000001"], "--tan takes TAN=NAME, got 'TAN0000001'"),
        (["--tan", "T=N", "--gateway-port", "70000"], "--gateway-port: 70000 is not a port"),
        (["--tan", "T=N", "--onboarding-port", "x"], "--onboarding-port"),
    ])
    func badInputIsRefusedWithUsage(arguments: [String], message: String) throws {
        let run = try Run(arguments)
        #expect(run.finish() == 64)
        #expect(run.stderr.contains(message), "\(run.stderr)")
    }

    @Test func servesOnboardingWithTheCAItWrote() async throws {
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("agrirouter-sim-ca-\(UUID().uuidString).pem").path
        defer { try? FileManager.default.removeItem(atPath: caFile) }
        let started = try Run(["--tan", "TAN0000001=Tractor", "--ca-file", caFile])
        let deadline = Date().addingTimeInterval(20)
        while !started.stdout.contains("onboarding at ") && Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        let line = try #require(started.stdout.split(separator: "\n").first { $0.contains("onboarding at ") })
        let url = String(line.split(separator: " ").last ?? "")
        #expect(url.hasPrefix("https://127.0.0.1:"))
        let ca = try String(contentsOfFile: caFile, encoding: .utf8)
        #expect(ca.hasPrefix("-----BEGIN CERTIFICATE-----"))
        // The binary onboards a client that trusts only the CA it wrote.
        let client = OnboardingClient(environment: .local(onboardingURL: url, caCertificatePEM: ca),
                                      settings: OnboardingSettings(applicationID: "app", certificationVersionID: "version"))
        let response = try await client.onboard(tan: "TAN0000001", externalID: "urn:agrigps:cli-test")
        #expect(response.authentication.type == "PEM")
        started.process.terminate()
        #expect(started.finish() == SIGTERM)
    }
}
