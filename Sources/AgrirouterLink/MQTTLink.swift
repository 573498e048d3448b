import AgrirouterWire
import BlockingWork
import Bounds
import CMosquitto
import Clocks
import Foundation
import Synchronization

/// Why the MQTT link could not be made at all (as opposed to a connection that drops and comes back).
public enum MQTTSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    case notMQTT
    case credentialFile(String)
    /// libmosquitto refused a call; its code and text are kept.
    case libmosquitto(call: String, code: Int32, text: String)
    /// libmosquitto could not be opened, or is too old.
    case libmosquittoUnavailable(String)
    /// No thread could be started for the connection: the process is at its limit.
    case noThread

    public var description: String {
        switch self {
        case .notMQTT:
            return "the endpoint was not onboarded for MQTT (no broker host, port or client id stored); onboard again"
        case .credentialFile(let reason):
            return "the certificate file for the MQTT connection cannot be written: \(reason)"
        case .libmosquitto(let call, let code, let text):
            return "libmosquitto refused \(call) (\(code): \(text)); install Debian's libmosquitto1 2.0 or later"
        case .libmosquittoUnavailable(let detail):
            return "libmosquitto cannot be loaded (\(detail)); install Debian's libmosquitto1 2.0 or later"
        case .noThread:
            return "no thread could be started for the MQTT connection: the process is at its limit of threads "
                + "(systemd's TasksMax, ulimit -u); raise it or stop what holds them"
        }
    }
}

/// MQTT over libmosquitto: one long-lived TLS connection with the endpoint's client certificate,
/// measures published with QoS 1 to the measures topic, answers and pushes taken from the commands
/// topic as they come.
///
/// - The key stays encrypted at rest: libmosquitto reads the credential file (key and certificate)
///   at every connect and asks for the secret through its password callback.
/// - A thread of the link's keeps the connection: keepalive 60 s, and reconnects 2, 4, 8 … 60 s
///   apart. The session is persistent, so answers published while the box is away wait at the
///   broker; the commands topic is still subscribed on every connect, since a broker that restarted
///   has forgotten the session.
/// - A PUBACK only says the broker took the packet; the connection above waits for agrirouter's ACK.
/// - Another client with our client id makes the broker close ours; three connections in a row that
///   each end within 15 s are taken as that, and the next attempt waits 5 minutes instead of taking
///   the id back every few seconds.
public final class MQTTLink: Link, @unchecked Sendable {
    public let transport = Transport.mqtt
    public let deliversAnswers = true

    /// What waits untaken on the commands topic, at most: this many messages (the oldest dropped
    /// beyond it) and this many bytes (the largest dropped), each drop counted. Answers and ordinary pushes are small,
    /// and what a broker kept for the box while it was away arrives at once on reconnect: the count
    /// leaves room for that. The bytes bound a flood of large pushes (thousands of 65 KB each), which
    /// must cost the box neither its memory nor its publishing; a feed page of 1 MB fits.
    static let inboxLimit = 1_000
    static let inboxByteLimit = 4 * 1_048_576
    static let largestMessage = 16 * 1_048_576
    static let keepalive: Int32 = 60
    /// A connection that ends sooner than this after it was made counts towards a take-over.
    static let shortLived = 15.0
    static let takeOverPause = 300.0

    private let handle: OpaquePointer
    private let host: String
    private let port: Int32
    private let measuresTopic: String
    private let commandsTopic: String
    private let secret: [UInt8]
    private let shared = Mutex(Shared())
    /// Wakes the tasks waiting on the link when libmosquitto's callbacks change it.
    private let changes = LinkChanges()

    private struct Shared {
        var inbox: [Data] = []
        var inboxBytes = 0
        var dropped = 0
        var connectedAt: Double?
        var shortLivedInARow = 0
        var takenOverAt: Double?
        var state = LinkState.connecting
        var closed = false
        var acknowledgedByBroker = 0
    }

