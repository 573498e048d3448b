import Agrirouter
import Foundation
import GNSS
import Logging
import Spool

/// The send cycle: one spool batch at a time as a gps:info GPSList, published under the batch's own id
/// as application_message_id, and settled only by agrirouter's answer for that id.
public actor Publisher {
    public struct CycleReport: Sendable, Equatable {
        /// Samples published in this cycle.
        public var published = 0
        /// Samples settled by ACK or ACK_WITH_MESSAGES.
        public var acknowledged = 0
        /// Batches answered with ACK_WITH_FAILURE, by their codes.
        public var refusals: [[String]] = []
        /// What kept this cycle from talking to agrirouter, if anything.
        public var error: GatewayError?
    }

    private let spool: Spool
    private let connection: AgrirouterConnection
    private let logger: Logger
    private let byteBudget: Int
    /// Corrects the time of samples that have no receiver time; nil leaves their system time.
    private let clock: TrueTime?
    /// Batches sent and not yet answered, by application_message_id, with when they went out on the
    /// monotonic clock: a step of the system clock neither resends them early nor strands them.
    private var awaiting: [String: Double] = [:]
    private var adoptedEarlierBatches = false

    public init(spool: Spool, connection: AgrirouterConnection, byteBudget: Int = SpoolConfiguration.agrirouterPayloadCap,
                clock: TrueTime? = nil, logger: Logger = Logger(label: "agrigps.publisher")) {
        self.spool = spool
        self.clock = clock
        self.connection = connection
        self.byteBudget = byteBudget
        self.logger = logger
    }

    /// Batches still waiting for an answer.
    public var awaitingAnswers: Int { awaiting.count }

    /// Outbox items someone else fetched (the daemon's outbox poll, the endpoint set-up): answers to
    /// our batches among them settle those batches, exactly as if this publisher had fetched them.
    @discardableResult
    public func absorb(_ responses: [DecodedResponse], now: Date? = nil) async -> CycleReport {
        let now = now ?? TrueTime.bestGuess(clock)
        var report = CycleReport()
        await settle(responses, into: &report, now: now)
        return report
    }

    /// One step: settle answers for what was sent, then publish the next batch if the spool has one.
    /// A batch that cannot be handed over goes back to pending at once, with no failure counted.
    /// With `fetchingAnswers` false, the caller polls the outbox and hands the answers to `absorb`.
    /// `now` is the best known UTC (kept in the spool); `uptimeNow` the monotonic clock, which times
    /// the wait for answers.
    public func cycle(now: Date? = nil, uptimeNow: Double = uptime(), inFlightTimeout: Double = 300,
                      fetchingAnswers: Bool = true) async -> CycleReport {
        let now = now ?? TrueTime.bestGuess(clock)
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
        await giveUpOn(awaiting.filter { uptimeNow - $0.value >= inFlightTimeout }.map(\.key))
        if fetchingAnswers && !awaiting.isEmpty {
            do {
                try await settle(&report, now: now)
            } catch {
                report.error = error
                return report
            }
        }
        // Without a true time the request would carry a wrong one: the batch stays in the spool.
        guard connection.timeIsKnown else {
            report.error = .timeUnknown
            return report
        }
        // The batch is taken when it can go out at once, so it carries the newest samples.
        let wait = await connection.untilNextTurn()
        if wait > 0 { try? await Task.sleep(for: .seconds(wait)) }
        let batch: SpoolBatch
        do {
            guard let taken = try await spool.takeBatch(byteBudget: byteBudget, now: wait > 0 ? now.addingTimeInterval(wait) : now) else { return report }
            batch = taken
        } catch {
            report.error = .transport(.connectionFailed("spool: \(error.description)"))
            return report
        }
        var list = Agrirouter_Technicalmessagetype_GPSList()
        list.gpsEntries = batch.samples.map { GPSEntry($0.sample, correctedBy: clock) }
        do {
            try await connection.send(TechnicalMessageType.gpsInfo, mode: .publish, payload: list, applicationMessageID: batch.id)
            awaiting[batch.id] = uptimeNow + wait  // when it went out, after the wait for its turn
            report.published = batch.samples.count
        } catch .transport(.payloadTooLarge) {
            // Sending the same batch again would meet the same 413: count it as a failure, so it
            // backs off and is parked where status shows it.
            try? await spool.fail(batch: batch.id, reason: "HTTP 413", now: now)
            report.error = .transport(.payloadTooLarge)
        } catch {
            if Self.mayHaveArrived(error) {
                // The request may have reached agrirouter and its answer may be on its way to the
                // outbox: wait for it like for any batch sent. Without one within the outbox's life,
                // the spool returns the batch to pending and it is sent again.
                awaiting[batch.id] = uptimeNow + wait
                report.published = batch.samples.count
            } else {
                try? await spool.release(batch: batch.id)
            }
            report.error = error
        }
        return report
    }

    /// Unanswered past the outbox's life: the answer will not come, so the samples go back to pending
    /// and are sent again (the spool counts them as resent). One that cannot be released yet is kept.
    private func giveUpOn(_ ids: [String]) async {
        for id in ids {
            do {
                try await spool.release(batch: id)
                awaiting[id] = nil
                logger.notice("no answer for batch \(id) within the outbox's life; its samples are sent again")
            } catch {
                logger.error("spool: \(error.description)")
            }
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

    private func settle(_ report: inout CycleReport, now: Date) async throws(GatewayError) {
        let (responses, undecodable) = try await connection.fetchOutbox()
        for error in undecodable { logger.warning("outbox item skipped: \(error.description)") }
        await settle(responses, into: &report, now: now)
    }

    private func settle(_ responses: [DecodedResponse], into report: inout CycleReport, now: Date) async {
        for response in responses {
            guard let id = response.applicationMessageID, response.envelope.type != .pushNotification else { continue }
            // A late answer for a batch already given up on still settles it: the spool keeps its id.
            do {
                switch response.body {
                case .ack, .ackWithMessages:
                    report.acknowledged += try await spool.acknowledge(batch: id, now: now)
                case .ackWithFailure:
                    try await spool.fail(batch: id, reason: response.messageCodes.joined(separator: ","), now: now)
                    report.refusals.append(response.messageCodes)
                    logger.warning("agrirouter refused batch \(id): \(response.messageCodes.joined(separator: ", "))")
                default:
                    continue
                }
            } catch {
                logger.error("spool: \(error.description)")
            }
            awaiting[id] = nil
        }
    }
}
