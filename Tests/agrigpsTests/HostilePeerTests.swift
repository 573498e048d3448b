import AgrirouterSim
import AgrirouterWire
import Foundation
import GPSDReplay
import SwiftProtobuf
import TestSupport
import Testing

/// The daemon against what another machine or a broken agrirouter can send it.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct HostilePeerTests {
    /// A daemon on an onboarded machine whose gpsd is down, so that it only talks to agrirouter.
    func daemon(_ machine: OnboardedMachine) throws -> AgrigpsCommand {
        let port = try ReplayGPSD.freeLoopbackPort()
        return try AgrigpsCommand([
            "run", "--gpsd", "127.0.0.1:\(port)", "--interval", "1", "--send-interval", "0.2",
            "--spacing", "0.05", "--state-dir", machine.state,
        ])
    }

    /// An onboarded machine with its daemon running (gpsd down), set up and past its feed catch-up
    /// once agrirouter has its samples; `body` gets both and the machine's endpoint id.
    func withRunningDaemon(_ body: (OnboardedMachine, AgrigpsCommand, String) async throws -> Void) async throws {
        let machine = try await OnboardedMachine.make()
        try await tearingDown({ await machine.close() }) {
            let daemon = try daemon(machine)
            defer {
                if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
                daemon.cleanUp()
            }
            #expect(await eventually(within: 20) { ((try? await machine.received().count) ?? 0) > 1 })
            try await body(machine, daemon, try machine.endpointID)
        }
    }

    @Test(
        "a push whose GPS entry has a time of INT64_MIN is refused, confirmed once and counted; the daemon keeps running and status shows it"
    )
    func hostilePush() async throws {
        try await withRunningDaemon { machine, daemon, tractor in

            var entry = GPSEntry()
            (entry.positionStatus, entry.positionNorth, entry.positionEast) = (.dGnss, 52.1, 8.1)
            entry.gpsUtcTimestamp.seconds = .min
            var list = Agrirouter_Technicalmessagetype_GPSList()
            list.gpsEntries = [entry]
            let hostile = await machine.simulator.deliver(
                try list.serializedBytes(), from: "peer-endpoint", to: tractor, sentSeconds: .min)
            #expect(
                await eventually(within: 20) {
                    await machine.simulator.confirmations(endpoint: tractor).contains { $0.messageID == hostile }
                }, "\(daemon.stderr.suffix(20))")

            // Still alive a few polls later, the message confirmed once, and status says so.
            try await Task.sleep(for: .seconds(1))
            #expect(daemon.process.isRunning(), "\(daemon.stderr.suffix(5))")
            #expect(await machine.simulator.confirmations(endpoint: tractor).count { $0.messageID == hostile } == 1)
            let status = try await AgrigpsCommand.run(["status", "--json", "--state-dir", machine.state])
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(status.stdout.joined().utf8)) as? [String: Any])
            let others = try #require(object["others"] as? [String: Any])
            #expect(others["refused_messages"] as? Int == 1)
            #expect((others["last_refusal"] as? String)?.contains("gps_utc_timestamp") == true)
            let text = try await AgrigpsCommand.run(["status", "--state-dir", machine.state])
            #expect(text.stdout.contains { $0.hasPrefix("Refused from other machines: 1 message") }, "\(text.stdout)")
            #expect(daemon.stderr.count { $0.contains("refused a feed message") } == 1, "logged once")

            kill(daemon.process.pid, SIGTERM)
            #expect(await daemon.process.wait(timeout: 10) == 143)
            #expect(daemon.stdout.last?.hasPrefix("agrigps: ") == true, "stopped by its own handler, with its summary")
        }
    }

    @Test("an outbox answer of 300 MB is cut off at the cap: the daemon's memory stays bounded and it goes on polling")
    func oversizedOutbox() async throws {
        try await withRunningDaemon { machine, daemon, tractor in
            let before = await machine.simulator.gatewayRequestArrivals().count
            await machine.simulator.inject(.oversizedOutbox(bytes: 300_000_000))
            // It polls again after the refused answer: the fault is used up, and more requests arrive.
            #expect(
                await eventually(within: 30) { await machine.simulator.gatewayRequestArrivals().count > before + 4 },
                "\(daemon.stderr.suffix(20))")
            #expect(daemon.process.isRunning())
            let peak = Self.peakResidentMiB(daemon.process.pid)
            print("agrigps run: peak resident set \(peak) MiB after a 300 MB outbox answer")
            #expect(peak > 0 && peak < 120, "peak resident set \(peak) MiB")
            #expect(daemon.stderr.contains { $0.contains("larger than 16 MiB") }, "\(daemon.stderr.suffix(5))")
        }
    }

    @Test(
        "an endpoint deleted in agrirouter's UI is found by dke:ping at once; status is CRITICAL and says to onboard again"
    )
    func deletedEndpoint() async throws {
        try await withRunningDaemon { machine, daemon, tractor in
            func pings() async -> Int {
                await machine.simulator.sentMessages(endpoint: tractor).count {
                    $0.envelope.technicalMessageType == TechnicalMessageType.ping
                }
            }
            #expect(await pings() == 1, "one ping at the start, answered ACK")
            let healthy = try await AgrigpsCommand.run(["status", "--state-dir", machine.state])
            #expect(!healthy.stdout.joined().contains("no longer knows"))

            #expect(await machine.simulator.delete(endpoint: tractor))
            // The next gps:info is refused as from an unknown endpoint; that sends a ping at once, not in a day.
            #expect(
                await eventually(within: 20) {
                    let status = try? await AgrigpsCommand.run(["status", "--json", "--state-dir", machine.state])
                    let object =
                        (try? JSONSerialization.jsonObject(with: Data((status?.stdout ?? []).joined().utf8)))
                        as? [String: Any]
                    return object?["endpoint_deleted_at"] is String
                })
            #expect(await pings() == 2)
            let status = try await AgrigpsCommand.run(["status", "--state-dir", machine.state])
            #expect(status.code == 2)
            #expect(
                status.stdout.first?.contains("agrirouter no longer knows this endpoint") == true, "\(status.stdout)")
            #expect(status.stdout.first?.contains("onboard again with a new TAN") == true)
        }
    }

    /// VmHWM of a live process, in MiB.
    static func peakResidentMiB(_ pid: pid_t) -> Int {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0) / 1024
    }
}
