import AgrirouterWire
import Foundation
import TestSupport
import Testing

/// Thousands of large pushes on the endpoint's commands topic, as a peer gone wrong (or someone
/// with its credentials) could send: the daemon keeps a bounded inbox and keeps publishing.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct PushFloodTests {
    static let pushes =
        ProcessInfo.processInfo.environment["AGRIGPS_FLOOD_PUSHES"].flatMap(Int.init).map { min(max($0, 0), 20_000) }
        ?? 3_000
    static let pushBytes = 65_000

    @Test(
        "over MQTT: 3,000 pushes of 65 KB at once: peak memory under 100 MB, samples published at the normal rate, the drop counted"
    )
    func mqttPushFlood() async throws {
        let onboarded = try await OnboardedMachine.make(transport: "mqtt")
        try await tearingDown({ await onboarded.close() }) {
            let machine = try DeliveryRunTests.longReplay(onboarded)
            let daemon = try machine.start()
            defer {
                if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
                daemon.cleanUp()
            }
            try await Task.sleep(for: .seconds(12))
            let endpoint = try onboarded.endpointID
            let calm = Self.peakResidentKiB(daemon.process.pid) ?? 0

            let flooded = await onboarded.simulator.floodCommands(
                endpoint: endpoint, count: Self.pushes, size: Self.pushBytes)
            #expect(flooded == Self.pushes)
            // From when the pushes are handed to the broker: making them takes a while on a loaded machine.
            let before = try await Self.published(onboarded, endpoint)
            let clock = ContinuousClock()
            let started = clock.now
            var peak = 0
            while clock.now - started < .seconds(40) {
                peak = max(peak, Self.peakResidentKiB(daemon.process.pid) ?? 0)
                try await Task.sleep(for: .milliseconds(500))
            }
            let during = try await Self.published(onboarded, endpoint) - before
            peak = max(peak, Self.peakResidentKiB(daemon.process.pid) ?? 0)
            kill(daemon.process.pid, SIGTERM)
            #expect(await daemon.process.wait(timeout: 10) == 143, "\(daemon.stderr.suffix(5))")
            let heartbeat = machine.heartbeat  // the last one, written as it stopped
            // The daemon sends every 5 s: 8 sends in 40 s, less a cycle or two taken by the flood.
            print(
                "push flood over MQTT: \(flooded) pushes of \(Self.pushBytes) bytes; peak RSS \(peak / 1024) MiB (\(calm / 1024) MiB before); "
                    + "\(during) gps:info messages published in 40 s (every 5 s: 8); \(heartbeat?.droppedInbound ?? 0) dropped unread"
            )
            #expect(peak > 0 && peak < 100 * 1024, "peak RSS \(peak) KiB")
            #expect(during >= 6, "\(during) messages published in 40 s of flood")
            #expect((heartbeat?.droppedInbound ?? 0) > 0, "the drop is counted for status")
            #expect(daemon.stderr.contains { $0.contains("dropped unread") }, "the drop is logged")
            #expect(!daemon.stderr.contains { $0.contains("not the expected JSON") })
        }
    }

    /// gps:info messages the simulator took from this endpoint so far.
    static func published(_ onboarded: OnboardedMachine, _ endpoint: String) async throws -> Int {
        await onboarded.simulator.sentMessages(endpoint: endpoint).count {
            $0.envelope.technicalMessageType == TechnicalMessageType.gpsInfo
        }
    }

    /// VmHWM: the most resident memory the process has had, in KiB.
    static func peakResidentKiB(_ pid: pid_t) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return nil }
        return Int(line.split(separator: " ").dropFirst().first ?? "")
    }
}
