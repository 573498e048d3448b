import AgrirouterSim
import AgrirouterWire
import Clocks
import Foundation
import TestSupport
import Testing

@testable import AgrirouterLink

/// Outbox answers go to whoever sent the message, by its application message id; pushes to the feed
/// reader; an answer to a message nobody here sent to the publisher.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct AnswerRoutingTests {
    /// A local agrirouter and a REST connection of an endpoint onboarded to it.
    static func connected(
        as externalID: String, timeout: Double = 10, spacing: Double = 0.02,
        backoff: Backoff = Backoff(), monotonic: MonotonicClock = .system
    ) async throws -> (AgrirouterSimulator, AgrirouterConnection) {
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["TAN0000001": "Tractor"]))
        let endpoint = try await simulator.onboard(tan: "TAN0000001", externalID: externalID)
        return (
            simulator,
            try AgrirouterConnection(
                endpoint: endpoint, trustedCAPEM: simulator.caCertificatePEM, minimumSpacing: spacing,
                timeout: timeout, backoff: backoff, monotonic: monotonic)
        )
    }

    @Test func oneOutboxPollSortsEachAnswerForItsSender() async throws {
        let (simulator, connection) = try await Self.connected(as: "urn:agrigps:routing")
        try await tearingDown({ await simulator.shutdown() }) {
            var capabilities = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
            (capabilities.appCertificationID, capabilities.appCertificationVersionID) = ("app", "v")
            capabilities.enablePushNotifications = .enabled
            try await connection.send(TechnicalMessageType.capabilities, payload: capabilities, for: .setup)
            try await connection.poll()
            _ = await connection.answers(for: .setup)
            let ping = try await connection.send(TechnicalMessageType.ping, payload: nil, for: .check)
            var list = Agrirouter_Request_Payload_Account_ListEndpointsQuery()
            list.technicalMessageType = TechnicalMessageType.gpsInfo
            let listing = try await connection.send(TechnicalMessageType.listEndpoints, payload: list, for: .reader)
            let setupPing = try await connection.send(TechnicalMessageType.ping, payload: nil, for: .setup)
            await simulator.deliver(Data(), from: "someone", to: connection.endpoint.deviceAlternateId)
            // A batch a killed run sent: its answer is in the outbox, and nobody in this run sent it.
            let earlier = try AgrirouterConnection(
                endpoint: connection.endpoint, trustedCAPEM: simulator.caCertificatePEM, minimumSpacing: 0.02)
            let orphan = try await earlier.send(TechnicalMessageType.ping, payload: nil, for: .check)

            let undecodable = try await connection.poll()
            #expect(undecodable.isEmpty)
            let ids = { (recipient: AgrirouterConnection.Recipient) async in
                await connection.answers(for: recipient).map(\.applicationMessageID)
            }
            #expect(await ids(.check) == [ping.applicationMessageID])
            #expect(await ids(.setup) == [setupPing.applicationMessageID])
            #expect(await ids(.reader) == [listing.applicationMessageID, nil], "its answer, and the push")
            #expect(await ids(.publisher) == [orphan.applicationMessageID])
            // Taken once: the boxes are empty until the next poll brings more.
            for recipient in AgrirouterConnection.Recipient.allCases {
                #expect(await connection.answers(for: recipient).isEmpty)
            }
        }
    }

    @Test(
        "a task being cancelled (the daemon stopping) begins no outbox GET and no send, whose answers nothing would record"
    )
    func noRequestWhileStopping() async throws {
        let (simulator, connection) = try await Self.connected(as: "urn:agrigps:stopping")
        try await tearingDown({ await simulator.shutdown() }) {
            let endpoint = connection.endpoint
            try await connection.poll()
            let before = await simulator.requestCount(endpoint: endpoint.deviceAlternateId)
            let stopped = Task { () -> [GatewayError] in
                withUnsafeCurrentTask { $0?.cancel() }
                var errors: [GatewayError] = []
                do throws(GatewayError) { try await connection.poll() } catch { errors.append(error) }
                do throws(GatewayError) { try await connection.send(TechnicalMessageType.ping, payload: nil) } catch {
                    errors.append(error)
                }
                return errors
            }
            #expect(await stopped.value == [.transport(.stopping), .transport(.stopping)])
            #expect(
                await simulator.requestCount(endpoint: endpoint.deviceAlternateId) == before,
                "a request went out while stopping")
            #expect(await connection.consecutiveFailures == 0, "stopping is no failure of the link")
        }
    }

    @Test(
        "an endpoint id that cannot be read is an error, never replaced by a new one (which would onboard a second endpoint)"
    )
    func unreadableEndpointIDIsKept() throws {
        let temporary = TemporaryDirectory("id")
        let directory = temporary.path
        let store = CredentialStore(directory: directory)
        let made = try store.externalID()
        #expect(try store.externalID() == made, "read back as it was")
        unlink(directory + "/endpoint-id")
        #expect(mkfifo(directory + "/endpoint-id", 0o600) == 0)
        #expect(throws: OnboardingError.self) { try store.externalID() }
        var status = stat()
        #expect(lstat(directory + "/endpoint-id", &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "left as it was")
    }
}
