import AgrirouterWire
import Foundation
import GPSDReplay
import GRDB
import StateDirectory
import SwiftProtobuf
import TestSupport
import Testing

/// The whole promise under abuse: `agrigps run` on a replay moved to now, killed with SIGKILL at
/// random moments, through a hung and a refused agrirouter, and through clock steps; then every
/// sample committed must have reached agrirouter, once each, and none stamped in the future.
///
/// CI runs it small. `script/delivery-check` runs it at full size (AGRIGPS_DELIVERY_KILLS,
/// AGRIGPS_DELIVERY_TERMS, AGRIGPS_OUTAGE_SECONDS) and prints the figures.
@Suite(.serialized, .timeLimit(.minutes(40)))
struct DeliveryRunTests {
    static let kills =
        ProcessInfo.processInfo.environment["AGRIGPS_DELIVERY_KILLS"].flatMap(Int.init).map { min(max($0, 1), 1000) }
        ?? 3
    static let terms =
        ProcessInfo.processInfo.environment["AGRIGPS_DELIVERY_TERMS"].flatMap(Int.init).map { min(max($0, 0), 1000) }
        ?? 1
    static let outage =
        ProcessInfo.processInfo.environment["AGRIGPS_OUTAGE_SECONDS"].flatMap(Double.init).map { min(max($0, 5), 900) }
        ?? 12
    /// How long the local agrirouter keeps answers, and the daemon waits for them, before a batch
    /// whose answer was lost goes again: 60 s rather than agrirouter's 300, so that the run's last
    /// step does not wait out five minutes. The rule is the same; only the wait is shorter.
    static let outboxLifetime = 60.0

    struct Machine {
        let onboarded: OnboardedMachine
        let log: String
        let offsetFile: String

        func start() throws -> AgrigpsCommand {
            try AgrigpsCommand([
                "run", "--replay", log, "--retime", "--clock-offset-file", offsetFile, "--state-dir", onboarded.state,
                "--send-interval", "5", "--outbox-lifetime", "\(Int(DeliveryRunTests.outboxLifetime))",
            ])
        }

        func shiftClock(by seconds: Double) throws {
            try "\(seconds)\n".write(toFile: offsetFile, atomically: true, encoding: .utf8)
        }

        var heartbeat: Heartbeat? { Heartbeat.read(from: onboarded.state + "/heartbeat.json") }
    }

