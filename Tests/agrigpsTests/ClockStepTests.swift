import AgrirouterSim
import AgrirouterWire
import Foundation
import TestSupport
import Testing

/// `agrigps run` with its system clock wrong, through a replay moved to now, into a local agrirouter
/// that refuses timestamps in the future as the real one does. The daemon reads its system clock
/// through a shift in a file, so the test steps it while the daemon runs.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct ClockStepTests {
    struct Scenario: Sendable, CustomStringConvertible {
        var description: String
        /// Seconds the daemon's system clock is off at the start, and after `stepAfter` seconds.
        var shift: Double
        var stepAfter: Double?
        var shiftAfterStep: Double = 0
    }

    static let scenarios = [
        // A box without a battery-backed clock: it boots at 1970, and NTP sets the clock mid-run.
        Scenario(description: "1970, then set right", shift: 3 * 86_400 - Date().timeIntervalSince1970, stepAfter: 12),
        // A clock two hours fast, left so.
        Scenario(description: "2 h fast", shift: 7200),
        // Two hours fast, then stepped back to the right time.
        Scenario(description: "2 h fast, then set back", shift: 7200, stepAfter: 12),
    ]

    @Test("every sample arrives once and no timestamp is ahead of the true time", arguments: scenarios)
    func clockSteps(_ scenario: Scenario) async throws {
        let machine = try await OnboardedMachine.make()
        try await tearingDown({ await machine.close() }) {
            let offsetFile = machine.directory + "/clock-offset"
            try "\(scenario.shift)\n".write(toFile: offsetFile, atomically: true, encoding: .utf8)
            let log = Fixtures.log("bu353s4")
            async let running = AgrigpsCommand.run(
                [
                    "run", "--replay", log, "--retime", "--clock-offset-file", offsetFile,
                    "--state-dir", machine.state, "--spacing", "0.05", "--send-interval", "5",
                ], timeout: 150)
            if let after = scenario.stepAfter {
                try await Task.sleep(for: .seconds(after))
                try "\(scenario.shiftAfterStep)\n".write(toFile: offsetFile, atomically: true, encoding: .utf8)
            }
            let run = try await running
            #expect(run.code == 0, "\(run.stderr.suffix(8))")

            // Every sample taken reached agrirouter, once.
            let taken = try #require(
                run.stdout.last.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") }, "\(run.stdout)")
            let received = try await machine.received()
            #expect(taken > 20, "a 25 s log at 1 s")
            #expect(received.count == taken, "taken \(taken), received \(received.count)")
            let status = await machine.spoolStatus()
            #expect(status.pending + status.inFlight + status.failed + status.parked == 0)
            #expect(status.resent == 0 && status.dropped.isEmpty, "\(status.dropped)")
            #expect(await machine.simulator.refusedForFutureTimestamps() == 0)

            // Each message and each position is stamped with the true time: not ahead of its arrival,
            // and not 56 years or 2 hours off.
            let messages = try await machine.simulator.sentMessages(endpoint: machine.endpointID)
            let arrivals = try await machine.simulator.arrivals(endpoint: machine.endpointID)
            #expect(messages.count == arrivals.count)
            for (message, arrival) in zip(messages, arrivals) {
                let stamped = message.envelope.timestamp.date
                #expect(
                    stamped <= arrival.addingTimeInterval(0.001) && stamped > arrival.addingTimeInterval(-30),
                    "\(message.envelope.technicalMessageType) stamped \(stamped), arrived \(arrival)")
                guard message.envelope.technicalMessageType == TechnicalMessageType.gpsInfo else { continue }
                for entry in try Agrirouter_Technicalmessagetype_GPSList(serializedBytes: message.payload).gpsEntries
                where entry.hasGpsUtcTimestamp {
                    let time = entry.gpsUtcTimestamp.date
                    #expect(
                        time <= arrival && time > arrival.addingTimeInterval(-120),
                        "position at \(time), arrived \(arrival)")
                }
            }
            #expect(received.count { $0.positionStatus != .dNoGps } >= 20)
            // Samples without a receiver time too (before the first fix, at "1970"): their monotonic
            // stamp gives them the true time once a fix or agrirouter has told it.
            let untimed = received.count { !$0.hasGpsUtcTimestamp }
            #expect(untimed == 0, "\(untimed) of \(received.count) without a time")
        }
    }
}
