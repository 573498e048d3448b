import AgrirouterWire
import Clocks
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import SwiftProtobuf
import Synchronization
import X509

/// A local agrirouter speaking the real REST interface: onboarding on one port (server TLS), measures
/// and commands on another, which demands a client certificate from its own CA.
public final class AgrirouterSimulator: Sendable {
    private let isShutDown = Atomic<Bool>(false)
    /// POST here to onboard: `https://127.0.0.1:PORT/api/v1.0/registration/onboard`.
    public let onboardingURL: String
    /// The CA that signed the server's and every endpoint's certificate; clients trust it.
    public let caCertificatePEM: String
    private let state: SimState
    private let group: MultiThreadedEventLoopGroup
    private let channels: [any Channel]
    private let gatewayConnectionCount: ConnectionCount
    /// The gateway's listener and its open connections, which an outage closes and a recovery
    /// opens again on the same port.
    private let gateway: GatewayListener
    /// The broker and the simulator's client on it, when started with `mqtt`.
    private let mqtt: SimMQTTSide?

    /// Listens on `host`. Clients that reach it by another address (a virtual machine's guest reaches
    /// the host's loopback at 10.0.2.2) are given `advertisedHost` in the URLs it hands out, and its
    /// server certificate names that address too.
    public static func start(
        _ configuration: SimConfiguration, host: String = "127.0.0.1", advertisedHost: String? = nil,
        onboardingPort: Int = 0, gatewayPort: Int = 0
    ) async throws -> AgrirouterSimulator {
        let authority = try CertificateAuthority()
        let state = SimState(configuration: configuration, authority: authority)
        let advertised = advertisedHost ?? host
        let (serverCertificate, serverKey) = try authority.issueServerCertificate(alsoFor: advertised)
        let certificate = try NIOSSLCertificate(
            bytes: Array(serverCertificate.serializeAsPEM().pemString.utf8), format: .pem)
        let key = try NIOSSLPrivateKey(bytes: Array(serverKey.pemRepresentation.utf8), format: .pem)
        var onboardingTLS = TLSConfiguration.makeServerConfiguration(
            certificateChain: [.certificate(certificate)], privateKey: .privateKey(key))
        // Closing a connection waits this long for the client's close_notify. A client's idle
        // connection (libcurl keeps them for reuse) never sends one until it is used, so the default
        // 5 s made every stop, and every outage a test set up, take 5 s more.
        onboardingTLS.shutdownTimeout = .milliseconds(200)
        var gatewayTLS = onboardingTLS
        gatewayTLS.trustRoots = .certificates([
            try NIOSSLCertificate(bytes: Array(authority.certificatePEM.utf8), format: .pem)
        ])
        gatewayTLS.certificateVerification = .noHostnameVerification  // a client certificate is required

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let gatewayConnections = ConnectionCount()
        do {
            let onboarding = try await bind(
                host: host, port: onboardingPort, tls: try NIOSSLContext(configuration: onboardingTLS),
                role: .onboarding, state: state, group: group)
            let open = GatewayListener.Connections()
            let gatewayContext = try NIOSSLContext(configuration: gatewayTLS)
            let gateway = try await bind(
                host: host, port: gatewayPort, tls: gatewayContext,
                role: .gateway, state: state, group: group, count: gatewayConnections, open: open)
            let port = gateway.localAddress?.port ?? 0
            await state.setGatewayBase("https://\(advertised):\(port)")
            let listener = GatewayListener(channel: gateway, connections: open) {
                try await bind(
                    host: host, port: port, tls: gatewayContext, role: .gateway, state: state, group: group,
                    count: gatewayConnections, open: open)
            }
            var mqtt: SimMQTTSide?
            if configuration.mqtt {
                do {
                    mqtt = try await SimMQTTSide.start(
                        host: host, authority: authority,
                        serverCertificatePEM: serverCertificate.serializeAsPEM().pemString,
                        serverKeyPEM: serverKey.pemRepresentation, state: state, group: group,
                        advertisedHost: advertised)
                } catch {
                    await listener.close()
                    try? await onboarding.close()
                    throw error
                }
            }
            return AgrirouterSimulator(
                onboardingURL:
                    "https://\(advertised):\(onboarding.localAddress?.port ?? 0)/api/v1.0/registration/onboard",
                caCertificatePEM: authority.certificatePEM, state: state, group: group, channels: [onboarding],
                gatewayConnectionCount: gatewayConnections, gateway: listener, mqtt: mqtt)
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    private init(
        onboardingURL: String, caCertificatePEM: String, state: SimState, group: MultiThreadedEventLoopGroup,
        channels: [any Channel],
        gatewayConnectionCount: ConnectionCount, gateway: GatewayListener, mqtt: SimMQTTSide?
    ) {
        self.mqtt = mqtt
        self.gatewayConnectionCount = gatewayConnectionCount
        self.gateway = gateway
        self.onboardingURL = onboardingURL
        self.caCertificatePEM = caCertificatePEM
        self.state = state
        self.group = group
        self.channels = channels
    }

    private static func bind(
        host: String, port: Int, tls: NIOSSLContext, role: SimHTTPHandler.Role,
        state: SimState, group: MultiThreadedEventLoopGroup, count: ConnectionCount? = nil,
        open: GatewayListener.Connections? = nil
    ) async throws -> any Channel {
        try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 64)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                count?.value.add(1, ordering: .relaxed)
                open?.add(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(SimHTTPHandler(state: state, role: role))
                }
            }
            .bind(host: host, port: port).get()
    }