    /// Why libmosquitto cannot be used, or nil once it is open: looked up at the first link, so a
    /// daemon that never talks MQTT never maps it or the TLS libraries it brings.
    private static let libraryProblem: String? = {
        var error = [CChar](repeating: 0, count: 512)
        guard cmosq_open(&error, error.count) != 0 else { return nil }
        return String(errorBuffer: error)
    }()

    /// Writes the credential file (the encrypted key and the certificate, 0600) and, for a local
    /// agrirouter, its CA into `directory`, then starts connecting in the background.
    public init(endpoint: OnboardingResponse, credentials: ClientCredentials, trustedCAPEM: String?, directory: String)
        throws(MQTTSetupError)
    {
        let criteria = endpoint.connectionCriteria
        guard endpoint.transport == .mqtt, let host = criteria.host, let clientID = criteria.clientId,
            let port = criteria.port.flatMap(Int32.init(exactly:)), (1...65_535).contains(port)
        else { throw .notMQTT }
        if let problem = Self.libraryProblem { throw .libmosquittoUnavailable(problem) }
        let store = CredentialStore(directory: directory)
        let credentialPath = directory + "/mqtt-credential.pem"
        let caPath = directory + "/mqtt-ca.pem"
        do throws(OnboardingError) {
            try store.write(Data((credentials.encryptedKeyPEM + credentials.certificatePEM).utf8), to: credentialPath)
            if let trustedCAPEM { try store.write(Data(trustedCAPEM.utf8), to: caPath) }
        } catch {
            throw .credentialFile(error.description)
        }
        (self.host, self.port) = (host, port)
        (measuresTopic, commandsTopic) = (criteria.measures, criteria.commands)
        secret = Array(credentials.secret.utf8)
        // A persistent session (clean session off): the broker keeps the subscription and queues
        // answers with QoS 1 while the box is away (a restart, a dead spot), instead of dropping them.
        guard let handle = cmosq_new(clientID, false, nil) else {
            throw .libmosquitto(call: "mosquitto_new", code: Int32(errno), text: String(cString: strerror(errno)))
        }
        self.handle = handle
        cmosq_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        do throws(MQTTSetupError) {
            try Self.check(
                cmosq_int_option(handle, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V311), "MOSQ_OPT_PROTOCOL_VERSION")
            let systemBundle = "/etc/ssl/certs/ca-certificates.crt"
            let caFile: String? =
                trustedCAPEM != nil
                ? caPath : (FileManager.default.fileExists(atPath: systemBundle) ? systemBundle : nil)
            try Self.check(
                cmosq_tls_set(
                    handle, caFile, caFile == nil ? "/etc/ssl/certs" : nil, credentialPath, credentialPath,
                    passwordCallback),
                "mosquitto_tls_set")
            try Self.check(cmosq_reconnect_delay_set(handle, 2, 60, true), "mosquitto_reconnect_delay_set")
        } catch {
            // Fully initialised by now, so deinit runs and frees the handle.
            throw error
        }
        cmosq_connect_callback_set(handle, onConnect)
        cmosq_disconnect_callback_set(handle, onDisconnect)
        cmosq_message_callback_set(handle, onMessage)
        cmosq_publish_callback_set(handle, onPublish)
        // The connection lives on a thread of its own, never Swift's pool: the first connect resolves
        // the host, which may block, and the loop waits on the socket. The thread holds the link
        // until `close` ends it.
        guard startThread(named: "agrigps-mqtt", { [self] in self.run() }) else {
            throw .noThread
        }
    }

    deinit {
        cmosq_destroy(handle)
    }

    private static func check(_ code: Int32, _ call: String) throws(MQTTSetupError) {
        guard code == MOSQ_ERR_SUCCESS.rawValue else {
            throw .libmosquitto(call: call, code: code, text: String(cString: cmosq_strerror(code)))
        }
    }

    private var isClosed: Bool { shared.withLock { $0.closed } }

