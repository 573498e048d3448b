import Clocks
import HTTPTypes
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// How long a connection may take to send its request, as plain numbers on a clock of the caller's,
/// so that a test can run it in virtual time.
///
/// A connection waits for a head from when it opens, or from when its last request was read and
/// answered; the head must then be whole within `headTimeout`, however it trickles in. A body gets
/// `bodyGrace` after its head and a second more for every `bodyRate` bytes that came: a fast upload of
/// hundreds of megabytes has all the time it needs, while a byte every few seconds runs out at about
/// `bodyGrace`, whatever length its head claimed. While an answer is made or sent (an event stream
/// stays open for hours) there is no deadline: then the client is waiting for us.
struct RequestDeadline: Sendable {
    struct Limits: Sendable, Equatable {
        var headTimeout: Double = 10
        var bodyGrace: Double = 10
        /// Bytes a second a body must come at, on average after the grace: 128 kbit/s.
        var bodyRate: Double = 16 * 1024

        /// Both timeouts as one setting, each kept to 0.1 s to an hour.
        init(readTimeout: Double = 10, bodyRate: Double = 16 * 1024) {
            let timeout = readTimeout.isFinite ? min(max(readTimeout, 0.1), 3600) : 10
            (headTimeout, bodyGrace, self.bodyRate) = (timeout, timeout, max(bodyRate, 1))
        }
    }

    enum Phase: Sendable, Equatable {
        /// Waiting for a request's head, since then.
        case waiting(since: Double)
        /// A body is being read: its head came at `since`, and `received` bytes of it so far.
        case reading(since: Double, received: Int)
        /// Every request read; an answer is being made or sent.
        case answering
    }

    let limits: Limits
    /// The request whose body is being read (HTTP/1.1 sends one request after another, so one at most).
    private var body: (since: Double, received: Int)?
    /// Requests read whose answer has not ended.
    private var unanswered = 0
    private var waitingSince: Double

    init(limits: Limits, openedAt time: Double) {
        self.limits = limits
        waitingSince = time
    }

    var phase: Phase {
        if let body { return .reading(since: body.since, received: body.received) }
        return unanswered > 0 ? .answering : .waiting(since: waitingSince)
    }

    /// When the connection has taken too long, or nil while it is being answered.
    var deadline: Double? {
        switch phase {
        case .waiting(let since): return since + limits.headTimeout
        case .reading(let since, let received): return since + limits.bodyGrace + Double(received) / limits.bodyRate
        case .answering: return nil
        }
    }

    func expired(at time: Double) -> Bool {
        deadline.map { time >= $0 } ?? false
    }

    mutating func headRead(at time: Double) {
        body = (time, 0)
        unanswered += 1
    }

    mutating func bodyRead(bytes: Int, at time: Double) {
        body?.received += bytes
    }

    mutating func endRead(at time: Double) {
        body = nil
        waitingSince = time
    }

    /// An answer ended; one may end before its request's body was read (a refusal), and the rest of
    /// the body is then still to come.
    mutating func answerEnded(at time: Double) {
        unanswered = max(0, unanswered - 1)
        waitingSince = time
    }
}

/// Keeps the cab view reachable when something holds connections open without asking for anything,
/// asks as slowly as it can, or holds event streams open by the hundred.
///
/// Each connection costs a file descriptor; with the process's limit reached, the listener can accept
/// nothing and the driver's page hangs. So the server keeps at most `capacity` connections, and a new
/// one beyond them closes, first, the connection that has waited longest for a request (an idle
/// one, or one whose head trickles in), else the one whose body comes slowest. A connection whose
/// request is read and being answered is never closed for a newcomer; at most `streamCapacity` of
/// those are event streams, which are open for as long as a page is, and a stream past that closes
/// the oldest stream of the client holding the most (the page reconnects by itself). And whatever is
/// too slow to send its request (`RequestDeadline`) is closed on its own. What was closed is logged,
/// at most once every `logInterval` seconds.
final class ConnectionTable: Sendable {
    struct Entry {
        var client: String
        var deadline: RequestDeadline
        /// When the answer began, if it is an event stream.
        var streamSince: Double?
        var close: @Sendable () -> Void
    }

    struct State {
        var entries: [Int: Entry] = [:]
        var nextID = 0
        var closed = Closed()
        var lastLog: Double?
    }

    /// What was closed since the last log line, by why.
    struct Closed: Equatable {
        var shed = 0
        var slow = 0
        var streams = 0
        var any: Bool { shed + slow + streams > 0 }
    }

