import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// The few MQTT 3.1.1 packets the simulator's own client reads. It is written here from the
/// specification rather than taken from the daemon's libmosquitto, so that the two sides that meet
/// at the broker are independent implementations.
enum MQTTPacket: Equatable {
    case connectAcknowledged(returnCode: UInt8)
    case publish(topic: String, payload: Data, packetID: UInt16?)
    case publishAcknowledged(packetID: UInt16)
    case subscribeAcknowledged(packetID: UInt16, granted: [UInt8])
    case pingResponse
    case other(type: UInt8)
}

enum MQTTEncoding {
    static func remainingLength(_ length: Int, into buffer: inout ByteBuffer) {
        var value = length
        repeat {
            var byte = UInt8(value % 128)
            value /= 128
            if value > 0 { byte |= 0x80 }
            buffer.writeInteger(byte)
        } while value > 0
    }

    static func string(_ text: String, into buffer: inout ByteBuffer) {
        let bytes = Array(text.utf8.prefix(65_535))
        buffer.writeInteger(UInt16(bytes.count))
        buffer.writeBytes(bytes)
    }

    static func packet(
        _ type: UInt8, flags: UInt8 = 0, allocator: ByteBufferAllocator, body: (inout ByteBuffer) -> Void
    ) -> ByteBuffer {
        var content = allocator.buffer(capacity: 64)
        body(&content)
        var packet = allocator.buffer(capacity: content.readableBytes + 5)
        packet.writeInteger(type << 4 | flags)
        remainingLength(content.readableBytes, into: &packet)
        packet.writeBuffer(&content)
        return packet
    }

    static func connect(clientID: String, keepalive: UInt16, allocator: ByteBufferAllocator) -> ByteBuffer {
        packet(1, allocator: allocator) { body in
            string("MQTT", into: &body)
            body.writeInteger(UInt8(4))  // 3.1.1
            body.writeInteger(UInt8(0x02))  // clean session; the user name is the certificate's
            body.writeInteger(keepalive)
            string(clientID, into: &body)
        }
    }

    static func subscribe(_ filter: String, packetID: UInt16, allocator: ByteBufferAllocator) -> ByteBuffer {
        packet(8, flags: 0x02, allocator: allocator) { body in
            body.writeInteger(packetID)
            string(filter, into: &body)
            body.writeInteger(UInt8(1))
        }
    }

    static func publish(topic: String, payload: Data, packetID: UInt16, allocator: ByteBufferAllocator) -> ByteBuffer {
        packet(3, flags: 0x02, allocator: allocator) { body in  // QoS 1
            string(topic, into: &body)
            body.writeInteger(packetID)
            body.writeBytes(payload)
        }
    }

    static func acknowledge(_ packetID: UInt16, allocator: ByteBufferAllocator) -> ByteBuffer {
        packet(4, allocator: allocator) { $0.writeInteger(packetID) }
    }
}

/// Splits the byte stream into packets: a type byte, a remaining length of 1 to 4 bytes, the rest.
struct MQTTPacketDecoder: ByteToMessageDecoder {
    typealias InboundOut = MQTTPacket
    /// The broker sends nothing larger than what the simulator's endpoints publish.
    static let largestPacket = 32 * 1_048_576

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        var peek = buffer
        guard let first: UInt8 = peek.readInteger() else { return .needMoreData }
        var length = 0
        var multiplier = 1
        for index in 0..<4 {
            guard let byte: UInt8 = peek.readInteger() else { return .needMoreData }
            length += Int(byte & 0x7f) * multiplier
            multiplier *= 128
            if byte & 0x80 == 0 { break }
            if index == 3 { throw SimMQTTError.malformedPacket }
        }
        guard length <= Self.largestPacket else { throw SimMQTTError.malformedPacket }
        guard var body = peek.readSlice(length: length) else { return .needMoreData }
        buffer.moveReaderIndex(to: peek.readerIndex)
        context.fireChannelRead(wrapInboundOut(try Self.packet(first, &body)))
        return .continue
    }

    static func packet(_ first: UInt8, _ body: inout ByteBuffer) throws -> MQTTPacket {
        switch first >> 4 {
        case 2:
            guard body.readableBytes >= 2, let code: UInt8 = body.getInteger(at: body.readerIndex + 1) else {
                throw SimMQTTError.malformedPacket
            }
            return .connectAcknowledged(returnCode: code)
        case 3:
            let qos = (first >> 1) & 0x03
            guard let length: UInt16 = body.readInteger(), let topic = body.readString(length: Int(length)) else {
                throw SimMQTTError.malformedPacket
            }
            var packetID: UInt16?
            if qos > 0 {
                guard let id: UInt16 = body.readInteger() else { throw SimMQTTError.malformedPacket }
                packetID = id
            }
            return .publish(topic: topic, payload: Data(body.readableBytesView), packetID: packetID)
        case 4:
            guard let id: UInt16 = body.readInteger() else { throw SimMQTTError.malformedPacket }
            return .publishAcknowledged(packetID: id)
        case 9:
            guard let id: UInt16 = body.readInteger() else { throw SimMQTTError.malformedPacket }
            return .subscribeAcknowledged(packetID: id, granted: Array(body.readableBytesView))
        case 13:
            return .pingResponse
        default:
            return .other(type: first >> 4)
        }
    }
}

public enum SimMQTTError: Error, CustomStringConvertible {
    case malformedPacket
    case refused(returnCode: UInt8)
    case closed
    case timedOut(String)

    public var description: String {
        switch self {
        case .malformedPacket: return "the broker sent a malformed MQTT packet"
        case .refused(let code): return "the broker refused the connection (CONNACK \(code))"
        case .closed: return "the connection to the broker closed"
        case .timedOut(let what): return "the broker did not answer \(what) in time"
        }
    }
}