    /// Connects and keeps the connection. libmosquitto reconnects by itself after most losses, but
    /// returns from its loop on the ones it takes as fatal, a TLS error among them, which is what a
    /// connection cut without TLS's goodbye (a broker killed, a network gone) looks like: the loop
    /// is entered again, so that no loss ends the link for good.
    private func run() {
        cmosq_threaded_set(handle, true)
        let code = cmosq_connect_async(handle, host, port, Self.keepalive)
        if code != MOSQ_ERR_SUCCESS.rawValue {
            // Not fatal: the loop below keeps trying. A wrong secret or a damaged key shows here first.
            shared.withLock { $0.state = .disconnected(reason: Self.reason(code)) }
        }
        while !isClosed {
            let ended = cmosq_loop_forever(handle, 1000, 1)
            guard !isClosed else { break }
            shared.withLock { shared in
                if shared.takenOverAt == nil { shared.state = .disconnected(reason: Self.reason(ended)) }
            }
            reconnect()
        }
    }

    /// Connects again, 2, 4, 8 … 60 s apart, until it works or the link is closed.
    private func reconnect() {
        var delay = 2.0
        while !isClosed {
            for _ in 0..<Int(delay * 10) where !isClosed { usleep(100_000) }
            guard !isClosed else { return }
            let code = cmosq_reconnect(handle)
            if code == MOSQ_ERR_SUCCESS.rawValue { return }
            shared.withLock { $0.state = .disconnected(reason: Self.reason(code)) }
            delay = min(60, delay * 2)
        }
    }

    static func reason(_ code: Int32) -> String {
        switch code {
        case MOSQ_ERR_CONN_LOST.rawValue: return "the connection was lost"
        case MOSQ_ERR_TLS.rawValue:
            return "TLS failed: the broker is not trusted, or the stored certificate cannot be used"
        case MOSQ_ERR_NO_CONN.rawValue: return "not connected"
        default: return TerminalText.safe(String(cString: cmosq_strerror(code)), limit: 120)
        }
    }

    public var state: LinkState {
        shared.withLock { shared in
            if let since = shared.takenOverAt {
                return .takenOver(retryInSeconds: Int(max(0, Self.takeOverPause - (uptime() - since)).rounded(.up)))
            }
            return shared.state
        }
    }

    /// PUBACKs received: the broker took that many publishes (not agrirouter's acknowledgement).
    public var acknowledgedByBroker: Int { shared.withLock { $0.acknowledgedByBroker } }

    public func publish(_ body: Data) async throws(TransportError) -> Date? {
        let state = self.state
        // A publish while disconnected would wait in libmosquitto's memory and die with the process;
        // the spool keeps it instead, and it goes once the link is back.
        guard state == .connected else { throw .cannotConnect("MQTT broker \(host):\(port) is \(state)") }
        guard let length = Int32(exactly: body.count) else { throw .payloadTooLarge }
        var messageID: Int32 = 0
        let code = body.withUnsafeBytes { bytes in
            cmosq_publish(handle, &messageID, measuresTopic, length, bytes.baseAddress, 1, false)
        }
        switch code {
        // NO_CONN: the connection dropped just now; libmosquitto keeps the packet and sends it on
        // reconnect, so it must not be published twice.
        case MOSQ_ERR_SUCCESS.rawValue, MOSQ_ERR_NO_CONN.rawValue: return nil
        case MOSQ_ERR_PAYLOAD_SIZE.rawValue, MOSQ_ERR_OVERSIZE_PACKET.rawValue: throw .payloadTooLarge
        default: throw .connectionFailed(Self.reason(code))
        }
    }

    public func collect() async throws(GatewayError) -> LinkMail {
        let (messages, dropped) = shared.withLock { shared in
            defer {
                shared.inbox = []
                shared.inboxBytes = 0
                shared.dropped = 0
            }
            return (shared.inbox, shared.dropped)
        }
        var mail = LinkMail()
        mail.dropped = dropped
        let decoder = JSONDecoder()
        for message in messages {
            do {
                mail.items.append(try decoder.decode(OutboxItem.self, from: message))
            } catch {
                mail.unreadable.append(.malformedJSON("a message on the commands topic is not an outbox item"))
            }
        }
        return mail
    }

