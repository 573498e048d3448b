import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Keeps the cab view reachable when something holds connections open without asking for anything.
///
/// Each connection costs a file descriptor; with the process's limit reached, the listener can accept
/// nothing and the driver's page hangs. The idle timeout closes a silent connection after a while, but
/// a thousand of them opened at once would still lock the page out until then. So the server keeps at
/// most `capacity` connections: a new one beyond it closes the connection that has been idle the
/// longest (no request in progress), and if every connection is busy (event streams), the new one is
/// closed instead. What was shed is logged, at most once every `logInterval` seconds.
final class ConnectionTable: Sendable {
    struct Entry {
        var channel: any Channel
        var busy: Bool
        var idleSince: NIODeadline
    }

    struct State {
        var entries: [ObjectIdentifier: Entry] = [:]
        var shedSinceLog = 0
        var lastLog: NIODeadline?
    }

    let capacity: Int
    let logInterval: TimeAmount
    let logger: Logger
    private let state = NIOLockedValueBox(State())

    init(capacity: Int, logInterval: TimeAmount = .seconds(60), logger: Logger) {
        self.capacity = max(1, capacity)
        self.logInterval = logInterval
        self.logger = logger
    }

    /// Registers a new connection; closes one to stay within the capacity.
    func opened(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        let now = NIODeadline.now()
        let (victim, report) = state.withLockedValue { state -> ((any Channel)?, Int?) in
            var victim: (any Channel)?
            if state.entries.count >= capacity {
                let oldest = state.entries.filter { !$0.value.busy }.min { $0.value.idleSince < $1.value.idleSince }
                if let oldest {
                    victim = oldest.value.channel
                    state.entries[oldest.key] = nil
                } else {
                    victim = channel  // every connection is answering a request: the newcomer waits its turn elsewhere
                }
            }
            if victim !== channel {
                state.entries[id] = Entry(channel: channel, busy: false, idleSince: now)
            }
            guard victim != nil else { return (nil, nil) }
            state.shedSinceLog += 1
            if let last = state.lastLog, now - last < logInterval { return (victim, nil) }
            defer { state.shedSinceLog = 0; state.lastLog = now }
            return (victim, state.shedSinceLog)
        }
        if let report {
            logger.warning("too many connections to the cab view: closed idle ones to keep the page reachable",
                           metadata: ["shed": "\(report)", "limit": "\(capacity)"])
        }
        victim?.close(promise: nil)
    }

    func closed(_ channel: any Channel) {
        _ = state.withLockedValue { $0.entries.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func mark(_ channel: any Channel, busy: Bool) {
        state.withLockedValue { state in
            let id = ObjectIdentifier(channel)
            guard state.entries[id] != nil else { return }
            state.entries[id]?.busy = busy
            if !busy { state.entries[id]?.idleSince = .now() }
        }
    }
}

/// One per connection, after the HTTP decoder: tells the table when a request starts and its answer ends.
final class ConnectionShedder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let table: ConnectionTable

    init(table: ConnectionTable) {
        self.table = table
    }

    func handlerAdded(context: ChannelHandlerContext) {
        table.opened(context.channel)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        table.closed(context.channel)
    }

    func channelInactive(context: ChannelHandlerContext) {
        table.closed(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { table.mark(context.channel, busy: true) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { table.mark(context.channel, busy: false) }
        context.write(data, promise: promise)
    }
}