    public func shutdown() async {
        // Once: a second shutdown of the event loop group would wait for ever (a test that stops the
        // simulator mid-way is torn down with another).
        guard !isShutDown.exchange(true, ordering: .relaxed) else { return }
        await mqtt?.shutdown()
        await gateway.close()
        for channel in channels { try? await channel.close() }
        try? await group.shutdownGracefully()
    }

    // MARK: - Faults and inspection, for tests

    public func inject(_ fault: SimFault) async { await state.inject(fault) }

    /// An outage of the hung kind: for `seconds`, every measures and commands request hangs
    /// unprocessed, and its connection is closed unanswered when the time is up.
    public func stallGateway(for seconds: Double) async { await state.stall(for: seconds) }

    /// An outage of the refusing kind: the measures and commands port closes, with every connection
    /// to it, so that connecting is refused until `resumeGateway`.
    public func suspendGateway() async { await gateway.close() }

    /// Listens on the same port again after `suspendGateway`.
    public func resumeGateway() async throws { try await gateway.reopen() }

    /// The MQTT broker's port, when started with `mqtt`.
    public var brokerPort: Int? { mqtt?.broker.port }

    /// Floods an MQTT endpoint's commands topic with `count` pushes of `size` bytes of content each
    /// (see `SimState.floodItems`); returns how many were published.
    public func floodCommands(endpoint deviceID: String, count: Int, size: Int) async -> Int {
        guard let mqtt else { return 0 }
        return mqtt.publish(await state.floodItems(for: deviceID, count: count, size: size), to: deviceID)
    }

    /// The broker's log (connections, denied publishes), when started with `mqtt`.
    public var brokerLogPath: String? { mqtt?.broker.logPath }

    /// Drops every MQTT connection: the broker stops, and starts again on the same port after `seconds`.
    public func restartBroker(after seconds: Double = 0) async throws {
        guard let mqtt else { throw SimBrokerError.cannotStart("the simulator runs without MQTT") }
        try await mqtt.restartBroker(after: seconds)
    }

    /// Another client with an endpoint's client id, for `seconds`: the broker closes the endpoint's
    /// connection each time the other connects.
    public func takeOverClientID(_ clientID: String, for seconds: Double) async {
        await mqtt?.takeOver(clientID: clientID, for: seconds)
    }
    /// TCP connections accepted on the measures and commands port: each one a TLS handshake.
    public var gatewayConnections: Int { gatewayConnectionCount.value.load(ordering: .relaxed) }
    public func clearFaults() async { await state.clearFaults() }
    /// Faults injected and not yet met by a request.
    public func pendingFaults() async -> Int { await state.pendingFaults() }
    /// Everything an endpoint has sent, decoded, in order.
    public func sentMessages(endpoint: String) async -> [DecodedRequest] {
        await state.sentMessages(endpoint: endpoint)
    }
    /// When each of `sentMessages` arrived (and was answered: the simulator acknowledges on arrival).
    public func arrivals(endpoint: String) async -> [Date] { await state.arrivals(endpoint: endpoint) }
    /// When each measures or commands request arrived, in monotonic seconds.
    public func gatewayRequestArrivals() async -> [Double] { await state.gatewayRequestArrivals() }

