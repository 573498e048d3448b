import Foundation
import TestSupport
import Testing

/// Stopping and outages, beside the abuse runs of `DeliveryRunTests` (a suite of their own so that
/// they run alongside it): SIGTERM after SIGTERM leaves no duplicate, and an outage is reported at
/// once and left within 30 s of agrirouter's return.
@Suite(.serialized, .timeLimit(.minutes(15)))
struct DeliveryStopTests {
    @Test(
        "SIGTERM at random moments, again and again: every answer taken from the outbox is recorded before the daemon stops, so nothing is sent twice"
    )
    func sigtermsLeaveNoDuplicates() async throws {
        let onboarded = try await OnboardedMachine.make()
        try await tearingDown({ await onboarded.close() }) {
            let machine = try DeliveryRunTests.longReplay(onboarded)
            for _ in 0..<Self.terms {
                let run = try machine.start()
                try await Task.sleep(for: .seconds(Double.random(in: 3...9)))
                kill(run.process.pid, SIGTERM)
                #expect(await run.process.wait(timeout: 15) == 143, "\(run.stderr.suffix(5))")
                run.cleanUp()
                try await Task.sleep(for: .seconds(2))
            }
            let (entries, times) = try await Self.drainedTallies(onboarded)
            print(
                "delivery through \(Self.terms) SIGTERMs: \(entries.committed) samples committed; gps:info \(entries.received) received, "
                    + "\(entries.lost) lost, \(entries.duplicates) duplicates; TimeLog \(times.received) received, \(times.lost) lost, "
                    + "\(times.duplicates) duplicates; \(entries.leftInSpool) left in the spool")
            #expect(entries.lost == 0 && times.lost == 0)
            #expect(entries.duplicates == 0 && times.duplicates == 0, "\(entries.twice) | \(times.twice)")
        }
    }

    @Test(
        "SIGTERM while agrirouter answers a GET of the outbox slowly: the stop waits for the answers it took, so no batch goes twice"
    )
    func sigtermDuringAnOutboxGet() async throws {
        let onboarded = try await OnboardedMachine.make()
        try await tearingDown({ await onboarded.close() }) {
            let machine = try DeliveryRunTests.longReplay(onboarded)
            var stops: [Double] = []
            for _ in 0..<Self.slowPolls {
                let run = try machine.start()
                try await Task.sleep(for: .seconds(8))  // past the start's own poll, publishing every 5 s
                // The next GET empties the outbox at once and answers 5 s later, as a slow link would.
                await onboarded.simulator.inject(.stallOutbox(seconds: 5))
                let deadline = ContinuousClock.now + .seconds(20)
                while await onboarded.simulator.pendingFaults() > 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                try #require(await onboarded.simulator.pendingFaults() == 0, "no GET of the outbox within 20 s")
                try await Task.sleep(for: .milliseconds(300))
                let stopping = ContinuousClock.now
                kill(run.process.pid, SIGTERM)
                #expect(await run.process.wait(timeout: 20) == 143, "\(run.stderr.suffix(5))")
                stops.append(Double((ContinuousClock.now - stopping).components.seconds))
                run.cleanUp()
                try await Task.sleep(for: .seconds(1))
            }
            let (entries, times) = try await Self.drainedTallies(onboarded)
            print(
                "\(Self.slowPolls) SIGTERMs during a 5 s GET of the outbox: stops took \(stops) s; gps:info \(entries.received) received "
                    + "of \(entries.committed), \(entries.lost) lost, \(entries.duplicates) duplicates; TimeLog \(times.lost) lost, "
                    + "\(times.duplicates) duplicates")
            #expect(entries.lost == 0 && times.lost == 0)
            #expect(entries.duplicates == 0 && times.duplicates == 0, "\(entries.twice) | \(times.twice)")
            #expect(stops.allSatisfy { $0 < 15 }, "each stop within the unit's 20 s")
        }
    }

    @Test(
        "a refused port for a minute: status says WARNING and why within seconds, and the backlog drains within 30 s of its return"
    )
    func outageNoticedAndLeftQuickly() async throws {
        let onboarded = try await DeliveryRunTests.machineOnFixedPort()
        try await tearingDown({ await onboarded.close() }) {
            let machine = try DeliveryRunTests.longReplay(onboarded)
            let daemon = try AgrigpsCommand([
                "run", "--replay", machine.log, "--retime", "--clock-offset-file", machine.offsetFile,
                "--state-dir", onboarded.state,
            ])  // the default send interval, 10 s
            defer {
                if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
                daemon.cleanUp()
            }
            let clock = ContinuousClock()
            var deadline = clock.now + .seconds(40)
            while machine.heartbeat?.lastAcknowledgedAt == nil, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(250))
            }
            try #require(machine.heartbeat?.lastAcknowledgedAt != nil, "nothing acknowledged before the outage")

            await onboarded.simulator.suspendGateway()
            let outage = clock.now
            var warned: Duration?
            var said = ""
            while clock.now - outage < .seconds(60) {
                let status = try await AgrigpsCommand.run(["status", "--state-dir", onboarded.state], timeout: 20)
                if warned == nil, status.code == 1, let line = status.stdout.first,
                    line.contains("agrirouter unreachable")
                {
                    warned = clock.now - outage
                    said = line
                }
                try await Task.sleep(for: .seconds(1))
            }
            try await onboarded.simulator.resumeGateway()
            let back = clock.now
            let backAt = Date()
            var drained: Duration?
            deadline = clock.now + .seconds(90)
            while drained == nil, clock.now < deadline {
                if let acknowledged = machine.heartbeat?.lastAcknowledgedAt, acknowledged > backAt {
                    drained = clock.now - back
                }
                try await Task.sleep(for: .milliseconds(250))
            }
            kill(daemon.process.pid, SIGTERM)
            #expect(await daemon.process.wait(timeout: 15) == 143)
            print(
                "outage of 60 s (refused port): WARNING after \(warned.map { "\($0)" } ?? "never") (\(said)); "
                    + "first acknowledgement \(drained.map { "\($0)" } ?? "never") after agrirouter came back")
            #expect(warned.map { $0 <= .seconds(60) } == true, "status did not warn within 60 s")
            #expect(drained.map { $0 <= .seconds(30) } == true, "the backlog did not start draining within 30 s")
        }
    }

    /// What is left sent off, then what arrived of every committed sample, as gps:info and as TimeLog.
    static func drainedTallies(_ onboarded: OnboardedMachine) async throws -> (
        entries: DeliveryRunTests.Tally, times: DeliveryRunTests.Tally
    ) {
        try await DeliveryRunTests.drain(onboarded)
        return (
            try await DeliveryRunTests.Tally.of(onboarded, entries: try await onboarded.received()),
            try await DeliveryRunTests.Tally.of(onboarded, times: try await onboarded.receivedTimes())
        )
    }

    static let slowPolls = 3
    static let terms =
        ProcessInfo.processInfo.environment["AGRIGPS_DELIVERY_TERMS"].flatMap(Int.init).map { min(max($0, 1), 1000) }
        ?? 5
}
