import AgrirouterLink
import AgrirouterWire
import Clocks
import Foundation
import GNSS
import Logging
import Spool

/// The send cycle: for each enabled output, one spool batch at a time (gps:info as a GPSList, EFDI as
/// a TimeLog under the device description's team set), all in one measures request, each under its
/// batch's own id as application_message_id and settled only by agrirouter's answer for that id.
public actor Publisher {
    /// EFDI's part: the device description goes first, and every TimeLog waits until agrirouter has
    /// taken the description of its team set (ACK, or VAL_000004 "no recipients", which agrirouter
    /// answers when no one is routed to receive it yet). It is sent again every `resendInterval`,
    /// after each endpoint set-up, and when agrirouter says it does not know the team set (VAL_000020).
    public struct EFDI: Sendable {
        public var description: DeviceDescription
        /// Once an hour: EFDI.md's range is an hour to a day, and the agrirouter middleware resends
        /// before a TimeLog when the last description is an hour old.
        public var resendInterval: Double = 3600
        /// After a refusal of the description, this long before it is tried again.
        public var retryAfterRefusal: Double = 300

        public init(description: DeviceDescription) {
            self.description = description
        }
    }

    /// Where the device description stands, for status.
    public struct DescriptionState: Sendable, Equatable {
        /// When agrirouter last took it (best known UTC).
        public var acceptedAt: Date?
        /// Its codes, if agrirouter refused it last.
        public var refusal: [String]?
        public var teamSetContextID: String
    }

    public struct CycleReport: Sendable, Equatable {
        /// Samples published in this cycle (by the first output: each sample is counted once).
        public var published = 0
        /// Samples settled by ACK or ACK_WITH_MESSAGES.
        public var acknowledged = 0
        /// Batches answered with ACK_WITH_FAILURE, by their codes.
        public var refusals: [[String]] = []
        /// What kept this cycle from talking to agrirouter, if anything.
        public var error: GatewayError?
        /// Whether the messages given to ride along went out (or may have, and their answers are due).
        public var alongSent = false
    }

    private let spool: Spool
    private let connection: AgrirouterConnection
    private let logger: Logger
    private let byteBudget: Int
    /// Seconds a take waits for the next sample's append to be written in its commit (see
    /// `Spool.takeBatches(_:byteBudget:now:ridingNextAppendWithin:)`); nil takes at once.
    private let rideAppendsWithin: Double?
    /// Corrects the time of samples that have no receiver time; nil leaves their system time.
    private let clock: TrueTime?
    /// Batches sent and not yet answered, by application_message_id, with when they went out on the
    /// monotonic clock: a step of the system clock neither resends them early nor strands them.
    private var awaiting: [String: Double] = [:]
    /// For each batch past the outbox's life, the connection's count of looks at the outbox when it
    /// passed it: a batch is sent again only once a look made after that has come back without its
    /// answer (each look's answers are settled before the next cycle). After a stall the answer may
    /// be the first thing the next poll brings; over MQTT, a look while disconnected does not count.
    private var overdueSince: [String: Int] = [:]
    private var adoptedEarlierBatches = false
    /// The outputs it publishes, in order.
    private let outputs: [SpoolOutput]
    private var efdi: EFDI?
    /// The description: the id it went out under while its answer is awaited, when (monotonic) it
    /// was last taken, and when refused.
    private var description: (awaitingID: String?, sentAt: Double, acceptedAt: Double?, refusedAt: Double?) = (
        nil, 0, nil, nil
    )
    public private(set) var descriptionState: DescriptionState?
    /// What the wait for answers and the description's resends are timed on.
    private let monotonic: MonotonicClock

    /// `outputs` are those enabled; EFDI needs `efdi` and is left out without it.
    public init(
        spool: Spool, connection: AgrirouterConnection, byteBudget: Int = AgrirouterLimits.payloadBytes,
        outputs: [SpoolOutput] = [.gpsInfo], efdi: EFDI? = nil, rideAppendsWithin: Double? = nil,
        clock: TrueTime? = nil, monotonic: MonotonicClock = .system, logger: Logger = Logger(label: "agrigps.publisher")
    ) {
        self.spool = spool
        self.monotonic = monotonic
        self.rideAppendsWithin = rideAppendsWithin
        self.clock = clock
        self.connection = connection
        self.byteBudget = byteBudget
        self.outputs = SpoolOutput.all.filter { outputs.contains($0) && ($0 != .efdi || efdi != nil) }
        self.efdi = efdi
        self.logger = logger
        descriptionState = efdi.map { DescriptionState(teamSetContextID: $0.description.teamSetContextID) }
    }

    /// A new description (the endpoint was renamed in agrirouter, say): it has its own team set, so
    /// TimeLogs wait until agrirouter has taken it. The same description again changes nothing.
    public func describe(_ new: DeviceDescription) {
        guard var efdi = self.efdi, new.teamSetContextID != efdi.description.teamSetContextID else { return }
        efdi.description = new
        self.efdi = efdi
        description = (nil, 0, nil, nil)
        descriptionState = DescriptionState(teamSetContextID: new.teamSetContextID)
        logger.info(
            "the device description changed (team set \(new.teamSetContextID)); TimeLogs wait until agrirouter has it")
    }

    /// After each endpoint set-up (a reconnect, as certification sees it): the description goes again.
    public func endpointSetUp() {
        description.acceptedAt = description.acceptedAt.map { _ in -Double.infinity }
    }

    /// Messages still waiting for an answer: batches, and the description.
    public var awaitingAnswers: Int { awaiting.count + (description.awaitingID == nil ? 0 : 1) }

    /// Its answers from a poll someone else made (the daemon's, the endpoint set-up's): they settle
    /// our batches exactly as if this publisher had polled.
    @discardableResult
    public func absorb(_ responses: [DecodedResponse], now: Date? = nil) async -> CycleReport {
        let now = now ?? TrueTime.bestGuess(clock)
        var report = CycleReport()
        await settle(responses, into: &report, now: now)
        return report
    }

    /// One step: publish the next batch if the spool has one, and give up on batches whose answers
    /// are overdue. A batch that cannot be handed over goes back to pending at once, with no failure
    /// counted. The caller polls the outbox and hands the publisher its answers through `absorb`.
    /// `now` is the best known UTC (kept in the spool); `uptimeNow` the monotonic clock, which times
    /// the wait for answers.
    ///
    /// `along` are other parts' messages (the feed reader's confirm) that go in the same request, or
    /// in one of their own when there is no batch: every request counts against the spacing.
    public func cycle(
        now: Date? = nil, uptimeNow: Double? = nil, inFlightTimeout: Double = AgrirouterLimits.outboxLifetime,
        along: [AgrirouterConnection.Outgoing] = []
    ) async -> CycleReport {
        let now = now ?? TrueTime.bestGuess(clock)
        let uptimeNow = uptimeNow ?? monotonic.now()
        var report = CycleReport()
        if !adoptedEarlierBatches {
            // A batch a killed predecessor sent may have its answer waiting in the outbox: wait for
            // it rather than sending the batch twice. Its send time is from another run, so only
            // as good as the clock was then: the wait it leaves is kept within the timeout.
            adoptedEarlierBatches = true
            for (id, _, sentAt) in (try? await spool.inFlightBatches()) ?? [] {
                awaiting[id] = uptimeNow - min(max(now.timeIntervalSince(sentAt), 0), inFlightTimeout)
            }
        }
        let overdue = awaiting.filter { uptimeNow - $0.value >= inFlightTimeout }.map(\.key)
        let looks = await connection.looks
        for id in overdue where overdueSince[id] == nil { overdueSince[id] = looks }
        await giveUpOn(overdue.filter { looks > (overdueSince[$0] ?? .max) }, uptimeNow: uptimeNow)
        // Without a true time the request would carry a wrong one: the batch stays in the spool.
        guard connection.timeIsKnown else {
            report.error = .timeUnknown
            return report
        }
        // The batches are taken when they can go out at once, so they carry the newest samples.
        let wait = await connection.waitUntilNextTurn()
        let (messages, batches): ([AgrirouterConnection.Outgoing], [SpoolBatch])
        do {
            (messages, batches) = try await gather(
                now: wait > 0 ? now.addingTimeInterval(wait) : now, uptimeNow: uptimeNow + wait,
                reserved: along.reduce(0) { $0 + Self.payloadSize($1) })
        } catch {
            report.error = .local("nothing sent: \(error.description)")
            return report
        }
        guard !messages.isEmpty || !along.isEmpty else { return report }
        let describing = messages.first { $0.technicalMessageType == TechnicalMessageType.deviceDescription }?
            .applicationMessageID
        do {
            try await connection.send(messages + along)
            report.alongSent = true
            // when it went out, after the wait for its turn
            for batch in batches { awaiting[batch.id] = uptimeNow + wait }
            report.published = published(batches)
        } catch .transport(.payloadTooLarge) {
            // Sending the same batches again would meet the same 413: count it as a failure, so they
            // back off and are parked where status shows it.
            for batch in batches { try? await spool.fail(batch: batch.id, reason: "HTTP 413", now: now) }
            if describing != nil { description.awaitingID = nil }
            report.error = .transport(.payloadTooLarge)
        } catch {
            if Self.mayHaveArrived(error) {
                // The request may have reached agrirouter and its answers may be on their way to the
                // outbox: wait for them like for any batch sent. Without one within the outbox's
                // life, the spool returns the batch to pending and it is sent again.
                for batch in batches { awaiting[batch.id] = uptimeNow + wait }
                report.published = published(batches)
                report.alongSent = true
            } else {
                for batch in batches { try? await spool.release(batch: batch.id) }
                if describing != nil { description.awaitingID = nil }
            }
            report.error = error
        }
        return report
    }

    /// A message's payload in bytes, for its share of the request's payload cap.
    static func payloadSize(_ message: AgrirouterConnection.Outgoing) -> Int {
        ((try? message.payload?.serializedBytes()) as Data?)?.count ?? 0
    }

    /// Samples published, each counted once whatever the number of outputs: those of the first
    /// output, which every sample goes out by.
    private func published(_ batches: [SpoolBatch]) -> Int {
        batches.filter { $0.output == outputs.first }.reduce(0) { $0 + $1.samples.count }
    }

    /// This cycle's messages: the description when due, then a batch for each output that has one
    /// (EFDI's only once its description is taken), the payload cap shared between them.
    private func gather(now: Date, uptimeNow: Double, reserved: Int) async throws(SpoolError) -> (
        [AgrirouterConnection.Outgoing], [SpoolBatch]
    ) {
        var messages: [AgrirouterConnection.Outgoing] = []
        var batches: [SpoolBatch] = []
        var budget = byteBudget - reserved
        if let efdi, descriptionDue(efdi, uptimeNow: uptimeNow) {
            let id = UUID().uuidString.lowercased()
            messages.append(
                .init(
                    TechnicalMessageType.deviceDescription, mode: .publish, payload: efdi.description.taskData,
                    applicationMessageID: id, teamSetContextID: efdi.description.teamSetContextID))
            description.awaitingID = id
            description.sentAt = uptimeNow
            budget -= efdi.description.payloadSize
        }
        do throws(SpoolError) {
            try await take(budget: max(0, budget), now: now, into: &messages, &batches)
        } catch {
            // What was taken goes back, unsent; so does the description.
            for batch in batches { try? await spool.release(batch: batch.id) }
            description.awaitingID = nil
            throw error
        }
        return (messages, batches)
    }

    /// Each output in turn takes an equal share of what the earlier ones left: with both backlogged
    /// they split the cap, and once gps:info has caught up EFDI gets all of it. The request as a
    /// whole stays within one payload cap, as no agrirouter limit on a request of several messages
    /// is documented. All outputs' batches are taken in one commit.
    private func take(
        budget: Int, now: Date, into messages: inout [AgrirouterConnection.Outgoing],
        _ batches: inout [SpoolBatch]
    ) async throws(SpoolError) {
        let requests = outputs.compactMap { output -> Spool.BatchRequest? in
            guard output == .efdi else { return Spool.BatchRequest(output: output) }
            guard efdi != nil, description.acceptedAt != nil else { return nil }
            let cost =
                Efdi_Time.upperBound + (efdi?.description.describesMachine == true ? Efdi_Time.machineUpperBound : 0)
            return Spool.BatchRequest(output: .efdi, entryCost: cost)
        }
        let taken =
            if let rideAppendsWithin {
                try await spool.takeBatches(
                    requests, byteBudget: budget, now: now, ridingNextAppendWithin: rideAppendsWithin)
            } else {
                try await spool.takeBatches(requests, byteBudget: budget, now: now)
            }
        for batch in taken {
            if batch.output == .efdi, let efdi {
                // Sized by the description the batch was taken under, and written for it.
                let (timeLog, untimed) = Efdi_TimeLog.of(
                    batch.samples.map(\.sample), correctedBy: clock,
                    withMachine: efdi.description.describesMachine)
                if untimed > 0 {
                    logger.notice(
                        "\(untimed) samples with no true time at all cannot be TimeLog entries; EFDI leaves them out")
                }
                guard !timeLog.time.isEmpty else {
                    // Nothing of it can be said in EFDI: done for this output, as agrirouter could not take it either.
                    try await spool.acknowledge(batch: batch.id, now: now)
                    continue
                }
                messages.append(
                    .init(
                        TechnicalMessageType.timeLog, mode: .publish, payload: timeLog, applicationMessageID: batch.id,
                        teamSetContextID: efdi.description.teamSetContextID))
            } else {
                var list = Agrirouter_Technicalmessagetype_GPSList()
                list.gpsEntries = batch.samples.map { GPSEntry($0.sample, correctedBy: clock) }
                messages.append(
                    .init(TechnicalMessageType.gpsInfo, mode: .publish, payload: list, applicationMessageID: batch.id))
            }
            batches.append(batch)
        }
    }

    /// The description goes out when never taken in this run, an hour after it last was, and (after
    /// a refusal) once `retryAfterRefusal` has passed; never while its answer is awaited.
    private func descriptionDue(_ efdi: EFDI, uptimeNow: Double) -> Bool {
        guard description.awaitingID == nil else { return false }
        if let accepted = description.acceptedAt { return uptimeNow - accepted >= efdi.resendInterval }
        return description.refusedAt.map { uptimeNow - $0 >= efdi.retryAfterRefusal } ?? true
    }

    /// Unanswered past the outbox's life: the answer will not come, so the samples go back to pending
    /// and are sent again (the spool counts them as resent). One that cannot be released yet is kept.
    private func giveUpOn(_ ids: [String], uptimeNow: Double) async {
        if description.awaitingID != nil, uptimeNow - description.sentAt >= AgrirouterLimits.outboxLifetime {
            description.awaitingID = nil  // unanswered within the outbox's life: it goes again
        }
        for id in ids {
            do {
                try await spool.release(batch: id, mayHaveArrived: true)
                awaiting[id] = nil
                overdueSince[id] = nil
                logger.notice("no answer for batch \(id) within the outbox's life; its samples are sent again")
            } catch {
                logger.error("spool: \(error.description)")
            }
        }
    }

    private func settleDescription(_ response: DecodedResponse, now: Date, into report: inout CycleReport) {
        guard let efdi else { return }
        let codes = response.messageCodes
        switch response.body {
        case .ack, .ackWithMessages:
            break
        case .ackWithFailure where !codes.isEmpty && codes.allSatisfy({ $0 == "VAL_000004" }):
            // No one is routed to receive it yet; agrirouter has it all the same.
            break
        case .ackWithFailure:
            description = (nil, description.sentAt, nil, monotonic.now())
            descriptionState?.refusal = codes
            report.refusals.append(codes)
            logger.warning(
                "agrirouter refused the device description: \(codes.joined(separator: ", ")); EFDI waits and tries again in \(Int(efdi.retryAfterRefusal)) s"
            )
            return
        default:
            return
        }
        let first = description.acceptedAt == nil
        description = (nil, description.sentAt, monotonic.now(), nil)
        descriptionState = DescriptionState(
            acceptedAt: now, refusal: nil, teamSetContextID: efdi.description.teamSetContextID)
        if first {
            logger.info(
                "agrirouter took the device description (team set \(efdi.description.teamSetContextID)); TimeLogs follow"
            )
        }
    }

    /// Whether a failed POST may still have been received: its whole body went out, then it timed
    /// out or the connection broke. A refused connection, a TLS failure, a failure before the body
    /// was sent and an HTTP error status mean it was not taken.
    static func mayHaveArrived(_ error: GatewayError) -> Bool {
        switch error {
        case .transport(.timedOut), .transport(.brokenAfterSending): return true
        default: return false
        }
    }

    private func settle(_ responses: [DecodedResponse], into report: inout CycleReport, now: Date) async {
        // Acknowledgements are committed together after the loop: one durable write per poll.
        var acknowledgedIDs: [String] = []
        for response in responses {
            guard let id = response.applicationMessageID, response.envelope.type != .pushNotification else { continue }
            if id == description.awaitingID {
                settleDescription(response, now: now, into: &report)
                continue
            }
            // A late answer for a batch already given up on still settles it: the spool keeps its id.
            do {
                switch response.body {
                case .ack, .ackWithMessages:
                    acknowledgedIDs.append(id)
                case .ackWithFailure:
                    try await spool.fail(batch: id, reason: response.messageCodes.joined(separator: ","), now: now)
                    report.refusals.append(response.messageCodes)
                    logger.warning("agrirouter refused batch \(id): \(response.messageCodes.joined(separator: ", "))")
                    if response.messageCodes.contains("VAL_000020"), description.acceptedAt != nil {
                        // agrirouter does not know the team set: describe the box again before the next TimeLog.
                        description.acceptedAt = nil
                        description.refusedAt = nil
                    }
                default:
                    continue
                }
            } catch {
                logger.error("spool: \(error.description)")
            }
            awaiting[id] = nil
            overdueSince[id] = nil
        }
        do {
            report.acknowledged += try await spool.acknowledge(batches: acknowledgedIDs, now: now)
        } catch {
            logger.error("spool: \(error.description)")
        }
    }
}