    public func waitForMail(atMost seconds: Double) async {
        await wait(atMost: seconds) { shared.withLock { !$0.inbox.isEmpty } }
    }

    /// Returns once `done` holds, after `seconds`, or when the task is cancelled. `done` is looked at
    /// again whenever libmosquitto's thread says the link changed (a connection, a loss, a message).
    private func wait(atMost seconds: Double, until done: () -> Bool) async {
        let deadline = uptime() + max(0, seconds)
        while !Task.isCancelled {
            let seen = changes.generation
            guard !done() else { return }
            let left = deadline - uptime()
            guard left > 0 else { return }
            await changes.wait(past: seen, atMost: left)
        }
    }

    /// Ends the connection; the link's thread ends within its current wait (at most the reconnect
    /// delay) and lets the link go.
    public func waitUntilReady(atMost seconds: Double) async {
        await wait(atMost: seconds) { state == .connected }
    }

    public func reachable() async -> Bool { state == .connected }

    /// A publish is handed to libmosquitto and the waits for answers end with their tasks: nothing to end.
    public func abortRequests() {}

    public func close() {
        let first = shared.withLock { shared in
            defer { shared.closed = true }
            return !shared.closed
        }
        guard first else { return }
        cmosq_disconnect(handle)
    }

    // MARK: - Callbacks, on libmosquitto's thread

    fileprivate func connected(_ code: Int32) {
        guard code == 0 else {
            let text = String(cString: cmosq_connack_string(code))
            shared.withLock { $0.state = .disconnected(reason: "the broker refused the connection: \(text)") }
            return
        }
        shared.withLock { shared in
            shared.connectedAt = uptime()
            shared.takenOverAt = nil
            shared.state = .connected
        }
        changes.notify()
        // A broker that restarted forgot the session: subscribe on every connect, or answers stop after it.
        let subscribed = cmosq_subscribe(handle, nil, commandsTopic, 1)
        if subscribed != MOSQ_ERR_SUCCESS.rawValue {
            shared.withLock {
                $0.state = .disconnected(reason: "cannot subscribe to the commands topic: \(Self.reason(subscribed))")
            }
            cmosq_disconnect(handle)
        }
    }

    fileprivate func disconnected(_ code: Int32) {
        let takenOver = shared.withLock { shared -> Bool in
            guard !shared.closed else { return false }
            shared.state = .disconnected(reason: Self.reason(code))
            guard let since = shared.connectedAt else { return false }
            shared.connectedAt = nil
            let wasShort = uptime() - since < Self.shortLived
            shared.shortLivedInARow = wasShort ? shared.shortLivedInARow + 1 : 0
            guard shared.shortLivedInARow >= 3 else { return false }
            shared.takenOverAt = uptime()
            return true
        }
        changes.notify()
        // Called on the loop's own thread, which reads these before its next attempt.
        if takenOver {
            cmosq_reconnect_delay_set(handle, UInt32(Self.takeOverPause), UInt32(Self.takeOverPause), false)
        } else {
            cmosq_reconnect_delay_set(handle, 2, 60, true)
        }
    }

    fileprivate func received(_ message: UnsafePointer<mosquitto_message>) {
        let message = message.pointee
        guard let topic = message.topic, String(cString: topic) == commandsTopic,
            (0...Self.largestMessage).contains(Int(message.payloadlen))
        else { return }
        let data = message.payload.map { Data(bytes: $0, count: Int(message.payloadlen)) } ?? Data()
        shared.withLock { shared in
            Self.admit(data, to: &shared.inbox, bytes: &shared.inboxBytes, dropped: &shared.dropped)
        }
        changes.notify()
    }

