import AgrirouterSim
import AgrirouterWire
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
        "a refused port: the backoff ends within seconds of agrirouter's return, found by a handshake, not by a request"
    )
    func theWayBackEndsTheBackoff() async throws {
        let (simulator, connection) = try await AnswerRoutingTests.connected(
            as: "urn:agrigps:way-back", backoff: Self.long)
        try await tearingDown({ await simulator.shutdown() }) {
            let endpoint = connection.endpoint.deviceAlternateId
            try await connection.poll()
            await simulator.suspendGateway()
            await #expect(throws: GatewayError.self) { try await connection.poll() }
            #expect(await connection.consecutiveFailures == 1)
            #expect(await connection.backingOff().map { $0 > 50 } == true, "backing off for a minute")
            let requests = await simulator.requestCount(endpoint: endpoint)

            // Still refused: the probes fail and the backoff stands.
            let waiting = Task { await connection.waitUntilNextTurn() }
            try await Task.sleep(for: .seconds(7))
            #expect(await connection.backingOff().map { $0 > 40 } == true, "a failed probe ended the backoff")
            try await simulator.resumeGateway()
            let waited = await waiting.value
            print(
                "backoff of 60 s after a refused port ended \(String(format: "%.1f", waited - 7)) s after the port reopened"
            )
            #expect(waited < 20, "waited \(waited) s of a 60 s backoff")
            #expect(await connection.backingOff() == nil)
            #expect(
                await simulator.requestCount(endpoint: endpoint) == requests,
                "the probes made requests of agrirouter's API")
            try await connection.poll()
            #expect(await connection.consecutiveFailures == 0)
        }
    }

    @Test("a server that takes the connection and never answers is not probed: its backoff runs its course")
    func aHungServerKeepsItsBackoff() async throws {
        let (simulator, connection) = try await AnswerRoutingTests.connected(
            as: "urn:agrigps:hung", timeout: 2, backoff: Self.long)
        try await tearingDown({ await simulator.shutdown() }) {
            try await connection.poll()
            await simulator.stallGateway(for: 4)
            await #expect(throws: GatewayError.transport(.timedOut)) { try await connection.poll() }
            let waiting = Task { await connection.waitUntilNextTurn() }
            defer { waiting.cancel() }
            // The stall is over by now and a handshake would get through, but none is tried.
            try await Task.sleep(for: .seconds(8))
            #expect(await connection.backingOff().map { $0 > 40 } == true, "the backoff after a timeout ended early")
        }
    }
}
