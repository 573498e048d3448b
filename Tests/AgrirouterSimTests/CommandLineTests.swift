import AgrirouterWire
import ChildProcesses
import Foundation
import GPSDReplay
import TestSupport
import Testing

@testable import AgrirouterLink

/// The `agrirouter-sim` binary as the demo and a user start it.
@Suite(.timeLimit(.minutes(1)))
struct SimulatorCommandLineTests {
    /// `swift build` puts the binary beside the test bundle.
    static let path = URL(
        fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
    )
    .deletingLastPathComponent().appendingPathComponent("agrirouter-sim").path

    /// The binary started with ChildProcess (not Foundation.Process, whose child would inherit this
    /// test thread's blocked signals and never see SIGTERM), its output in files.
    final class Run {
        let process: ChildProcess
        /// The directory of its output files, removed with the run.
        let scratch = TemporaryDirectory("agrirouter-sim")
        var output: String { scratch.file("output") }

        init(_ arguments: [String]) throws {
            let output = scratch.file("output")
            process = try ChildProcess(
                executable: SimulatorCommandLineTests.path, arguments: arguments,
                environment: ProcessInfo.processInfo.environment,
                outputPath: output + ".out", errorPath: output + ".err")
        }

        var stdout: String { (try? String(contentsOfFile: output + ".out", encoding: .utf8)) ?? "" }
        var stderr: String { (try? String(contentsOfFile: output + ".err", encoding: .utf8)) ?? "" }

        func finish() async -> Int32? { await process.wait(timeout: 20) }

        deinit {
            process.terminate(grace: 1)
        }
    }

    @Test func helpSaysWhatItDoes() async throws {
        let run = try Run(["--help"])
        #expect(await run.finish() == 0)
        #expect(run.stdout.contains("rename ENDPOINT-ID NEW NAME"))
        #expect(run.stdout.contains("--tan <TAN=NAME>"))
    }

    @Test(arguments: [
        ([], "give at least one --tan TAN=NAME"),
        (["--tan", "TAN0000001"], "--tan takes TAN=NAME: the TAN, '=', then the name"),
        (["--tan", "T=N", "--gateway-port", "70000"], "--gateway-port: 70000 is not a port"),
        (["--tan", "T=N", "--onboarding-port", "x"], "--onboarding-port"),
        (
            ["--tan", "T=N", "--advertised-host", "10.0.2.2/24"],
            "--advertised-host: '10.0.2.2/24' is not an IPv4 address or a host name"
        ),
        (
            ["--tan", "T=N", "--received", "/nonexistent/received.jsonl"],
            "--received: cannot write /nonexistent/received.jsonl"
        ),
        (["--tan", "T=N", "--payloads", "/tmp"], "--payloads needs --received"),
    ])
    func badInputIsRefusedWithUsage(arguments: [String], message: String) async throws {
        let run = try Run(arguments)
        #expect(await run.finish() == 64)
        #expect(run.stderr.contains(message), "\(run.stderr)")
        #expect(!run.stderr.contains("TAN0000001"), "a TAN in an error message")
    }

    @Test func servesOnboardingWithTheCAItWrote() async throws {
        let scratch = TemporaryDirectory("agrirouter-sim-ca")
        let caFile = scratch.file("ca.pem")
        // Port 0, like no port, picks a free one.
        let started = try Run(["--tan", "TAN0000001=Tractor", "--ca-file", caFile, "--onboarding-port", "0"])
        let deadline = Date().addingTimeInterval(20)
        while !started.stdout.contains("onboarding at ") && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let line = try #require(started.stdout.split(separator: "\n").first { $0.contains("onboarding at ") })
        let url = String(line.split(separator: " ").last ?? "")
        #expect(url.hasPrefix("https://127.0.0.1:"))
        let ca = try String(contentsOfFile: caFile, encoding: .utf8)
        #expect(ca.hasPrefix("-----BEGIN CERTIFICATE-----"))
        // The binary onboards a client that trusts only the CA it wrote.
        let client = OnboardingClient(
            environment: .local(onboardingURL: url, caCertificatePEM: ca),
            settings: OnboardingSettings(applicationID: "app", certificationVersionID: "version"))
        let response = try await client.onboard(tan: "TAN0000001", externalID: "urn:agrigps:cli-test")
        #expect(response.authentication.type == "PEM")
        kill(started.process.pid, SIGTERM)
        #expect(await started.finish() == 128 + SIGTERM)
    }

    /// The broker is a child of the simulator, and no one else would stop it: it ends with the
    /// simulator, whether the simulator is asked to stop or dies without a word.
    @Test(arguments: [SIGTERM, SIGKILL])
    func theBrokerEndsWithTheSimulator(signal: Int32) async throws {
        let started = try Run(["--tan", "TAN0000001=Tractor", "--mqtt"])
        let deadline = Date().addingTimeInterval(20)
        while !started.stdout.contains("MQTT broker on port ") && Date() < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        let line = try #require(
            started.stdout.split(separator: "\n").first { $0.contains("MQTT broker on port ") }, "\(started.stderr)")
        let port = try #require(UInt16(line.split(separator: " ").last ?? ""))
        #expect(LoopbackSocket.accepts(port: port), "the broker listens")
        kill(started.process.pid, signal)
        #expect(await started.finish() == 128 + signal)
        let gone = Date().addingTimeInterval(5)
        while LoopbackSocket.accepts(port: port) && Date() < gone { try await Task.sleep(for: .milliseconds(50)) }
        #expect(!LoopbackSocket.accepts(port: port), "the broker outlived the simulator")
    }
}
