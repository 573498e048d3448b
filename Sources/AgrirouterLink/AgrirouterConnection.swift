import AgrirouterWire
import Clocks
import Foundation
import SwiftProtobuf

/// Why a conversation with agrirouter failed.
public enum GatewayError: Error, Sendable, Equatable, CustomStringConvertible {
    case transport(TransportError)
    case codec(CodecError)
    /// agrirouter answered ACK_WITH_FAILURE; its codes are kept.
    case refused(technicalMessageType: String, codes: [String])
    /// No answer arrived in time.
    case noAnswer(technicalMessageType: String)
    /// The true time is not known yet (no fix since start, and the system clock is not plausible):
    /// a request would carry a wrong timestamp, so it is held.
    case timeUnknown
    /// Nothing was sent because of a fault on this box (its spool), not in the conversation.
    case local(String)

    public var description: String {
        switch self {
        case .local(let detail): return detail
        case .transport(let error): return error.description
        case .codec(let error): return error.description
        case .refused(let type, let codes): return "agrirouter refused \(type) (\(codes.joined(separator: ", ")))"
        case .noAnswer(let type): return "agrirouter did not answer \(type) in time"
        case .timeUnknown:
            return
                "holding requests until the time is known: the system clock reads before \(ISO8601UTC.string(from: TrueTime.plausibleFrom).prefix(10)) "
                + "and there has been no GNSS fix yet; a fix or NTP will set it"
        }
    }
}

/// How long to wait after transport errors: doubling from `first` up to `maximum`, each wait
/// stretched or shrunk at random by up to `jitter` (a fraction), so that many boxes that lost the
/// same network do not come back in step. It only ever adds to the request spacing.
///
/// The maximum is 20 s (24 s with the jitter). A longer wait spared agrirouter little (one small
/// request, three times a minute, from a box whose positions are waiting) and cost minutes of
/// positions after every outage. Where the failure was not getting through at all, the connection
/// also looks for the way back every few seconds and ends the wait early (`waitOutBackoff`).
public struct Backoff: Sendable, Equatable {
    public var first: Double = 5
    public var maximum: Double = 20
    public var jitter: Double = 0.2

    public init(first: Double = 5, maximum: Double = 20, jitter: Double = 0.2) {
        (self.first, self.maximum, self.jitter) = (first, maximum, jitter)
    }

    /// The wait after `failures` consecutive failures (1 or more), before jitter.
    public func delay(afterFailures failures: Int) -> Double {
        guard failures > 0 else { return 0 }
        // 2^20 times `first` is past any sensible maximum: stop doubling there, so nothing overflows.
        return min(maximum, first * Double(1 << min(failures - 1, 20)))
    }
}