/// A minimal MQTT 3.1.1 client over TLS: connect, subscribe, publish with QoS 1, acknowledge QoS 1
/// publishes, ping. Enough for the simulator to act as agrirouter's side of the broker, and for a test
/// endpoint that must not share the daemon's libmosquitto to act as another machine.
public final class SimMQTTClient: Sendable {
    private let channel: any Channel
    private let nextPacketID = Atomic<UInt16>(1)
    private let handler: Handler

    static let keepalive: UInt16 = 60

    final class Handler: ChannelInboundHandler, Sendable {
        typealias InboundIn = MQTTPacket
        let received: @Sendable (String, Data) -> Void
        let waiting = Mutex<[String: CheckedContinuation<MQTTPacket, any Error>]>([:])

        init(received: @escaping @Sendable (String, Data) -> Void) { self.received = received }

        func expect(_ key: String, _ continuation: CheckedContinuation<MQTTPacket, any Error>) {
            waiting.withLock { $0[key] = continuation }
        }

        func resume(_ key: String, with result: Result<MQTTPacket, any Error>) {
            waiting.withLock { $0.removeValue(forKey: key) }?.resume(with: result)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let packet = unwrapInboundIn(data)
            switch packet {
            case .connectAcknowledged: resume("connack", with: .success(packet))
            case .subscribeAcknowledged(let id, _): resume("suback \(id)", with: .success(packet))
            case .publish(let topic, let payload, let id):
                if let id {
                    context.writeAndFlush(
                        NIOAny(MQTTEncoding.acknowledge(id, allocator: context.channel.allocator)), promise: nil)
                }
                received(topic, payload)
            default: break
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            let all = waiting.withLock { waiting in
                defer { waiting = [:] }
                return Array(waiting.values)
            }
            for continuation in all { continuation.resume(throwing: SimMQTTError.closed) }
            context.fireChannelInactive()
        }
    }

    private init(channel: any Channel, handler: Handler) {
        self.channel = channel
        self.handler = handler
    }

    /// Connects as `clientID` with the certificate in `tls` and waits for the broker's CONNACK.
    public static func connect(
        host: String, port: Int, tls: NIOSSLContext, clientID: String, group: any EventLoopGroup,
        received: @escaping @Sendable (String, Data) -> Void
    ) async throws -> SimMQTTClient {
        let handler = Handler(received: received)
        let channel = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: tls, serverHostname: nil))
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(MQTTPacketDecoder()))
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(host: host, port: port).get()
        let client = SimMQTTClient(channel: channel, handler: handler)
        let answer = try await client.exchange(
            "connack", MQTTEncoding.connect(clientID: clientID, keepalive: keepalive, allocator: channel.allocator))
        guard case .connectAcknowledged(0) = answer else {
            try? await channel.close()
            if case .connectAcknowledged(let code) = answer { throw SimMQTTError.refused(returnCode: code) }
            throw SimMQTTError.malformedPacket
        }
        client.pingEvery(Double(keepalive) / 2)
        return client
    }

    /// Sends `packet` and waits up to 10 s for the answer filed under `key`.
    private func exchange(_ key: String, _ packet: ByteBuffer) async throws -> MQTTPacket {
        let handler = self.handler
        let channel = self.channel
        return try await withCheckedThrowingContinuation { continuation in
            handler.expect(key, continuation)
            channel.writeAndFlush(packet).whenFailure { handler.resume(key, with: .failure($0)) }
            channel.eventLoop.scheduleTask(in: .seconds(10)) {
                handler.resume(key, with: .failure(SimMQTTError.timedOut(key)))
            }
        }
    }

    private func pingEvery(_ seconds: Double) {
        let channel = self.channel
        channel.eventLoop.scheduleRepeatedTask(
            initialDelay: .milliseconds(Int64(seconds * 1000)), delay: .milliseconds(Int64(seconds * 1000))
        ) { task in
            guard channel.isActive else {
                task.cancel()
                return
            }
            var ping = channel.allocator.buffer(capacity: 2)
            ping.writeBytes([0xC0, 0x00])
            channel.writeAndFlush(ping, promise: nil)
        }
    }

    private func packetID() -> UInt16 {
        // 0 is not a packet id: skip it when the counter wraps.
        var id = nextPacketID.wrappingAdd(1, ordering: .relaxed).oldValue
        if id == 0 { id = nextPacketID.wrappingAdd(1, ordering: .relaxed).oldValue }
        return id
    }

    /// Subscribes with QoS 1 and waits for the SUBACK; throws if the broker refused it (0x80).
    public func subscribe(_ filter: String) async throws {
        let id = packetID()
        let answer = try await exchange(
            "suback \(id)", MQTTEncoding.subscribe(filter, packetID: id, allocator: channel.allocator))
        guard case .subscribeAcknowledged(_, let granted) = answer, granted.first.map({ $0 < 0x80 }) == true else {
            throw SimMQTTError.refused(returnCode: 0x80)
        }
    }

    /// Publishes with QoS 1; the broker's PUBACK is not waited for.
    public func publish(topic: String, payload: Data) {
        channel.writeAndFlush(
            MQTTEncoding.publish(topic: topic, payload: payload, packetID: packetID(), allocator: channel.allocator),
            promise: nil)
    }

    public var isActive: Bool { channel.isActive }

    public func close() async {
        var disconnect = channel.allocator.buffer(capacity: 2)
        disconnect.writeBytes([0xE0, 0x00])
        try? await channel.writeAndFlush(disconnect)
        try? await channel.close()
    }
}