    /// Requests that came for one endpoint: REST's POSTs and GETs, or MQTT's publishes.
    public func requestCount(endpoint: String) async -> Int { await state.requestCount(endpoint: endpoint) }
    /// Messages answered ACK_WITH_FAILURE for a timestamp ahead of this machine's clock.
    public func refusedForFutureTimestamps() async -> Int { await state.refusedForFutureTimestamps() }
    public func subscriptions(endpoint: String) async -> Set<String> { await state.subscriptions(endpoint: endpoint) }
    /// The messages waiting in an endpoint's feed, unconfirmed.
    public func feed(endpoint: String) async -> [Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage] {
        await state.feed(endpoint: endpoint)
    }
    /// Every message id an endpoint confirmed, with when the confirm arrived.
    public func confirmations(endpoint: String) async -> [(messageID: String, at: Date)] {
        await state.confirmations(endpoint: endpoint)
    }
    /// The ids of the endpoints with this name.
    public func endpointIDs(named name: String) async -> [String] { await state.endpointIDs(named: name) }

    // MARK: - What a user does in agrirouter's UI, or a peer nobody runs

    @discardableResult
    public func rename(endpoint: String, to name: String) async -> Bool {
        await state.rename(endpoint: endpoint, to: name)
    }
    @discardableResult
    public func delete(endpoint: String) async -> Bool { await state.delete(endpoint: endpoint) }

    /// Puts `content` into `receiver`'s feed as a gps:info from `sender` (pushed too if `push`), as if
    /// the sender had published it at `sentAt`; the content is not checked, so a test can send
    /// something unreadable. Returns the feed message id.
    @discardableResult
    public func deliver(
        _ content: Data, from sender: String, to receiver: String, sentAt: Date = Date(), push: Bool = true
    ) async -> String {
        await state.deliver(
            content, from: sender, to: receiver, sentAt: Google_Protobuf_Timestamp(date: sentAt), push: push)
    }

    /// The same with a header time given as it goes on the wire, any value at all: for testing what
    /// a receiver does with a timestamp no real agrirouter would send.
    public func deliver(
        _ content: Data, from sender: String, to receiver: String, sentSeconds: Int64, sentNanos: Int32 = 0
    ) async -> String {
        var timestamp = Google_Protobuf_Timestamp()
        (timestamp.seconds, timestamp.nanos) = (sentSeconds, sentNanos)
        return await state.deliver(content, from: sender, to: receiver, sentAt: timestamp, push: true)
    }
}

