import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Foundation
import GPSDReplay
import Spool
import StateDirectory
import TestSupport
import Testing

/// A running daemon takes up an onboarding and a disconnect made beside it (by the CLI or the cab
/// view) without anyone restarting it, and a pause stays a pause across that.
@Suite("Credentials picked up by a running daemon", .serialized, .timeLimit(.minutes(2)))
struct CredentialPickupTests {
    @Test(
        "onboarded while running: it sets the endpoint up and shares; disconnected: it stops sharing; one process throughout"
    )
    func onboardAndDisconnect() async throws {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["PICKUP0001": "Tractor"]))
        let scratch = TemporaryDirectory("pickup")
        let directory = scratch.path
        let state = directory + "/state"
        try simulator.caCertificatePEM.write(toFile: directory + "/ca.pem", atomically: true, encoding: .utf8)
        // Nothing listens on this port: every sample is gpsd_unreachable, which is shared like any other.
        let port = try ReplayGPSD.freeLoopbackPort()
        let daemon = try AgrigpsCommand([
            "run", "--gpsd", "127.0.0.1:\(port)", "--interval", "1", "--send-interval", "1", "--spacing", "0.2",
            "--state-dir", state,
        ])
        defer {
            if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
            daemon.cleanUp()
        }
        try await waitForHeartbeat(in: state) { $0.lastSample != nil }
        #expect(Heartbeat.read(from: state + "/heartbeat.json")?.environment == nil)
        #expect(try await AgrigpsCommand.run(["pause", "--state-dir", state]).code == 0)

        let onboarded = try await AgrigpsCommand.run([
            "onboard", "--tan", "PICKUP0001", "--env", "local", "--onboarding-url", simulator.onboardingURL,
            "--ca-file", directory + "/ca.pem", "--state-dir", state,
            "--application-id", "app", "--certification-version-id", "v",
        ])
        try #require(onboarded.code == 0, "\(onboarded.stderr)")
        let endpoint = try #require(try CredentialStore(directory: state).load()?.response.deviceAlternateId)
        try await waitForHeartbeat(in: state) { $0.environment == "local" }
        #expect(Heartbeat.read(from: state + "/heartbeat.json")?.environment == "local", "picked up within 20 s")
        var subscribed = false
        for _ in 0..<100 where !subscribed {
            subscribed = !(await simulator.subscriptions(endpoint: endpoint)).isEmpty
            if !subscribed { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(subscribed, "capabilities and subscription sent with the new credentials")
        let stillPaused = try await SpoolReader(path: state + "/spool.sqlite").status().sharingPaused
        #expect(stillPaused, "a pause stays a pause")
        let sharedWhilePaused = try await simulator.gpsInfoCount(endpoint)
        #expect(sharedWhilePaused == 0, "nothing shared while paused")

        #expect(try await AgrigpsCommand.run(["resume", "--state-dir", state]).code == 0)
        var shared = 0
        for _ in 0..<100 where shared == 0 {
            shared = try await simulator.gpsInfoCount(endpoint)
            if shared == 0 { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(shared > 0, "resumed: gps:info reaches agrirouter")

        #expect(try await AgrigpsCommand.run(["disconnect", "--yes", "--state-dir", state]).code == 0)
        try await waitForHeartbeat(in: state) { $0.environment == nil }
        #expect(Heartbeat.read(from: state + "/heartbeat.json")?.environment == nil, "disconnect picked up")
        #expect(daemon.process.isRunning(), "the same process all along")
        #expect(daemon.stderr.filter { $0.contains("the credentials changed") }.count == 2, "\(daemon.stderr)")
        kill(daemon.process.pid, SIGTERM)
        #expect(await daemon.process.wait(timeout: 10) == 143)
        await simulator.shutdown()
    }
}

extension AgrirouterSimulator {
    /// gps:info messages received from `endpoint`.
    func gpsInfoCount(_ endpoint: String) async throws -> Int {
        await sentMessages(endpoint: endpoint).count {
            $0.envelope.technicalMessageType == TechnicalMessageType.gpsInfo
        }
    }
}
