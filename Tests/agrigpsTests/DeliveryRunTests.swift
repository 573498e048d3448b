import AgrirouterWire
import Foundation
import Gateway
import GPSDReplay
import GRDB
import SwiftProtobuf
import Testing
import TestSupport

/// The whole promise under abuse: `agrigps run` on a replay moved to now, killed with SIGKILL at
/// random moments, through a hung and a refused agrirouter, and through clock steps; then every
/// sample committed must have reached agrirouter, once each, and none stamped in the future.
///
/// CI runs it small. `script/delivery-check` runs it at full size (AGRIGPS_DELIVERY_KILLS,
/// AGRIGPS_OUTAGE_SECONDS) and prints the figures.
@Suite(.serialized, .timeLimit(.minutes(40)))
struct DeliveryRunTests {
    static let kills = ProcessInfo.processInfo.environment["AGRIGPS_DELIVERY_KILLS"].flatMap(Int.init).map { min(max($0, 1), 1000) } ?? 3
    static let outage = ProcessInfo.processInfo.environment["AGRIGPS_OUTAGE_SECONDS"].flatMap(Double.init).map { min(max($0, 5), 900) } ?? 12

    struct Machine {
        let onboarded: OnboardedMachine
        let log: String
        let offsetFile: String

        func start() throws -> AgrigpsCommand {
            try AgrigpsCommand(["run", "--replay", log, "--retime", "--clock-offset-file", offsetFile, "--state-dir", onboarded.state,
                                "--send-interval", "5"])
        }

        func shiftClock(by seconds: Double) throws {
            try "\(seconds)\n".write(toFile: offsetFile, atomically: true, encoding: .utf8)
        }

        var heartbeat: Heartbeat? { Heartbeat.read(from: onboarded.state + "/heartbeat.json") }
    }

    @Test("kills, a hung and a refused agrirouter, clock steps: nothing lost, nothing duplicated, nothing stamped in the future")
    func deliveryUnderAbuse() async throws {
        let onboarded = try await Self.machineOnFixedPort()
        defer { Task { await onboarded.close() } }
        // A receiver that keeps going: a log of 3 minutes (no fix, then a fix), ten times over.
        let log = onboarded.directory + "/long.log"
        let once = try Data(contentsOf: URL(fileURLWithPath: Fixtures.log("telit-he910")))
        try Data((0..<10).flatMap { _ in once }).write(to: URL(fileURLWithPath: log))
        let machine = Machine(onboarded: onboarded, log: log, offsetFile: onboarded.directory + "/clock-offset")
        try machine.shiftClock(by: 0)

        // SIGKILL at random moments, each run a fresh start.
        for _ in 0..<Self.kills {
            let run = try machine.start()
            try await Task.sleep(for: .seconds(Double.random(in: 2...8)))
            kill(run.process.pid, SIGKILL)
            #expect(run.process.wait(timeout: 10) == 128 + SIGKILL)
            run.cleanUp()
            // A replay moved to now runs a second behind: the next one must not start within the
            // last one's final second, or two samples could share a time and position.
            try await Task.sleep(for: .seconds(2))
        }

        let daemon = try machine.start()
        defer { if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }; daemon.cleanUp() }
        try await Task.sleep(for: .seconds(10))

        // Hung: requests are taken and never answered.
        let stallStart = ProcessInfo.processInfo.systemUptime
        await onboarded.simulator.stallGateway(for: Self.outage)
        try await Task.sleep(for: .seconds(Self.outage))
        let hungRequests = await onboarded.simulator.gatewayRequestArrivals().count { $0 >= stallStart && $0 < stallStart + Self.outage }
        try await Task.sleep(for: .seconds(15))

        // Refused: the port is closed.
        await onboarded.simulator.suspendGateway()
        let failuresBefore = machine.heartbeat?.transportFailures ?? 0
        try await Task.sleep(for: .seconds(Self.outage))
        let refusedAttempts = (machine.heartbeat?.transportFailures ?? 0) - failuresBefore
        try await onboarded.simulator.resumeGateway()
        try await Task.sleep(for: .seconds(15))