/// Collects one HTTP request and hands it to the simulator's state.
final class SimHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    enum Role: Sendable { case onboarding, gateway }

    private static let maximumBody = 8 * 1024 * 1024
    private let state: SimState
    private let role: Role
    private var head: HTTPRequestHead?
    private var body = ByteBuffer()

    init(state: SimState, role: Role) {
        self.state = state
        self.role = role
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let requestHead):
            head = requestHead
            body.clear()
        case .body(var chunk):
            guard body.readableBytes + chunk.readableBytes <= Self.maximumBody else {
                respond(
                    context: context,
                    SimResponse(status: 413, body: Data("Request too large".utf8), contentType: "text/plain"),
                    keepAlive: false)
                return
            }
            body.writeBuffer(&chunk)
        case .end:
            guard let head else { return }
            self.head = nil
            let request = Data(body.readableBytesView)
            let certificate = peerCertificate(context: context)
            let (state, role) = (self.state, self.role)
            let authorization = head.headers.first(name: "Authorization")
            let promise = context.eventLoop.makePromise(of: SimResponse.self)
            promise.completeWithTask {
                await Self.route(
                    method: head.method, path: head.uri, authorization: authorization, body: request,
                    certificate: certificate, role: role, state: state)
            }
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            let keepAlive = head.isKeepAlive
            promise.futureResult.whenSuccess { response in
                let (handler, context) = bound.value
                if response.delay > 0 {
                    context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(response.delay * 1000))) {
                        handler.respond(context: context, response, keepAlive: keepAlive)
                    }
                } else {
                    handler.respond(context: context, response, keepAlive: keepAlive)
                }
            }
        }
    }

    private func respond(context: ChannelHandlerContext, _ response: SimResponse, keepAlive: Bool) {
        guard !response.drop else {
            context.close(promise: nil)
            return
        }
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: response.contentType)
        headers.add(name: "Content-Length", value: String(response.filler > 0 ? response.filler : response.body.count))
        // as every real server sends; clients read agrirouter's time from it
        headers.add(name: "Date", value: HTTPDate.format(Int(Date().timeIntervalSince1970)))
        if !keepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(
                .head(HTTPResponseHead(version: .http1_1, status: .init(statusCode: response.status), headers: headers))
            ), promise: nil)
        if response.filler > 0 {
            writeFiller(context: context, at: 0, of: response.filler)
            return
        }
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: response.body)))), promise: nil)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            done.whenComplete { _ in bound.value.close(promise: nil) }
        }
    }

    /// The filler body from byte `offset` on, a chunk per write once the one before has gone out;
    /// the connection is closed at the end or when a write fails (the client hung up).
    private func writeFiller(context: ChannelHandlerContext, at offset: Int, of total: Int) {
        let count = min(Self.fillerChunk, total - offset)
        var chunk = ByteBuffer(repeating: UInt8(ascii: " "), count: count)
        if offset == 0 { chunk.setInteger(UInt8(ascii: "["), at: 0) }
        if offset + count == total { chunk.setInteger(UInt8(ascii: "]"), at: count - 1) }
        let written = context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(chunk))))
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        written.whenComplete { result in
            let (handler, context) = bound.value
            switch result {
            case .success where offset + count < total:
                handler.writeFiller(context: context, at: offset + count, of: total)
            case .success:
                context.writeAndFlush(handler.wrapOutboundOut(.end(nil))).whenComplete { _ in
                    bound.value.1.close(promise: nil)
                }
            case .failure: context.close(promise: nil)
            }
        }
    }

    private static let fillerChunk = 1 << 20

    private func peerCertificate(context: ChannelHandlerContext) -> Certificate? {
        guard let handler = try? context.pipeline.syncOperations.handler(type: NIOSSLServerHandler.self),
            let certificate = handler.peerCertificate, let der = try? certificate.toDERBytes()
        else { return nil }
        return try? Certificate(derEncoded: der)
    }

    private static func route(
        method: HTTPMethod, path: String, authorization: String?, body: Data,
        certificate: Certificate?, role: Role, state: SimState
    ) async -> SimResponse {
        let parts = path.split(separator: "?").first.map { $0.split(separator: "/").map(String.init) } ?? []
        switch (role, method, parts) {
        case (.onboarding, .POST, ["api", "v1.0", "registration", "onboard"]):
            return await state.onboard(authorization: authorization, body: body)
        case (.gateway, .POST, let parts)
        where parts.count == 5 && parts.prefix(4) == ["iot", "gateway", "rest", "measures"]:
            return await state.measures(deviceID: parts[4], certificate: certificate, body: body)
        case (.gateway, .GET, let parts)
        where parts.count == 5 && parts.prefix(4) == ["iot", "gateway", "rest", "commands"]:
            return await state.commands(deviceID: parts[4], certificate: certificate)
        default:
            return .json(404, ["error": "no such resource"])
        }
    }
}

/// The gateway's listening channel, and the connections it accepted, so an outage can close both.
final class GatewayListener: Sendable {
    final class Connections: Sendable {
        private let open = Mutex<[ObjectIdentifier: any Channel]>([:])

        func add(_ channel: any Channel) {
            let key = ObjectIdentifier(channel)
            open.withLock { $0[key] = channel }
            channel.closeFuture.whenComplete { [self] _ in _ = open.withLock { $0.removeValue(forKey: key) } }
        }

        func closeAll() async {
            for channel in open.withLock({ Array($0.values) }) { try? await channel.close() }
        }
    }

    private let channel: Mutex<(any Channel)?>
    private let connections: Connections
    private let bind: @Sendable () async throws -> any Channel

    init(channel: any Channel, connections: Connections, bind: @escaping @Sendable () async throws -> any Channel) {
        self.channel = Mutex(channel)
        self.connections = connections
        self.bind = bind
    }

    func close() async {
        if let listening = channel.withLock({ current in
            defer { current = nil }
            return current
        }) {
            try? await listening.close()
        }
        await connections.closeAll()
    }

    func reopen() async throws {
        guard channel.withLock({ $0 == nil }) else { return }
        let listening = try await bind()
        channel.withLock { $0 = listening }
    }
}

final class ConnectionCount: Sendable {
    let value = Atomic<Int>(0)
}