    let capacity: Int
    let streamCapacity: Int
    let limits: RequestDeadline.Limits
    let logInterval: Double
    let logger: Logger
    /// Monotonic seconds: a system clock set while the box runs must not close or spare anything.
    let now: @Sendable () -> Double
    private let state = NIOLockedValueBox(State())

    init(
        capacity: Int, streamCapacity: Int? = nil, limits: RequestDeadline.Limits = .init(), logInterval: Double = 60,
        logger: Logger, now: @escaping @Sendable () -> Double = { uptime() }
    ) {
        self.capacity = max(1, capacity)
        self.streamCapacity = min(max(1, streamCapacity ?? capacity / 4), self.capacity)
        self.limits = limits
        self.logInterval = logInterval
        self.logger = logger
        self.now = now
    }

    /// Registers a new connection and gives its number; closes one to stay within the capacity,
    /// which may be the new one itself when every other is being answered.
    func opened(client: String, close: @escaping @Sendable () -> Void) -> Int {
        let time = now()
        let (id, victim, closed) = state.withLockedValue { state -> (Int, (@Sendable () -> Void)?, Closed?) in
            state.nextID += 1
            let id = state.nextID
            var victim: (@Sendable () -> Void)?
            if state.entries.count >= capacity {
                state.closed.shed += 1
                guard let chosen = Self.victim(among: state.entries, at: time) else {
                    // Every connection is being answered: the newcomer waits its turn elsewhere.
                    return (id, close, takeReport(&state, at: time))
                }
                victim = state.entries.removeValue(forKey: chosen)?.close
            }
            state.entries[id] = Entry(
                client: client, deadline: RequestDeadline(limits: limits, openedAt: time), close: close)
            return (id, victim, takeReport(&state, at: time))
        }
        log(closed)
        victim?()
        return id
    }

    /// Which connection makes way for a new one: the one that has waited longest for a head, else the
    /// one whose body comes at the fewest bytes a second (an upload at full speed is spared for a
    /// trickle); none when all are being answered.
    static func victim(among entries: [Int: Entry], at time: Double) -> Int? {
        var waiting: (id: Int, since: Double)?
        var reading: (id: Int, rate: Double, since: Double)?
        for (id, entry) in entries {
            switch entry.deadline.phase {
            case .waiting(let since):
                if waiting.map({ since < $0.since || (since == $0.since && id < $0.id) }) ?? true {
                    waiting = (id, since)
                }
            case .reading(let since, let received):
                let rate = Double(received) / max(time - since, 1)
                if reading.map({ rate < $0.rate || (rate == $0.rate && since < $0.since) }) ?? true {
                    reading = (id, rate, since)
                }
            case .answering:
                break
            }
        }
        return waiting?.id ?? reading?.id
    }

    func closed(_ id: Int) {
        _ = state.withLockedValue { $0.entries.removeValue(forKey: id) }
    }

    /// The connection's deadline after a change, or nil when it has none (or is gone).
    private func update(_ id: Int, _ change: (inout RequestDeadline, Double) -> Void) -> Double? {
        let time = now()
        return state.withLockedValue { state in
            guard var entry = state.entries[id] else { return nil }
            change(&entry.deadline, time)
            state.entries[id] = entry
            return entry.deadline.deadline
        }
    }

    func headRead(_ id: Int) -> Double? { update(id) { $0.headRead(at: $1) } }
    func bodyRead(_ id: Int, bytes: Int) -> Double? { update(id) { $0.bodyRead(bytes: bytes, at: $1) } }
    func endRead(_ id: Int) -> Double? { update(id) { $0.endRead(at: $1) } }
    func answerEnded(_ id: Int) -> Double? { update(id) { $0.answerEnded(at: $1) } }

    /// An answer that is an event stream began; past the streams' cap, the oldest stream of the client
    /// with the most is closed.
    func streamStarted(_ id: Int) {
        let time = now()
        let (victim, closed) = state.withLockedValue { state -> ((@Sendable () -> Void)?, Closed?) in
            guard state.entries[id] != nil else { return (nil, nil) }
            state.entries[id]?.streamSince = time
            let streams = state.entries.filter { $0.value.streamSince != nil }
            guard streams.count > streamCapacity, let chosen = Self.streamVictim(among: streams) else {
                return (nil, nil)
            }
            state.closed.streams += 1
            return (state.entries.removeValue(forKey: chosen)?.close, takeReport(&state, at: time))
        }
        log(closed)
        victim?()
    }