        // The system clock stepped two hours ahead, then back.
        try machine.shiftClock(by: 7200)
        try await Task.sleep(for: .seconds(10))
        try machine.shiftClock(by: 0)
        try await Task.sleep(for: .seconds(10))
        kill(daemon.process.pid, SIGTERM)
        #expect(daemon.process.wait(timeout: 10) == 143, "\(daemon.stderr.suffix(5))")

        // What is left is sent by one more run of a short log, which ends once the spool is empty.
        // (Moved to now too, so that every sample has a time of its own to be told apart by. A batch
        // whose POST was cut off waits up to the outbox's life, 5 minutes, for an answer first.)
        try await Task.sleep(for: .seconds(2))
        let drain = try await AgrigpsCommand.run(["run", "--replay", Fixtures.log("bu353s4"), "--retime", "--state-dir", onboarded.state],
                                                 timeout: 420)
        #expect(drain.code == 0, "\(drain.stderr.suffix(5))")

        let committed = try Self.committed(onboarded.state + "/spool.sqlite")
        let received = try await onboarded.received()
        // A sample with a fix is told apart by the whole entry: its GNSS time is one per interval and
        // runs never overlap, and where gpsd reports a fix first without its time, then with it, the
        // two differ in what the first lacked. Samples without a fix may share a time (a receiver
        // repeats one while it has no fix) and are only counted. A resent batch holds samples with a
        // fix, so it shows.
        let fixes = received.filter { $0.positionStatus != .dNoGps }
        let key = { (entry: GPSEntry) in (try? entry.serializedBytes() as Data) ?? Data() }
        let duplicates = fixes.count - Set(fixes.map(key)).count
        let lost = committed - (received.count - duplicates)
        let status = await onboarded.spoolStatus()
        let future = await onboarded.simulator.refusedForFutureTimestamps()
        print("delivery: \(Self.kills) kills, outages of \(Int(Self.outage)) s: \(committed) samples committed, \(received.count) received, "
              + "\(lost) lost, \(duplicates) duplicates; "
              + "\(hungRequests) requests while hung, \(refusedAttempts) connection attempts while refused; "
              + "\(future) refused for a future timestamp; \(status.pending + status.inFlight + status.failed + status.parked) left in the spool")
        #expect(status.pending + status.inFlight + status.failed + status.parked == 0)
        #expect(lost == 0, "every committed sample arrived")
        let untimed = received.count { !$0.hasGpsUtcTimestamp }
        #expect(untimed == 0)
        #expect(future == 0)
        // Backoff: a handful of attempts per outage, not one every few seconds.
        #expect(hungRequests <= 3 + Int(Self.outage / 60), "\(hungRequests) requests while hung")
        #expect(refusedAttempts >= 1 && refusedAttempts <= 3 + Int(Self.outage / 60), "\(refusedAttempts) attempts while refused")
        var seen: [String: [Int]] = [:]
        for (index, entry) in received.enumerated() where entry.positionStatus != .dNoGps {
            seen[key(entry).base64EncodedString(), default: []].append(index)
        }
        let twice = seen.filter { $0.value.count > 1 }.map { key, indices in
            "\(key): " + indices.map { "#\($0) \(received[$0].positionStatus) \(received[$0].positionNorth) \(received[$0].positionEast)" }.joined(separator: ", ")
        }
        #expect(duplicates == 0, "\(twice.sorted().joined(separator: "; "))")
    }

    /// The gateway port is closed for a while: a port the kernel hands out to anyone asking for a
    /// free one (the replay's own listener, say) could be taken meanwhile. Below the ephemeral range
    /// it stays ours; one in use by something else is skipped.
    static func machineOnFixedPort() async throws -> OnboardedMachine {
        var lastError: (any Error)?
        for _ in 0..<10 {
            do {
                return try await OnboardedMachine.make(gatewayPort: Int.random(in: 20_000..<30_000))
            } catch {
                lastError = error
            }
        }
        throw lastError ?? CocoaError(.featureUnsupported)
    }

    /// Samples ever committed: the spool's ids are AUTOINCREMENT, never reused.
    static func committed(_ path: String) throws -> Int {
        try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'sample'") ?? 0 }
    }
}