/// The onboarded endpoint's line to agrirouter: measures out, outbox in, and never two requests
/// closer together than `minimumSpacing` (DKE asks for 5 s in production and 10 s on QA). After a
/// transport error the next request waits out a backoff as well; a success resets it.
public actor AgrirouterConnection {
    public nonisolated let endpoint: OnboardingResponse
    /// REST or MQTT, as the endpoint was onboarded.
    public nonisolated let link: any Link
    private let minimumSpacing: Double
    private var encoder = MessageEncoder()
    /// Start of the most recently reserved request slot (monotonic seconds).
    private var lastSlot: Double?
    private let backoff: Backoff
    /// The best known UTC for the envelopes' and the measures' timestamps; nil uses the system clock.
    private let clock: TrueTime?
    /// What the spacing, the backoff and the answers' ages are measured and waited on.
    private let monotonic: MonotonicClock
    /// Transport errors in a row, and the monotonic time before which no request goes out.
    public private(set) var consecutiveFailures = 0
    private var retryAt: Double?
    /// Whether the last failure was one of not getting through at all (refused, no route, no name):
    /// then the way back can be found without a request, and the backoff ends when it is.
    private var failedToConnect = false
    /// How often that is tried while backing off: a handshake, not a request of agrirouter's API.
    static let probeInterval = 3.0
    /// Requests made (MQTT: publishes; its answers cost none), and the bytes of the measures bodies
    /// sent, for status and the benchmarks.
    public private(set) var requestCount = 0
    public private(set) var bodyBytesSent = 0

    /// Who an outbox answer is for: each part sends its own messages and takes only their answers.
    public enum Recipient: Sendable, Hashable, CaseIterable {
        case setup, publisher, reader, check
    }

    /// Who sent each message still waiting for its answer (and when, on the monotonic clock), and
    /// the answers fetched for each but not yet taken; the feed reader's box holds the pushes too.
    private var senders: [String: (recipient: Recipient, sentAt: Double)] = [:]
    private var mailboxes: [Recipient: [DecodedResponse]] = [:]
    /// The message ids of the latest send, which `waitForAnswers` waits for, and items that did not
    /// decode while it waited, handed on with the next poll.
    private var latestSend: [String] = []
    private var undecodableKept: [CodecError] = []
    /// The most answers one box keeps untaken; beyond it the oldest go (nothing takes them). Pushes,
    /// which carry other machines' messages, are held to 64 of them: more than a farm's machines push
    /// between two cycles, and a flood of large pushes does not pile up in memory. Answers to what
    /// this box sent are small and each settles something (a batch unsettled is sent again), so
    /// they keep the larger limit, the feed reader's among them.
    static let mailboxLimit = 10_000
    static let pushLimit = 64
    /// Looks at the outbox that could have brought any answer due: REST's GETs that got one, MQTT's
    /// collections while connected (while it is not, nothing arrives, and silence says nothing).
    public private(set) var looks = 0
    /// A GET of the outbox is under way: what it brings is taken from agrirouter for good, so a
    /// stop waits for it rather than lose answers that would make their batches go twice.
    public private(set) var outboxRequestInFlight = false
    /// Messages from agrirouter dropped unread since the start: the link's own limit, or a box full.
    public private(set) var droppedInbound = 0

    /// A connection over REST, as the endpoint's URLs say.
    public init(
        endpoint: OnboardingResponse, trustedCAPEM: String?, minimumSpacing: Double,
        timeout: Double = 60, backoff: Backoff = Backoff(), clock: TrueTime? = nil, monotonic: MonotonicClock = .system
    ) throws(OnboardingError) {
        guard
            let credentials = ClientCredentials(
                agrirouterPEM: endpoint.authentication.certificate,
                secret: endpoint.authentication.secret)
        else {
            throw .unreadableResponse("the stored certificate is not an encrypted PEM key and certificate")
        }
        self.init(
            endpoint: endpoint,
            link: RESTLink(endpoint: endpoint, credentials: credentials, trustedCAPEM: trustedCAPEM, timeout: timeout),
            minimumSpacing: minimumSpacing, backoff: backoff, clock: clock, monotonic: monotonic)
    }

    /// A connection over a link already made (REST or MQTT).
    public init(
        endpoint: OnboardingResponse, link: any Link, minimumSpacing: Double, backoff: Backoff = Backoff(),
        clock: TrueTime? = nil, monotonic: MonotonicClock = .system
    ) {
        self.endpoint = endpoint
        self.link = link
        self.minimumSpacing = minimumSpacing
        self.backoff = backoff
        self.clock = clock
        self.monotonic = monotonic
    }

    /// Whether a request could be stamped with a true time now.
    public nonisolated var timeIsKnown: Bool { clock.map { $0.now() != nil } ?? true }

    /// Whether that time comes from a fix or agrirouter's own clock, not from the system clock alone,
    /// which may be hours fast: agrirouter would refuse what it stamps.
    public nonisolated var timeIsVerified: Bool { clock?.isVerified ?? true }

    /// Seconds until the backoff allows the next request; nil when not backing off.
    public func backingOff() -> Double? {
        retryAt.map { max(0, $0 - monotonic.now()) }
    }

    /// A request went through (whatever agrirouter made of it): the backoff ends, and agrirouter's
    /// clock, if it told it, bounds the true time.
    private func succeeded(at serverDate: Date?) {
        consecutiveFailures = 0
        retryAt = nil
        failedToConnect = false
        if let serverDate { clock?.observe(serverTime: serverDate) }
    }

    /// A transport error: the next request waits out a longer backoff.
    private func failed(_ error: TransportError) {
        // Only not getting through at all (refused, no route, no name; MQTT without its broker) is
        // probed: a server that took the connection and then reset, stalled or erred would pass a
        // handshake at once and be asked again every few seconds. It is given its rest.
        if case .cannotConnect = error {
            failedToConnect = true
        } else {
            failedToConnect = link.deliversAnswers && link.state != .connected
        }
        consecutiveFailures += 1
        let delay = backoff.delay(afterFailures: consecutiveFailures)
        retryAt = monotonic.now() + delay * (1 + backoff.jitter * Double.random(in: -1...1))
    }

    /// The spacing suited to an environment: 10 s on QA, 5 s in production.
    public static func spacing(for environment: String) -> Double {
        AgrirouterLimits.spacing(for: environment)
    }

    /// Seconds until a request could go out; a caller may wait this long before it gathers what to send.
    public func untilNextTurn() -> Double {
        max(untilSpacingAllows(), (retryAt ?? -.infinity) - monotonic.now())
    }

    /// Seconds until the spacing lets the next request go, leaving any backoff aside (that is waited
    /// out by `waitUntilNextTurn`, which ends it early once agrirouter is reachable again).
    public func untilSpacingAllows() -> Double {
        max(0, (lastSlot ?? -.infinity) + minimumSpacing - monotonic.now())
    }

    /// Waits until a request could go out, without reserving the slot: the spacing, and a backoff,
    /// which ends early once agrirouter is found reachable again. Returns the seconds waited.
    public func waitUntilNextTurn() async -> Double {
        let start = monotonic.now()
        await waitOutBackoff()
        let rest = untilNextTurn()
        if rest > 0 { try? await monotonic.sleep(for: rest) }
        return monotonic.now() - start
    }

    /// Sits out the backoff. After a failure to connect, the link looks for the way back every few
    /// seconds, so the backlog starts going within seconds of agrirouter's return rather than at
    /// the end of a backoff that began just before it.
    private func waitOutBackoff() async {
        while let until = retryAt, !Task.isCancelled {
            let left = until - monotonic.now()
            guard left > 0 else { return }
            guard failedToConnect else {
                try? await monotonic.sleep(for: left)
                continue
            }
            try? await monotonic.sleep(for: min(left, Self.probeInterval))
            // Another request may have failed or got through meanwhile: only this backoff ends.
            if retryAt == until, until > monotonic.now(), await link.reachable(), retryAt == until { retryAt = nil }
        }
    }

    /// Waits for the next free slot. The slot is reserved before suspending, so concurrent callers
    /// queue up instead of slipping in between.
    private func waitForTurn() async {
        await waitOutBackoff()
        let now = monotonic.now()
        let slot = max(now, (lastSlot ?? -.infinity) + minimumSpacing, retryAt ?? -.infinity)
        lastSlot = slot
        requestCount += 1
        if slot > now { try? await monotonic.sleep(until: slot) }
    }

    /// One message of a measures request.
    public struct Outgoing: Sendable {
        public var technicalMessageType: String
        public var mode: Agrirouter_Request_RequestEnvelope.Mode
        public var payload: (any SwiftProtobuf.Message)?
        public var applicationMessageID: String
        /// EFDI's: the description and every TimeLog under it carry the same one.
        public var teamSetContextID: String
        /// Who takes its answer, when not the sender of the request it rides in.
        public var recipient: Recipient?

        public init(
            _ technicalMessageType: String, mode: Agrirouter_Request_RequestEnvelope.Mode = .direct,
            payload: (any SwiftProtobuf.Message)?, applicationMessageID: String = UUID().uuidString.lowercased(),
            teamSetContextID: String = "", recipient: Recipient? = nil
        ) {
            self.technicalMessageType = technicalMessageType
            self.mode = mode
            self.payload = payload
            self.applicationMessageID = applicationMessageID
            self.teamSetContextID = teamSetContextID
            self.recipient = recipient
        }
    }

    /// POSTs one message to the measures URL and returns it as sent; its answer goes to `recipient`.
    @discardableResult
    public func send(
        _ technicalMessageType: String, mode: Agrirouter_Request_RequestEnvelope.Mode = .direct,
        payload: (any SwiftProtobuf.Message)?, applicationMessageID: String = UUID().uuidString.lowercased(),
        for recipient: Recipient = .publisher
    ) async throws(GatewayError) -> EncodedMessage {
        let sent = try await send(
            [Outgoing(technicalMessageType, mode: mode, payload: payload, applicationMessageID: applicationMessageID)],
            for: recipient)
        return sent[0]
    }

    /// POSTs several messages in one measures request (agrirouter allows it; their payloads together
    /// stay within the payload cap), so that a second output costs no second request. Returns them
    /// as sent, in order. They succeed or fail together; their answers go to `recipient`, or to a
    /// message's own.
    @discardableResult
    public func send(_ messages: [Outgoing], for recipient: Recipient = .publisher) async throws(GatewayError)
        -> [EncodedMessage]
    {
        precondition(!messages.isEmpty, "a measures request carries at least one message")
        var encoded: [EncodedMessage] = []
        let body: Data
        // agrirouter refuses timestamps from the future, and certification wants them within a
        // minute of UTC: stamp with the best known UTC, never the system clock's guess.
        guard let now = clock.map({ $0.now() }) ?? Date() else { throw .timeUnknown }
        do {
            for message in messages {
                encoded.append(
                    try encoder.encode(
                        applicationMessageID: message.applicationMessageID,
                        technicalMessageType: message.technicalMessageType,
                        mode: message.mode, payload: message.payload, teamSetContextID: message.teamSetContextID,
                        at: now))
            }
            body = try MeasuresBody(
                sensorAlternateID: endpoint.sensorAlternateId, capabilityAlternateID: endpoint.capabilityAlternateId,
                messages: encoded, at: now
            ).json()
        } catch {
            throw .codec(error)
        }
        // Known before the request goes: a poll that overtakes it still routes the answer right.
        let sentAt = monotonic.now()
        for (message, outgoing) in zip(encoded, messages) {
            senders[message.applicationMessageID] = (outgoing.recipient ?? recipient, sentAt)
        }
        latestSend = encoded.map(\.applicationMessageID)
        await waitForTurn()
        // A connection that is still being made (the daemon's start, a reconnect under way) is given
        // a moment rather than failing the send, which would put it off by a whole retry.
        await link.waitUntilReady(atMost: 10)
        // Stopping: the batch stays in the spool rather than go out with nobody left to take its answer.
        guard !Task.isCancelled else {
            for message in encoded { senders[message.applicationMessageID] = nil }
            throw .transport(.stopping)
        }
        bodyBytesSent += body.count
        do {
            succeeded(at: try await link.publish(body))
        } catch {
            failed(error)
            throw .transport(error)
        }
        return encoded
    }

    /// Waits until every message of the latest send has its answer (MQTT delivers them by itself), or
    /// `seconds` pass; at once over REST, whose answers only a poll brings. What arrives meanwhile is
    /// routed as a poll routes it. Waiting for any mail instead would return at once on an answer
    /// still on its way from the cycle before, and every answer would lag a cycle behind for good.
    public func waitForAnswers(atMost seconds: Double) async {
        guard link.deliversAnswers else { return }
        let deadline = monotonic.now() + max(0, seconds)
        while latestSend.contains(where: { senders[$0] != nil }), monotonic.now() < deadline, !Task.isCancelled {
            await link.waitForMail(atMost: deadline - monotonic.now())
            if let (responses, undecodable) = try? await fetchOutbox() {
                route(responses)
                undecodableKept += undecodable
            }
        }
    }

    /// One GET of the outbox, each answer put aside for whoever sent its message, every push for the
    /// feed reader, and an answer to a message nobody here sent (a batch of a run that was killed)
    /// for the publisher, which knows its batches from the spool. Returns the items that did not
    /// decode, not dropped silently.
    @discardableResult
    public func poll() async throws(GatewayError) -> [CodecError] {
        let (responses, undecodable) = try await fetchOutbox()
        route(responses)
        defer { undecodableKept = [] }
        return undecodableKept + undecodable
    }

    private func route(_ responses: [DecodedResponse]) {
        // An answer comes within the outbox's life or not at all: older senders are forgotten.
        let now = monotonic.now()
        senders = senders.filter { now - $0.value.sentAt <= 2 * AgrirouterLimits.outboxLifetime }
        for response in responses {
            let recipient: Recipient
            if response.envelope.type == .pushNotification {
                recipient = .reader
            } else if let id = response.applicationMessageID, let sender = senders.removeValue(forKey: id) {
                recipient = sender.recipient
            } else {
                recipient = .publisher
            }
            var box = mailboxes[recipient, default: []]
            if response.envelope.type == .pushNotification {
                // Pushes are held to their own limit, oldest first; answers beside them are kept.
                let pushes = box.indices.filter { box[$0].envelope.type == .pushNotification }
                if pushes.count >= Self.pushLimit {
                    let going = Set(pushes.prefix(pushes.count - Self.pushLimit + 1))
                    droppedInbound += going.count
                    box = box.indices.filter { !going.contains($0) }.map { box[$0] }
                }
            }
            if box.count >= Self.mailboxLimit {
                droppedInbound += box.count - Self.mailboxLimit + 1
                box.removeFirst(box.count - Self.mailboxLimit + 1)
            }
            box.append(response)
            mailboxes[recipient] = box
        }
    }

    /// The answers (and for the feed reader, the pushes) polled for `recipient` since it last took
    /// them, in the order they came.
    public func answers(for recipient: Recipient) -> [DecodedResponse] {
        mailboxes.removeValue(forKey: recipient) ?? []
    }

    /// Collects what the link brought: over REST one GET of the outbox, spaced like every request;
    /// over MQTT what arrived on the commands topic, at no cost. Items that do not decode are
    /// returned as errors beside the rest, not dropped silently.
    public func fetchOutbox() async throws(GatewayError) -> (responses: [DecodedResponse], undecodable: [CodecError]) {
        // Over MQTT nothing is requested, so nothing here says whether agrirouter can be reached.
        let requests = !link.deliversAnswers
        if requests { await waitForTurn() }
        // A GET of the outbox takes its answers from agrirouter for good: none is begun while the
        // daemon stops, since what it brought might not be recorded before the process ends.
        if requests, Task.isCancelled { throw .transport(.stopping) }
        let mail: LinkMail
        if requests { outboxRequestInFlight = true }
        defer { outboxRequestInFlight = false }
        do {
            mail = try await link.collect()
        } catch {
            if requests, case .transport(let reason) = error { failed(reason) } else if requests { succeeded(at: nil) }
            throw error
        }
        if requests { succeeded(at: mail.serverDate) }
        if requests || link.state == .connected { looks += 1 }
        droppedInbound += mail.dropped
        var responses: [DecodedResponse] = []
        var undecodable = mail.unreadable
        for item in mail.items {
            do {
                responses.append(try OutboxDecoder.decode(base64: item.command.message))
            } catch {
                undecodable.append(error)
            }
        }
        return (responses, undecodable)
    }
}