    /// The oldest stream of the client that holds the most; between clients holding as many, the
    /// one whose oldest is older. A single client opening streams by the hundred thus closes its own.
    static func streamVictim(among streams: [Int: Entry]) -> Int? {
        var byClient: [String: (count: Int, oldest: (id: Int, since: Double))] = [:]
        for (id, entry) in streams {
            guard let since = entry.streamSince else { continue }
            var held = byClient[entry.client] ?? (0, (id, since))
            held.count += 1
            if since < held.oldest.since || (since == held.oldest.since && id < held.oldest.id) {
                held.oldest = (id, since)
            }
            byClient[entry.client] = held
        }
        return byClient.values.max { left, right in
            left.count != right.count ? left.count < right.count : left.oldest.since > right.oldest.since
        }?.oldest.id
    }

    /// At the connection's deadline: closes it if its time is up and gives nil, else gives the
    /// deadline to look again at (it moved on with what came meanwhile), or nil when there is none.
    func check(_ id: Int) -> Double? {
        let time = now()
        let (victim, closed, next) = state.withLockedValue { state -> ((@Sendable () -> Void)?, Closed?, Double?) in
            guard let entry = state.entries[id] else { return (nil, nil, nil) }
            guard entry.deadline.expired(at: time) else { return (nil, nil, entry.deadline.deadline) }
            state.entries[id] = nil
            state.closed.slow += 1
            return (entry.close, takeReport(&state, at: time), nil)
        }
        log(closed)
        victim?()
        return next
    }

    /// How many connections are open, and how many of them are event streams (for tests).
    var counts: (connections: Int, streams: Int) {
        state.withLockedValue { state in
            (state.entries.count, state.entries.values.filter { $0.streamSince != nil }.count)
        }
    }

    /// What to log now, if anything was closed and the last line is `logInterval` old.
    private func takeReport(_ state: inout State, at time: Double) -> Closed? {
        guard state.closed.any else { return nil }
        if let last = state.lastLog, time - last < logInterval, time >= last { return nil }
        defer {
            state.closed = Closed()
            state.lastLog = time
        }
        return state.closed
    }

    private func log(_ closed: Closed?) {
        guard let closed else { return }
        logger.warning(
            "too many or too slow connections to the cab view: closed some to keep the page reachable",
            metadata: [
                "shed": "\(closed.shed)", "slow": "\(closed.slow)", "streams": "\(closed.streams)",
                "limit": "\(capacity)", "streamLimit": "\(streamCapacity)",
            ])
    }
}

/// One per connection, after the HTTP decoder: tells the table how far its request and answer are,
/// and closes the connection at its deadline if the request has not come by then.
///
/// A timer runs only while there is a deadline, and one at a time: a deadline that moved later is
/// looked at again when the earlier timer fires, so a connection reading a body does not set a timer
/// for every part, and a box whose page holds only its event stream is woken once, not every so often.
final class ConnectionShedder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let table: ConnectionTable
    private var id: Int?
    private var timer: (task: Scheduled<Void>, at: Double)?

    init(table: ConnectionTable) {
        self.table = table
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let channel = context.channel
        let id = table.opened(client: CabContext.client(channel.remoteAddress, local: channel.localAddress)) {
            channel.close(promise: nil)
        }
        self.id = id
        arm(context, at: table.check(id))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.task.cancel()
        timer = nil
        if let id { table.closed(id) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let id { table.closed(id) }
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if let id {
            switch unwrapInboundIn(data) {
            case .head: arm(context, at: table.headRead(id))
            case .body(let bytes): arm(context, at: table.bodyRead(id, bytes: bytes.readableBytes))
            case .end: arm(context, at: table.endRead(id))
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if let id {
            switch unwrapOutboundIn(data) {
            case .head(let head) where head.headerFields[.contentType]?.hasPrefix("text/event-stream") == true:
                table.streamStarted(id)
            case .end:
                arm(context, at: table.answerEnded(id))
            default:
                break
            }
        }
        context.write(data, promise: promise)
    }

    /// Makes sure a timer fires by `deadline`: one that fires earlier looks again then.
    private func arm(_ context: ChannelHandlerContext, at deadline: Double?) {
        guard let deadline else { return }
        if let timer, timer.at <= deadline { return }
        timer?.task.cancel()
        let delay = max(0, deadline - table.now())
        let task = context.eventLoop.assumeIsolated().scheduleTask(
            in: .nanoseconds(Int64(min(delay, 86_400) * 1e9) + 1)
        ) { [self] in
            timer = nil
            guard let id else { return }
            arm(context, at: table.check(id))
        }
        timer = (task, deadline)
    }
}
