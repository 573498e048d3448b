import AgrirouterSim
import AgrirouterWire
import Clocks
import Foundation
import TestSupport
import Testing

@testable import AgrirouterLink

/// The backoff after a transport error, and how it ends: a failure to connect at all is ended by a
/// handshake that gets through (no request of agrirouter's API); a server that hangs keeps its rest.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct BackoffTests {
    /// A backoff long enough that ending it early cannot be mistaken for its running out.
    static let long = Backoff(first: 60, maximum: 60, jitter: 0)

    @Test(
        "a refused port (virtual time): probed every 3 s, the backoff stands while refused and ends at the first probe after agrirouter's return, found by a handshake, not by a request"
    )
    func theWayBackEndsTheBackoff() async throws {
        let time = ManualClock()
        let (simulator, connection) = try await AnswerRoutingTests.connected(
            as: "urn:agrigps:way-back", spacing: 0, backoff: Self.long, monotonic: time.clock)
        try await tearingDown({ await simulator.shutdown() }) {
            let endpoint = connection.endpoint.deviceAlternateId
            try await connection.poll()
            await simulator.suspendGateway()
            await #expect(throws: GatewayError.self) { try await connection.poll() }
            #expect(await connection.consecutiveFailures == 1)
            #expect(await connection.backingOff() == 60, "backing off for a minute")
            let requests = await simulator.requestCount(endpoint: endpoint)

            // Still refused: two probes fail and the backoff stands.
            let waiting = Task { await connection.waitUntilNextTurn() }
            for _ in 0..<2 {
                await time.sleepers(atLeast: 1)
                time.advance(by: AgrirouterConnection.probeInterval)
            }
            await time.sleepers(atLeast: 1)
            #expect(await connection.backingOff() == 54, "a failed probe ended the backoff")
            try await simulator.resumeGateway()
            time.advance(by: AgrirouterConnection.probeInterval)
            let waited = await waiting.value
            #expect(waited == 9, "waited \(waited) s of a 60 s backoff: ended by the third probe")
            #expect(await connection.backingOff() == nil)
            #expect(
                await simulator.requestCount(endpoint: endpoint) == requests,
                "the probes made requests of agrirouter's API")
            try await connection.poll()
            #expect(await connection.consecutiveFailures == 0)
        }
    }

    @Test(
        "a server that takes the connection and never answers is not probed: its backoff runs its course (virtual time)"
    )
    func aHungServerKeepsItsBackoff() async throws {
        let time = ManualClock()
        let (simulator, connection) = try await AnswerRoutingTests.connected(
            as: "urn:agrigps:hung", timeout: 2, spacing: 0, backoff: Self.long, monotonic: time.clock)
        try await tearingDown({ await simulator.shutdown() }) {
            try await connection.poll()
            await simulator.stallGateway(for: 2.5)
            await #expect(throws: GatewayError.transport(.timedOut)) { try await connection.poll() }
            let waiting = Task { await connection.waitUntilNextTurn() }
            await time.sleepers(atLeast: 1)
            // A probe would wake the wait every 3 s; this one sleeps on to the backoff's end.
            var awake: [Double] = []
            for _ in 0..<19 {
                time.advance(by: AgrirouterConnection.probeInterval)
                if time.sleeping == 0 {
                    awake.append(time.now())
                    break
                }
                await time.sleepers(atLeast: 1)
            }
            try #require(awake.isEmpty, "woken at \(awake)")
            let left = await connection.backingOff()
            #expect(left == 3, "\(String(describing: left))")
            time.advance(by: 3)
            #expect(await waiting.value == 60)
        }
    }
}