    @Test(
        "kills, a hung and a refused agrirouter, clock steps: nothing lost, nothing duplicated, nothing stamped in the future"
    )
    func deliveryUnderAbuse() async throws {
        let onboarded = try await Self.machineOnFixedPort()
        try await tearingDown({ await onboarded.close() }) {
            let (machine, daemon) = try await Self.killedThenRunning(onboarded)
            defer {
                if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
                daemon.cleanUp()
            }

            // Hung: requests are taken and never answered.
            let stallStart = ProcessInfo.processInfo.systemUptime
            await onboarded.simulator.stallGateway(for: Self.outage)
            try await Task.sleep(for: .seconds(Self.outage))
            let hungRequests = await onboarded.simulator.gatewayRequestArrivals().count {
                $0 >= stallStart && $0 < stallStart + Self.outage
            }
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
            #expect(await daemon.process.wait(timeout: 10) == 143, "\(daemon.stderr.suffix(5))")

            try await Self.drain(onboarded)
            let tally = try await Tally.of(onboarded, entries: try await onboarded.received())
            let future = await onboarded.simulator.refusedForFutureTimestamps()
            print(
                "delivery: \(Self.kills) kills, \(Self.terms) SIGTERMs, outages of \(Int(Self.outage)) s: \(tally.committed) samples committed, \(tally.received) received, "
                    + "\(tally.lost) lost, \(tally.duplicates) duplicates; "
                    + "\(hungRequests) requests while hung, \(refusedAttempts) connection attempts while refused; "
                    + "\(future) refused for a future timestamp; \(tally.leftInSpool) left in the spool")
            #expect(tally.leftInSpool == 0)
            #expect(tally.lost == 0, "every committed sample arrived")
            let untimed = try await onboarded.received().count { !$0.hasGpsUtcTimestamp }
            #expect(untimed == 0)
            #expect(future == 0)
            // Backoff: a handful of attempts per outage, not one every few seconds.
            #expect(hungRequests <= 3 + Int(Self.outage / 60), "\(hungRequests) requests while hung")
            // Refused: an attempt at most every 20 s (the backoff's cap; a TLS handshake probe every
            // 3 s between them ends it as soon as the port is back).
            #expect(
                refusedAttempts >= 1 && refusedAttempts <= 3 + Int(Self.outage / 20),
                "\(refusedAttempts) attempts while refused")
            // A SIGKILL between an outbox GET and the commit of the answers it took loses them, and that
            // batch goes again after the outbox's life: at most one batch a kill (seen: 1 sample in 1 of
            // 6 runs). Closing that window needs the answers journalled before they are routed.
            #expect(tally.duplicates <= Self.kills * tally.largestMessage, "\(tally.twice)")
        }
    }

    @Test("over MQTT: kills, and the broker restarted twice in the middle of a run: nothing lost, in either format")
    func mqttDeliveryThroughKillsAndBrokerRestarts() async throws {
        let onboarded = try await OnboardedMachine.make(transport: "mqtt", outboxLifetime: Self.outboxLifetime)
        try await tearingDown({ await onboarded.close() }) {
            let (machine, daemon) = try await Self.killedThenRunning(onboarded)
            defer {
                if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
                daemon.cleanUp()
            }
            // Every connection drops and the broker comes back having forgotten every session, while
            // the daemon keeps sampling and publishing.
            var restarts = 0
            for _ in 0..<2 {
                try await onboarded.simulator.restartBroker(after: Double.random(in: 1...4))
                restarts += 1
                try await Task.sleep(for: .seconds(12))
            }
            let connection = machine.heartbeat?.connection
            kill(daemon.process.pid, SIGTERM)
            #expect(await daemon.process.wait(timeout: 10) == 143, "\(daemon.stderr.suffix(5))")
            #expect(connection == "connected", "the daemon reconnected after the last restart")

            try await Self.drain(onboarded)
            let entries = try await Tally.of(onboarded, entries: try await onboarded.received())
            let times = try await Tally.of(onboarded, times: try await onboarded.receivedTimes())
            print(
                "delivery over MQTT: \(Self.kills) kills, \(Self.terms) SIGTERMs, \(restarts) broker restarts: \(entries.committed) samples committed; "
                    + "gps:info \(entries.received) received, \(entries.lost) lost, \(entries.duplicates) duplicates; "
                    + "TimeLog \(times.received) received, \(times.lost) lost, \(times.duplicates) duplicates; \(entries.leftInSpool) left in the spool"
            )
            #expect(entries.leftInSpool == 0)
            // A restart can take an answer with it (the broker forgets what it had not delivered), and
            // a batch unanswered for the outbox's life goes again: at most the batch of each format in
            // flight at each restart. Its samples without a fix cannot be told apart from others, so
            // they count as received once more, and `lost` goes below 0 by as many: the samples
            // received twice are those with a fix plus that many, within the same bound.
            #expect(entries.lost <= 0 && times.lost <= 0, "every committed sample arrived in both formats")
            #expect(
                entries.duplicates - min(entries.lost, 0) <= restarts * entries.largestMessage,
                "\(entries.twice); lost \(entries.lost)")
            #expect(
                times.duplicates - min(times.lost, 0) <= restarts * times.largestMessage,
                "\(times.twice); lost \(times.lost)")
        }
    }

    /// A receiver that keeps going: a log of 3 minutes (no fix, then a fix), ten times over, replayed
    /// moved to now.
    static func longReplay(_ onboarded: OnboardedMachine) throws -> Machine {
        let log = onboarded.directory + "/long.log"
        let once = try Data(contentsOf: URL(fileURLWithPath: Fixtures.log("telit-he910")))
        try Data((0..<10).flatMap { _ in once }).write(to: URL(fileURLWithPath: log))
        let machine = Machine(onboarded: onboarded, log: log, offsetFile: onboarded.directory + "/clock-offset")
        try machine.shiftClock(by: 0)
        return machine
    }

    /// The long replay killed `kills` times, then a daemon that has run for 10 s.
    static func killedThenRunning(_ onboarded: OnboardedMachine) async throws -> (Machine, AgrigpsCommand) {
        let machine = try longReplay(onboarded)
        try await killRepeatedly(machine)
        let daemon = try machine.start()
        try await Task.sleep(for: .seconds(10))
        return (machine, daemon)
    }

    /// SIGKILL at random moments, then SIGTERM at random moments, each run a fresh start.
    static func killRepeatedly(_ machine: Machine) async throws {
        for signal in Array(repeating: SIGKILL, count: kills) + Array(repeating: SIGTERM, count: terms) {
            let run = try machine.start()
            try await Task.sleep(for: .seconds(Double.random(in: 2...8)))
            kill(run.process.pid, signal)
            #expect(await run.process.wait(timeout: 10) == 128 + signal, "\(run.stderr.suffix(5))")
            run.cleanUp()
            // A replay moved to now runs a second behind: the next one must not start within the
            // last one's final second, or two samples could share a time and position.
            try await Task.sleep(for: .seconds(2))
        }
    }

    /// What is left is sent by one more run of a short log, which ends once the spool is empty.
    /// (Moved to now too, so that every sample has a time of its own to be told apart by. A batch
    /// whose answer was lost waits up to the outbox's life, `outboxLifetime`, for it first.)
    static func drain(_ onboarded: OnboardedMachine) async throws {
        try await Task.sleep(for: .seconds(2))
        let drain = try await AgrigpsCommand.run(
            [
                "run", "--replay", Fixtures.log("bu353s4"), "--retime", "--state-dir", onboarded.state,
                "--outbox-lifetime", "\(Int(outboxLifetime))",
            ],
            timeout: 420)
        #expect(drain.code == 0, "\(drain.stderr.suffix(5))")
    }

    /// What arrived of every committed sample, in one format.
    ///
    /// A sample with a fix is told apart by the whole entry: its GNSS time is one per interval and
    /// runs never overlap, and where gpsd reports a fix first without its time, then with it, the
    /// two differ in what the first lacked. Samples without a fix may share a time (a receiver
    /// repeats one while it has no fix) and are only counted. A resent batch holds samples with a
    /// fix, so it shows.
    struct Tally {
        var committed = 0, received = 0, duplicates = 0, leftInSpool = 0, largestMessage = 0
        var twice = ""
        var lost: Int { committed - (received - duplicates) }

        static func of(_ onboarded: OnboardedMachine, entries: [GPSEntry]) async throws -> Tally {
            let largest =
                try await onboarded.simulator.sentMessages(endpoint: try onboarded.endpointID)
                .filter { $0.envelope.technicalMessageType == TechnicalMessageType.gpsInfo }
                .map { try Agrirouter_Technicalmessagetype_GPSList(serializedBytes: $0.payload).gpsEntries.count }.max()
                ?? 0
            return try await of(
                onboarded, items: entries, largest: largest, hasFix: { $0.positionStatus != .dNoGps },
                describe: { "\($0.positionStatus) \($0.positionNorth) \($0.positionEast)" })
        }

        static func of(_ onboarded: OnboardedMachine, times: [Efdi_Time]) async throws -> Tally {
            let largest =
                try await onboarded.simulator.sentMessages(endpoint: try onboarded.endpointID)
                .filter { $0.envelope.technicalMessageType == TechnicalMessageType.timeLog }
                .map { try Efdi_TimeLog(serializedBytes: $0.payload).time.count }.max() ?? 0
            return try await of(
                onboarded, items: times, largest: largest, hasFix: { $0.positionStart.positionStatus != .dNoGps },
                describe: { "\($0.positionStart.positionNorth) \($0.positionStart.positionEast)" })
        }

        private static func of<Item: SwiftProtobuf.Message>(
            _ onboarded: OnboardedMachine, items: [Item], largest: Int,
            hasFix: (Item) -> Bool, describe: (Item) -> String
        ) async throws -> Tally {
            let key = { (item: Item) in (try? item.serializedBytes() as Data)?.base64EncodedString() ?? "" }
            var seen: [String: [Int]] = [:]
            for (index, item) in items.enumerated() where hasFix(item) { seen[key(item), default: []].append(index) }
            let status = await onboarded.spoolStatus()
            var tally = Tally()
            tally.committed = try DeliveryRunTests.committed(onboarded.state + "/spool.sqlite")
            tally.received = items.count
            tally.duplicates = seen.values.reduce(0) { $0 + $1.count - 1 }
            tally.leftInSpool = status.pending + status.inFlight + status.failed + status.parked
            tally.largestMessage = largest
            tally.twice = seen.values.filter { $0.count > 1 }.map { indices in
                indices.map { "#\($0) \(describe(items[$0]))" }.joined(separator: ", ")
            }
            .sorted().joined(separator: "; ")
            return tally
        }
    }

    /// The gateway port is closed for a while: a port the kernel hands out to anyone asking for a
    /// free one (the replay's own listener, say) could be taken meanwhile. Below the ephemeral range
    /// it stays ours; one in use by something else is skipped.
    static func machineOnFixedPort() async throws -> OnboardedMachine {
        var lastError: (any Error)?
        for _ in 0..<10 {
            do {
                return try await OnboardedMachine.make(
                    gatewayPort: Int.random(in: 20_000..<30_000), outboxLifetime: outboxLifetime)
            } catch {
                lastError = error
            }
        }
        throw lastError ?? CocoaError(.featureUnsupported)
    }

    /// Samples ever committed: the spool's ids are never reused. The highest is the table's, or, once
    /// the newest rows have left, the one the spool noted when they did.
    static func committed(_ path: String) throws -> Int {
        try DatabaseQueue(path: path).read { db in
            let table = try Int.fetchOne(db, sql: "SELECT MAX(id) FROM sample") ?? 0
            let noted =
                try Int.fetchOne(db, sql: "SELECT CAST(number AS INTEGER) FROM spool_state WHERE name = 'highest_id'")
                ?? 0
            return max(table, noted)
        }
    }
}
