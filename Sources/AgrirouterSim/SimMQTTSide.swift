import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// The simulator's MQTT side: a real broker as a child, and the simulator joined to it as the one
/// privileged client. It reads every endpoint's measures topic, validates what it reads exactly as
/// a REST measures request, and publishes each answer and push to the endpoint's commands topic.
final class SimMQTTSide: Sendable {
    let broker: SimBroker
    private let host: String
    private let tls: NIOSSLContext
    private let group: any EventLoopGroup
    private let state: SimState
    private let client = JoinedClient()
    private let events: AsyncStream<Event>.Continuation
    private let worker: Task<Void, Never>
    /// Clients the simulator holds open with an endpoint's client id, to take it over.
    private let intruders = Mutex<[SimMQTTClient]>([])

    enum Event: Sendable {
        case measures(deviceID: String, body: Data)
        case outboxChanged(deviceID: String)
        case reconnected
    }

    private init(broker: SimBroker, host: String, tls: NIOSSLContext, group: any EventLoopGroup, state: SimState) {
        self.broker = broker
        self.host = host
        self.tls = tls
        self.group = group
        self.state = state
        let (stream, events) = AsyncStream<Event>.makeStream()
        self.events = events
        // One worker, so that measures are validated in the order the broker delivered them.
        let client = self.client
        worker = Task {
            for await event in stream {
                switch event {
                case .measures(let deviceID, let body):
                    let stall = await state.stallRemaining()
                    if stall > 0 { try? await Task.sleep(for: .seconds(stall)) }
                    await state.mqttMeasures(deviceID: deviceID, body: body)
                case .outboxChanged(let deviceID):
                    await Self.flush(deviceID, state: state, client: client, events: events)
                case .reconnected:
                    for deviceID in await state.mqttEndpointIDs() {
                        await Self.flush(deviceID, state: state, client: client, events: events)
                    }
                }
            }
        }
    }

    static func start(
        host: String, authority: CertificateAuthority, serverCertificatePEM: String, serverKeyPEM: String,
        state: SimState, group: any EventLoopGroup, advertisedHost: String
    ) async throws -> SimMQTTSide {
        let broker = try SimBroker(
            host: host, authority: authority, serverCertificatePEM: serverCertificatePEM, serverKeyPEM: serverKeyPEM)
        do {
            try await broker.start()
            let (certificate, key) = try authority.issueClientCertificate(endpointID: SimBroker.simulatorUser)
            var configuration = TLSConfiguration.makeClientConfiguration()
            configuration.trustRoots = .certificates([
                try NIOSSLCertificate(bytes: Array(authority.certificatePEM.utf8), format: .pem)
            ])
            configuration.certificateChain = [
                .certificate(
                    try NIOSSLCertificate(bytes: Array(certificate.serializeAsPEM().pemString.utf8), format: .pem))
            ]
            configuration.privateKey = .privateKey(
                try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem))
            configuration.certificateVerification = .noHostnameVerification
            let side = SimMQTTSide(
                broker: broker, host: host, tls: try NIOSSLContext(configuration: configuration), group: group,
                state: state)
            let events = side.events
            await state.setBroker(host: advertisedHost, port: broker.port) {
                events.yield(.outboxChanged(deviceID: $0))
            }
            try await side.join()
            return side
        } catch {
            await broker.remove()
            throw error
        }
    }

    /// Connects the privileged client and reads every measures topic.
    private func join() async throws {
        let events = self.events
        let joined = try await SimMQTTClient.connect(
            host: host, port: broker.port, tls: tls, clientID: SimBroker.simulatorUser, group: group
        ) { topic, payload in
            guard topic.hasPrefix("measures/") else { return }
            events.yield(.measures(deviceID: String(topic.dropFirst("measures/".count)), body: payload))
        }
        try await joined.subscribe("measures/#")
        client.current = joined
        events.yield(.reconnected)
    }

    /// Publishes what waits in an endpoint's outbox. While the simulator's own client is away (the
    /// broker restarting), it stays in the outbox for the next flush.
    private static func flush(
        _ deviceID: String, state: SimState, client: JoinedClient, events: AsyncStream<Event>.Continuation
    ) async {
        guard let joined = client.current, joined.isActive else { return }
        let held = await state.answersHeld(deviceID: deviceID)
        if held > 0 {
            Task {
                try? await Task.sleep(for: .seconds(held))
                events.yield(.outboxChanged(deviceID: deviceID))
            }
            return
        }
        for item in await state.takeOutbox(deviceID: deviceID) {
            joined.publish(topic: "commands/\(deviceID)", payload: item)
        }
    }

    /// Publishes `items` to an endpoint's commands topic at once, as fast as the connection takes them.
    func publish(_ items: [Data], to deviceID: String) -> Int {
        guard let joined = client.current, joined.isActive else { return 0 }
        for item in items { joined.publish(topic: "commands/\(deviceID)", payload: item) }
        return items.count
    }

    /// Stops the broker (every client's connection drops) and starts it again on the same port after
    /// `seconds`; the simulator joins again.
    func restartBroker(after seconds: Double = 0) async throws {
        let old = client.current
        client.current = nil
        await broker.stop()
        await old?.close()
        if seconds > 0 { try await Task.sleep(for: .seconds(seconds)) }
        try await broker.start()
        try await join()
    }

    /// Connects with `clientID` (an endpoint's), which makes the broker close that endpoint's own
    /// connection; each time the endpoint takes the id back, this takes it again, for `seconds`.
    func takeOver(clientID: String, for seconds: Double) async {
        let deadline = ProcessInfo.processInfo.systemUptime + seconds
        while ProcessInfo.processInfo.systemUptime < deadline {
            let current = intruders.withLock { $0.last }
            if current?.isActive != true,
                let intruder = try? await SimMQTTClient.connect(
                    host: host, port: broker.port, tls: tls, clientID: clientID, group: group, received: { _, _ in })
            {
                intruders.withLock { $0.append(intruder) }
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
        for intruder in intruders.withLock({ intruders in
            defer { intruders = [] }
            return intruders
        }) { await intruder.close() }
    }

    func shutdown() async {
        events.finish()
        worker.cancel()
        await client.current?.close()
        for intruder in intruders.withLock({ $0 }) { await intruder.close() }
        await broker.remove()
    }
}

/// The simulator's own client on the broker, replaced when the broker restarts.
final class JoinedClient: Sendable {
    private let value = Mutex<SimMQTTClient?>(nil)

    var current: SimMQTTClient? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
