import AgrirouterSim
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// How the documented peer reaches agrirouter once onboarded: it hands over a measures body
/// (`integration/message-sending.adoc`) and takes what its outbox holds as command JSON objects
/// (`integration/message-receiving.adoc`). Neither side is agrigps's code: HTTPS is swift-nio's, and
/// MQTT is the local agrirouter's client written from the MQTT 3.1.1 specification, not libmosquitto.
protocol PeerTransport: Sendable {
    func send(_ body: Data) async throws
    /// Every outbox item that arrived since the last call, each the JSON object the docs give.
    func take() async throws -> [Data]
    func close() async
}

struct PeerError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// One HTTPS exchange per connection (`Connection: close`), so a reply ends where the stream ends.
struct PeerHTTPS: Sendable {
    let tls: NIOSSLContext
    let group: any EventLoopGroup

    struct Reply: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    func request(_ method: HTTPMethod, _ url: String, headers: [(String, String)], body: Data? = nil) async throws
        -> Reply
    {
        guard let parts = URLComponents(string: url), parts.scheme == "https", let host = parts.host else {
            throw PeerError("not an https URL: \(url)")
        }
        let port = parts.port ?? 443
        let collector = ReplyCollector(promise: group.next().makePromise())
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(10))
            .channelInitializer { [tls] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: tls, serverHostname: nil))
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(collector)
                }
            }
            .connect(host: host, port: port).get()
        var head = HTTPRequestHead(
            version: .http1_1, method: method, uri: parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath)
        head.headers.add(name: "Host", value: "\(host):\(port)")
        head.headers.add(name: "Connection", value: "close")
        head.headers.add(name: "Content-Length", value: "\(body?.count ?? 0)")
        for (name, value) in headers { head.headers.add(name: name, value: value) }
        channel.write(HTTPClientRequestPart.head(head), promise: nil)
        if let body { channel.write(HTTPClientRequestPart.body(.byteBuffer(ByteBuffer(bytes: body))), promise: nil) }
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil))
        channel.eventLoop.scheduleTask(in: .seconds(20)) { channel.close(promise: nil) }
        return try await collector.promise.futureResult.get()
    }

    /// Collects the reply; completes once, at its end or when the connection closes first.
    final class ReplyCollector: ChannelInboundHandler, Sendable {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<Reply>
        private let state = Mutex<(reply: Reply?, done: Bool)>((nil, false))

        init(promise: EventLoopPromise<Reply>) { self.promise = promise }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head):
                state.withLock { $0.reply = Reply(status: Int(head.status.code), headers: head.headers, body: Data()) }
            case .body(let buffer):
                state.withLock { $0.reply?.body.append(contentsOf: buffer.readableBytesView) }
            case .end:
                finish(
                    with: state.withLock { $0.reply }.map { .success($0) }
                        ?? .failure(PeerError("a reply without a head")))
                context.close(promise: nil)
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            finish(with: .failure(PeerError("the connection closed before the reply was complete")))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            finish(with: .failure(error))
            context.close(promise: nil)
        }

        private func finish(with result: Result<Reply, any Error>) {
            let first = state.withLock { state in
                defer { state.done = true }
                return !state.done
            }
            if first { promise.completeWith(result) }
        }
    }
}

/// REST (`gatewayId "3"`): POST the body to the measures URL, GET the commands URL for a JSON array.
struct RESTPeerTransport: PeerTransport {
    let https: PeerHTTPS
    let measures: String
    let commands: String

    func send(_ body: Data) async throws {
        // "Always include Accept: application/json" (integration/message-sending.adoc); the SDKs
        // written against agrirouter QA require exactly 200 with an empty body.
        let reply = try await https.request(
            .POST, measures, headers: [("Content-Type", "application/json"), ("Accept", "application/json")], body: body
        )
        guard reply.status == 200 else {
            throw PeerError(
                "the inbox answered \(reply.status), not 200: \(String(decoding: reply.body.prefix(200), as: UTF8.self))"
            )
        }
    }

    func take() async throws -> [Data] {
        let reply = try await https.request(.GET, commands, headers: [("Accept", "application/json")])
        guard reply.status == 200 else { throw PeerError("the outbox answered \(reply.status), not 200") }
        guard let items = try JSONSerialization.jsonObject(with: reply.body) as? [Any] else {
            throw PeerError("the outbox's answer is not a JSON array")
        }
        return try items.map { try JSONSerialization.data(withJSONObject: $0) }
    }

    func close() async {}
}

/// MQTT (`gatewayId "2"`): publish the body to the measures topic; every message on the commands
/// topic is one JSON object (MQTT.md §3).
final class MQTTPeerTransport: PeerTransport {
    private let client: SimMQTTClient
    private let measures: String
    private let inbox: Inbox

    private init(client: SimMQTTClient, measures: String, inbox: Inbox) {
        self.client = client
        self.measures = measures
        self.inbox = inbox
    }

    static func connect(
        host: String, port: Int, clientID: String, measures: String, commands: String, tls: NIOSSLContext,
        group: any EventLoopGroup
    ) async throws -> MQTTPeerTransport {
        let inbox = Inbox()
        let client = try await SimMQTTClient.connect(host: host, port: port, tls: tls, clientID: clientID, group: group)
        { topic, payload in
            if topic == commands { inbox.items.withLock { $0.append(payload) } }
        }
        try await client.subscribe(commands)
        return MQTTPeerTransport(client: client, measures: measures, inbox: inbox)
    }

    func send(_ body: Data) async throws {
        guard client.isActive else { throw PeerError("the MQTT connection is closed") }
        client.publish(topic: measures, payload: body)
    }

    func take() async throws -> [Data] {
        inbox.items.withLock { items in
            defer { items = [] }
            return items
        }
    }

    func close() async { await client.close() }
}

/// What arrived on the commands topic and is not taken yet.
final class Inbox: Sendable {
    let items = Mutex<[Data]>([])
}