    /// Makes room for `data`: past the count the oldest go; past the bytes the largest, which are
    /// pushes with content, so that the small answers that settle our batches stay (each one lost
    /// sends its batch again). A newcomer that is itself the largest, or larger than all the room
    /// there is, is the one dropped.
    static func admit(
        _ data: Data, to inbox: inout [Data], bytes: inout Int, dropped: inout Int,
        limit: Int = inboxLimit, byteLimit: Int = inboxByteLimit
    ) {
        if bytes + data.count > byteLimit, data.count > byteLimit || data.count >= (inbox.map(\.count).max() ?? 0) {
            dropped += 1
            return
        }
        let excess = inbox.count - limit + 1
        if excess > 0 {
            bytes -= inbox.prefix(excess).reduce(0) { $0 + $1.count }
            inbox.removeFirst(excess)
            dropped += excess
        }
        while bytes + data.count > byteLimit, let largest = inbox.indices.max(by: { inbox[$0].count < inbox[$1].count })
        {
            bytes -= inbox.remove(at: largest).count
            dropped += 1
        }
        inbox.append(data)
        bytes += data.count
    }

    fileprivate func published() {
        shared.withLock { $0.acknowledgedByBroker += 1 }
    }

    /// Copies the secret into OpenSSL's buffer; nil-terminated is not needed, the length is returned.
    fileprivate func writeSecret(into buffer: UnsafeMutablePointer<CChar>, size: Int32) -> Int32 {
        guard let fits = Int32(exactly: secret.count), fits <= size else { return 0 }
        secret.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { buffer.update(from: $0.baseAddress!, count: $0.count) }
        }
        return fits
    }

    fileprivate static func from(_ object: UnsafeMutableRawPointer?) -> MQTTLink? {
        object.map { Unmanaged<MQTTLink>.fromOpaque($0).takeUnretainedValue() }
    }
}

private func onConnect(_: OpaquePointer?, _ object: UnsafeMutableRawPointer?, _ code: Int32) {
    MQTTLink.from(object)?.connected(code)
}

private func onDisconnect(_: OpaquePointer?, _ object: UnsafeMutableRawPointer?, _ code: Int32) {
    MQTTLink.from(object)?.disconnected(code)
}

private func onMessage(
    _: OpaquePointer?, _ object: UnsafeMutableRawPointer?, _ message: UnsafePointer<mosquitto_message>?
) {
    guard let message else { return }
    MQTTLink.from(object)?.received(message)
}

private func onPublish(_: OpaquePointer?, _ object: UnsafeMutableRawPointer?, _: Int32) {
    MQTTLink.from(object)?.published()
}

/// OpenSSL's password callback; libmosquitto hands it the client handle, whose user data is the link.
private func passwordCallback(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int32, _: Int32, _ handle: UnsafeMutableRawPointer?
) -> Int32 {
    guard let buffer, let handle, let link = MQTTLink.from(cmosq_userdata(OpaquePointer(handle))) else { return 0 }
    return link.writeSecret(into: buffer, size: size)
}

extension String {
    /// The text a C library wrote into `buffer`, up to its terminating NUL (or the whole buffer).
    init(errorBuffer buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// Tasks waiting for an MQTT link to change, woken by libmosquitto's callbacks instead of looking
/// every few milliseconds. Each change moves a generation on, so that a change between a waiter's
/// look and its wait is not missed.
private final class LinkChanges: Sendable {
    private struct State {
        var generation: UInt64 = 0
        var nextWaiter: UInt64 = 0
        var waiting: [UInt64: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    var generation: UInt64 { state.withLock { $0.generation } }

    /// Something changed: every waiter looks again.
    func notify() {
        let woken = state.withLock { state in
            state.generation &+= 1
            defer { state.waiting = [:] }
            return Array(state.waiting.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once the generation has moved past `seen`, after `seconds`, or when the task is cancelled.
    func wait(past seen: UInt64, atMost seconds: Double) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.park(past: seen) }
            group.addTask { try? await Task.sleep(for: .seconds(seconds)) }
            await group.next()
            group.cancelAll()
        }
    }

    private func park(past seen: UInt64) async {
        let id = state.withLock { state in
            defer { state.nextWaiter &+= 1 }
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                // Under the lock: a change or a cancellation before this either shows here or finds the waiter.
                let now = state.withLock { state in
                    guard state.generation == seen, !Task.isCancelled else { return true }
                    state.waiting[id] = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiting.removeValue(forKey: id) }?.resume()
        }
    }
}
