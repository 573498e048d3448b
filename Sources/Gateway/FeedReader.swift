import AgrirouterLink
import AgrirouterWire
import Bounds
import Clocks
import Fields
import Foundation
import GNSS
import Logging
import StateDirectory
import SwiftProtobuf

/// The receiving half of the conversation: other machines' gps:info and EFDI from pushes and feed
/// queries goes into the store, TaskData from farm software into the fields' store, every message
/// is confirmed once stored, and the endpoint list names the senders. It makes at most one request
/// per `step`, so the send cycle keeps its turn; answers reach it through `absorb`, from whoever
/// polled the outbox.
public actor FeedReader {
    public struct Configuration: Sendable {
        /// On connect, the feed is read back this far.
        public var catchUpWindow: Double = 15 * 60
        /// A feed query this often, for pushes that expired in the outbox unread.
        public var safetyQueryInterval: Double = 3600
        /// The endpoint list is fetched again this often, and at once for an unknown sender (but not
        /// more often than `unknownSenderRefreshGap`).
        public var endpointRefresh: Double = 300
        public var unknownSenderRefreshGap: Double = 60
        /// A request unanswered this long is given up; the outbox keeps answers 5 minutes.
        public var answerTimeout: Double = AgrirouterLimits.outboxLifetime
        /// Pages read per query before waiting for the next one (a page is 25 messages).
        public var maximumPages = 40
        /// Message ids per confirm.
        public var confirmBatch = 100
        /// Feed entries older than the catch-up window and younger than this are deleted on connect.
        public var feedRetention: Double = 28 * 24 * 3600

        public init() {}
    }

    /// Counts since start, for status and tests.
    public struct Counters: Sendable, Equatable {
        public var received = 0
        public var stored = 0
        public var duplicates = 0
        /// gps:info from a sender whose TimeLogs are read instead: confirmed, not stored.
        public var passedOver = 0
        /// Unreadable or out of range: confirmed, counted, never stored.
        public var refused = 0
        public var confirmed = 0
        public var queries = 0
        public var endpointLists = 0
        /// TaskData imported into the fields' store.
        public var taskDataImported = 0
        /// TaskData that could not be read or joined: logged, confirmed, nothing changed.
        public var taskDataRefused = 0
        /// TaskData older than what its sender's fields came from: confirmed, nothing changed.
        public var taskDataOlder = 0
        /// Chunked TaskData given up incomplete after the joiner's bound.
        public var taskDataExpired = 0
        /// Why the last TaskData was refused or given up, for `agrigps status`.
        public var lastTaskDataProblem: String?
    }

    enum Request: Sendable {
        case listEndpoints
        /// A feed query, with how many more pages it may read after this one.
        case query(from: Date, to: Date, pagesLeft: Int)
        case confirm([String])
        case delete(before: Date)
    }

    private let store: OtherMachinesStore
    private let connection: AgrirouterConnection
    private let ownEndpointID: String
    private let configuration: Configuration
    private let logger: Logger
    /// The feed's query windows are agrirouter's time: the best known UTC, not the system clock's.
    private let clock: TrueTime?
    private var awaiting: [String: (request: Request, sentAt: Date)] = [:]
    private var toConfirm: [String] = []
    /// The confirm handed to the publisher to go in its request, until it says whether it went.
    private var riding: (id: String, request: Request, sentAt: Date)?
    private var listWanted = false
    private var listedAt: Date?
    private var unknownSenderRefreshAt: Date?
    private var query: (from: Date, to: Date, pagesLeft: Int)?
    private var deleteBefore: Date?
    private var nextSafetyQuery: Date?
    public private(set) var counters = Counters()
    /// Where received TaskData goes; nil leaves it to the others' store, which refuses it.
    private let fields: FieldStore?
    /// TaskData chunks join here. Each chunk is held in the fields' store before its message is
    /// confirmed, and the joins are rebuilt from the store at the first delivery after a start. Not
    /// confirming chunks until the whole arrived would not do: a feed page holds 1 MB, about one chunk,
    /// and agrirouter gives the next page only once the previous one is confirmed.
    private var joiner = ChunkJoiner()
    private var heldRestored = false
    /// Contexts joined lately, so that a chunk delivered again (a push after the query took it) does
    /// not start a join that can never finish.
    private var joinedContexts: [String: Date] = [:]
    /// Where whole TaskData is read and stored, beside the loop that calls this reader.
    public nonisolated let imports: TaskDataImports?
    /// TaskData handed to `imports` and not yet settled: their message ids, unconfirmed until then,
    /// and their keys (sender and context, or the message), so that one delivered again waits for it.
    private var importingMessages: Set<String> = []
    private var importingKeys: Set<String> = []

    public init(
        store: OtherMachinesStore, connection: AgrirouterConnection, ownEndpointID: String,
        configuration: Configuration = Configuration(), clock: TrueTime? = nil, fields: FieldStore? = nil,
        logger: Logger = Logger(label: "agrigps.feed"), importGate: (@Sendable () async -> Void)? = nil
    ) {
        self.fields = fields
        imports = fields.map { TaskDataImports(fields: $0, gate: importGate) }
        self.store = store
        self.clock = clock
        self.connection = connection
        self.ownEndpointID = ownEndpointID
        self.configuration = configuration
        self.logger = logger
    }

    /// After capabilities and subscription: name the others, catch up on the feed, clean it.
    public func connected(now: Date? = nil) {
        let now = now ?? TrueTime.bestGuess(clock)
        listWanted = true
        query = (now.addingTimeInterval(-configuration.catchUpWindow), now, configuration.maximumPages)
        deleteBefore = now.addingTimeInterval(-configuration.catchUpWindow)
        nextSafetyQuery = now.addingTimeInterval(configuration.safetyQueryInterval)
    }

    /// Whether it has connected once and has nothing left to ask or wait for: a finite run can stop.
    public var hasCaughtUp: Bool { nextSafetyQuery != nil && !isBusy && importingKeys.isEmpty }

    /// TaskData being read or waiting to be, beside the loop.
    public var importsInProgress: Int { importingKeys.count }

    /// Reads and stores the TaskData this reader hands over, until cancelled: the daemon runs it as
    /// a service of its own, so that no TaskData holds back the loop that calls `absorb` and `step`.
    public func runImports() async {
        await imports?.run { [self] job, outcome in await settle(job, outcome) }
    }

    /// Whether it has requests to make or answers to wait for.
    public var isBusy: Bool { isBusy(confirmsRideAlong: false) }

    /// The same, leaving out confirms that go in the publisher's next request.
    public func isBusy(confirmsRideAlong: Bool) -> Bool {
        (!confirmsRideAlong && !toConfirm.isEmpty) || listWanted || query != nil || deleteBefore != nil
            || !awaiting.isEmpty
    }

    // MARK: - Answers and pushes

    /// Takes the outbox items that are its business (pushes, answers to its requests) and returns the rest.
    public func absorb(_ responses: [DecodedResponse], now: Date? = nil) async -> [DecodedResponse] {
        let now = now ?? TrueTime.bestGuess(clock)
        var rest: [DecodedResponse] = []
        for response in responses {
            if response.envelope.type == .pushNotification {
                await receive(response.feedMessages, now: now)
            } else if let id = response.applicationMessageID, let (request, _) = awaiting.removeValue(forKey: id) {
                await answered(request, by: response, now: now)
            } else {
                rest.append(response)
            }
        }
        return rest
    }

    private func answered(_ request: Request, by response: DecodedResponse, now: Date) async {
        if case .ackWithFailure = response.body {
            logger.warning("agrirouter refused \(request.name): \(response.messageCodes.joined(separator: ", "))")
            if case .listEndpoints = request { listedAt = now }  // try again at the next refresh, not in a loop
            return
        }
        switch (request, response.body) {
        case (.listEndpoints, .endpoints(let listing)):
            listedAt = now
            counters.endpointLists += 1
            do {
                try await store.applyEndpointList(
                    listing.endpoints.map { ($0.endpointID, $0.endpointName) }, ownEndpointID: ownEndpointID, at: now)
            } catch {
                logger.error("\(error.description)")
            }
        case (.query(let from, let to, let pagesLeft), .feedMessages(let page)):
            await receive(response.feedMessages, now: now)
            // agrirouter pages by leaving the rest for the next query, once this page is confirmed.
            if page.page.total > 1, !page.messages.isEmpty, pagesLeft > 0, query == nil {
                query = (from, to, pagesLeft - 1)
            }
        case (.confirm(let ids), _):
            counters.confirmed += ids.count
            let unknown = response.messageCodes.count { $0 == "VAL_000205" }
            if unknown > 0 { logger.info("agrirouter knew \(unknown) of \(ids.count) confirmed messages no more") }
        default:
            break
        }
    }

    /// Stores what arrived, then queues every id for confirming; a refused message (unreadable, or a
    /// value out of range) is logged, counted and confirmed too, so it cannot come back forever. If the store fails, nothing is confirmed and the
    /// feed delivers the messages again.
    private func receive(_ messages: [ReceivedFeedMessage], now: Date) async {
        guard !messages.isEmpty else { return }
        counters.received += messages.count
        var messages = messages
        if let fields {
            let taskData = messages.filter { $0.technicalMessageType == TechnicalMessageType.taskData }
            messages.removeAll { $0.technicalMessageType == TechnicalMessageType.taskData }
            if !taskData.isEmpty { await receiveTaskData(taskData, into: fields, now: now) }
            guard !messages.isEmpty else { return }
        }
        let recorded: OtherMachinesStore.Recorded
        do {
            recorded = try await store.record(messages, ownEndpointID: ownEndpointID, receivedAt: now)
        } catch {
            logger.error("\(error.description); the messages stay in the feed and come back with the next query")
            return
        }
        counters.stored += recorded.stored
        counters.duplicates += recorded.duplicates
        counters.passedOver += recorded.passedOver
        counters.refused += recorded.refused.count
        for (id, reason) in recorded.refused.sorted(by: { $0.key < $1.key }) {
            logger.warning(
                "refused a feed message; it is confirmed and skipped",
                metadata: ["message": "\(TerminalText.safe(id))", "reason": "\(TerminalText.safe(reason, limit: 300))"])
        }
        toConfirm += recorded.confirmable.filter { !toConfirm.contains($0) }
        if !recorded.unnamedSenders.isEmpty,
            unknownSenderRefreshAt.map({ now.timeIntervalSince($0) >= configuration.unknownSenderRefreshGap }) ?? true
        {
            unknownSenderRefreshAt = now
            listWanted = true
        }
    }

    // MARK: - TaskData

    /// TaskData from farm software: each chunk is held durably, then confirmed; a whole TaskData
    /// replaces its sender's fields. What cannot be read is logged, counted and confirmed, and changes nothing.
    private func receiveTaskData(_ messages: [ReceivedFeedMessage], into fields: FieldStore, now: Date) async {
        await restoreHeld(fields)
        // One whose TaskData is being imported is confirmed when the import is settled.
        for message in messages where !importingMessages.contains(message.messageID) {
            guard !message.senderID.isEmpty, let raw = ChunkJoiner.rawContent(message.content), !raw.isEmpty else {
                refuseTaskData([message.messageID], sender: message.senderID, reason: "its content is not a base64 zip")
                continue
            }
            guard let position = message.chunk else {
                await importTaskData(
                    raw, sender: message.senderID, sentAt: message.sentAt ?? now, contextID: nil,
                    messageIDs: [message.messageID], into: fields, now: now)
                continue
            }
            if joinedContexts[joinKey(message.senderID, position.contextID)] != nil {
                counters.duplicates += 1
                confirm([message.messageID])
                continue
            }
            // Held before it is joined, so that confirming it is safe; one above the cap is refused by
            // the joiner without taking room.
            if raw.count <= joiner.limits.maximumChunkBytes {
                do {
                    try await fields.hold(
                        HeldChunk(
                            senderID: message.senderID, contextID: position.contextID, current: position.current,
                            total: position.total, totalSize: position.totalSize, messageID: message.messageID,
                            sentAt: message.sentAt, receivedAt: now, bytes: raw))
                } catch {
                    logger.error(
                        "\(error.description); the TaskData chunk stays in the feed and comes back with the next query")
                    continue
                }
            }
            let chunk = ChunkJoiner.Chunk(
                messageID: message.messageID, senderID: message.senderID, position: position,
                sentAt: message.sentAt, bytes: raw)
            await joined(joiner.add(chunk, now: now), messageID: message.messageID, into: fields, now: now)
            await forgetEvicted(fields)
        }
    }

    private func joined(_ outcome: ChunkJoiner.Outcome, messageID: String?, into fields: FieldStore, now: Date) async {
        switch outcome {
        case .waiting:
            if let messageID { confirm([messageID]) }
        case .duplicate:
            counters.duplicates += 1
            if let messageID { confirm([messageID]) }
        case .complete(let whole):
            joinedContexts[joinKey(whole.senderID, whole.contextID)] = now
            // The other chunks were confirmed as they were held; only the one that completed it waits for the import.
            await importTaskData(
                whole.bytes, sender: whole.senderID, sentAt: whole.sentAt ?? now, contextID: whole.contextID,
                messageIDs: messageID.map { [$0] } ?? [], into: fields, now: now)
        case .refused(let dropped):
            try? await fields.release(senderID: dropped.senderID, contextID: dropped.contextID)
            refuseTaskData(dropped.messageIDs, sender: dropped.senderID, reason: dropped.reason)
        }
    }

    /// Hands a whole TaskData to `imports`; its messages are confirmed once it is settled. With
    /// too many waiting, it is left in the feed (its chunks stay held) and comes again.
    private func importTaskData(
        _ zip: Data, sender: String, sentAt: Date, contextID: String?, messageIDs: [String],
        into fields: FieldStore, now: Date
    ) async {
        let key = contextID.map { joinKey(sender, $0) } ?? "message\u{0}" + (messageIDs.first ?? "")
        guard !importingKeys.contains(key) else { return }
        guard let imports,
            imports.submit(
                .init(
                    zip: zip, sender: sender, sentAt: sentAt, contextID: contextID, messageIDs: messageIDs,
                    receivedAt: now))
        else {
            logger.warning(
                "\(TaskDataImports.maximumWaiting) TaskData are waiting to be imported; this one is imported when its message comes again"
            )
            comeAgain(sender: sender, contextID: contextID)
            return
        }
        importingKeys.insert(key)
        importingMessages.formUnion(messageIDs)
    }

    /// What `imports` made of a TaskData: confirmed when stored, older or refused; left in the feed
    /// when the store failed or a shutdown stopped it.
    func settle(_ job: TaskDataImports.Job, _ outcome: TaskDataImports.Outcome) async {
        importingKeys.remove(
            job.contextID.map { joinKey(job.sender, $0) } ?? "message\u{0}" + (job.messageIDs.first ?? ""))
        importingMessages.subtract(job.messageIDs)
        let source = TaskDataImports.source(of: job.sender)
        switch outcome {
        case .success(.imported(let report)):
            counters.taskDataImported += 1
            logger.notice(
                "imported \(report.imported.count) fields from TaskData of \(job.zip.count) bytes",
                metadata: [
                    "source": "\(TerminalText.safe(source))", "replaced": "\(report.replaced)",
                    "skipped": "\(report.skipped.count)",
                ])
            confirm(job.messageIDs)
        case .success(.older(let newer)):
            counters.taskDataOlder += 1
            if let contextID = job.contextID { try? await fields?.release(senderID: job.sender, contextID: contextID) }
            logger.info(
                "skipped a TaskData older than the one its sender's fields came from",
                metadata: ["source": "\(TerminalText.safe(source))", "newer": "\(newer.timeIntervalSince1970)"])
            confirm(job.messageIDs)
        case .failure(let error) where error.kind == .store || error.kind == .interrupted:
            // The chunks stay held and the last message unconfirmed: it comes again, and the join with it.
            logger.error("\(error.description); the TaskData is imported when its message comes again")
            comeAgain(sender: job.sender, contextID: job.contextID)
        case .failure(let error):
            if let contextID = job.contextID { try? await fields?.release(senderID: job.sender, contextID: contextID) }
            refuseTaskData(job.messageIDs, sender: job.sender, reason: error.description)
        }
    }

    /// Lets a TaskData's last message, when it comes again, join and import it anew.
    private func comeAgain(sender: String, contextID: String?) {
        heldRestored = false
        if let contextID { joinedContexts[joinKey(sender, contextID)] = nil }
    }

    private func refuseTaskData(_ messageIDs: [String], sender: String, reason: String) {
        counters.taskDataRefused += 1
        counters.lastTaskDataProblem = "refused: " + TerminalText.safe(reason, limit: 300)
        counters.refused += messageIDs.count
        logger.warning(
            "refused a TaskData; its messages are confirmed and nothing changed",
            metadata: ["sender": "\(TerminalText.safe(sender))", "reason": "\(TerminalText.safe(reason, limit: 300))"])
        confirm(messageIDs)
    }

    /// The joins in progress at the last stop, from the held chunks, each dated by its arrival so the
    /// bound on an incomplete TaskData runs across restarts.
    private func restoreHeld(_ fields: FieldStore) async {
        guard !heldRestored else { return }
        heldRestored = true
        let held: [HeldChunk]
        do {
            held = try await fields.heldChunks()
        } catch {
            logger.error("\(error.description); held TaskData chunks are read again later")
            heldRestored = false
            return
        }
        for chunk in held {
            let position = ChunkPosition(
                contextID: chunk.contextID, current: chunk.current, total: chunk.total, totalSize: chunk.totalSize)
            let outcome = joiner.add(
                .init(
                    messageID: chunk.messageID, senderID: chunk.senderID, position: position, sentAt: chunk.sentAt,
                    bytes: chunk.bytes), now: chunk.receivedAt)
            if case .duplicate = outcome { continue }
            await joined(outcome, messageID: nil, into: fields, now: chunk.receivedAt)
        }
        await forgetEvicted(fields)
    }

    /// Contexts the joiner pushed out for newer ones: their held chunks go too, and they count as expired.
    private func forgetEvicted(_ fields: FieldStore) async {
        for dropped in joiner.takeEvicted() {
            counters.taskDataExpired += 1
            counters.lastTaskDataProblem = "given up incomplete: " + TerminalText.safe(dropped.reason, limit: 300)
            logger.warning(
                "gave up an incomplete TaskData",
                metadata: [
                    "sender": "\(TerminalText.safe(dropped.senderID))",
                    "reason": "\(TerminalText.safe(dropped.reason, limit: 300))",
                ])
            try? await fields.release(senderID: dropped.senderID, contextID: dropped.contextID)
        }
    }

    /// Gives up the joins that have waited too long for a chunk, and forgets old finished ones.
    private func expireJoins(now: Date) async {
        joinedContexts = joinedContexts.filter { now.timeIntervalSince($0.value) < joiner.limits.lifetime }
        for dropped in joiner.expire(now: now) {
            counters.taskDataExpired += 1
            counters.lastTaskDataProblem = "given up incomplete: " + TerminalText.safe(dropped.reason, limit: 300)
            logger.warning(
                "gave up an incomplete TaskData",
                metadata: [
                    "sender": "\(TerminalText.safe(dropped.senderID))",
                    "reason": "\(TerminalText.safe(dropped.reason, limit: 300))",
                ])
            try? await fields?.release(senderID: dropped.senderID, contextID: dropped.contextID)
        }
    }

    private func joinKey(_ sender: String, _ context: String) -> String { sender + "\u{0}" + context }

    private func confirm(_ ids: [String]) {
        toConfirm += ids.filter { !toConfirm.contains($0) }
    }

    /// The next confirm's ids, taken out of the queue, or nil if none wait.
    private func takeConfirmBatch() -> [String]? {
        guard !toConfirm.isEmpty else { return nil }
        let batch = Array(toConfirm.prefix(configuration.confirmBatch))
        toConfirm.removeFirst(batch.count)
        return batch
    }

    /// A confirm that did not go out: its ids first in line again.
    private func giveBack(_ request: Request) {
        if case .confirm(let ids) = request { toConfirm.insert(contentsOf: ids, at: 0) }
    }

    // MARK: - Requests

    /// Makes the most urgent request that is due, if any: confirms first (agrirouter re-delivers
    /// what is not confirmed), then names, then feed queries and clean-up. Returns whether it sent one.
    /// Without `confirming`, confirms are left for the publisher's request (`confirmToRideAlong`).
    @discardableResult
    public func step(now: Date? = nil, confirming: Bool = true) async throws(GatewayError) -> Bool {
        let now = now ?? TrueTime.bestGuess(clock)
        expireUnanswered(now: now)
        if fields != nil { await expireJoins(now: now) }
        if let listedAt, now.timeIntervalSince(listedAt) >= configuration.endpointRefresh { listWanted = true }
        if let due = nextSafetyQuery, now >= due, query == nil {
            query = (
                now.addingTimeInterval(-configuration.safetyQueryInterval - configuration.catchUpWindow), now,
                configuration.maximumPages
            )
            nextSafetyQuery = now.addingTimeInterval(configuration.safetyQueryInterval)
        }
        guard let request = nextRequest(confirming: confirming) else { return false }
        let sent: EncodedMessage
        do throws(GatewayError) {
            sent = try await connection.send(
                request.technicalMessageType, payload: request.payload(retention: configuration.feedRetention),
                for: .reader)
        } catch {
            giveBack(request)
            throw error
        }
        switch request {
        case .listEndpoints: listWanted = false
        case .query:
            query = nil
            counters.queries += 1
        case .delete: deleteBefore = nil
        case .confirm: break
        }
        awaiting[sent.applicationMessageID] = (request, now)
        return true
    }

    /// The confirm due, as a message for the publisher's request. Every request counts against the
    /// spacing, and a confirm of its own put the next publish off by a whole slot each time another
    /// machine pushed: with two machines sharing over MQTT, a position went out every 10 s, not 5.
    public func confirmToRideAlong(now: Date? = nil) -> AgrirouterConnection.Outgoing? {
        guard riding == nil, let batch = takeConfirmBatch() else { return nil }
        let request = Request.confirm(batch)
        let message = AgrirouterConnection.Outgoing(
            request.technicalMessageType, payload: request.payload(retention: configuration.feedRetention),
            recipient: .reader)
        riding = (message.applicationMessageID, request, now ?? TrueTime.bestGuess(clock))
        return message
    }

    /// Whether the confirm from `confirmToRideAlong` went out (or may have): its answer is then
    /// awaited; otherwise its ids wait for the next request, first in line.
    public func rodeAlong(sent: Bool) {
        guard let riding else { return }
        self.riding = nil
        if sent {
            awaiting[riding.id] = (riding.request, riding.sentAt)
        } else {
            giveBack(riding.request)
        }
    }

    private func nextRequest(confirming: Bool) -> Request? {
        let inFlight = awaiting.values.map(\.request)
        if confirming, let batch = takeConfirmBatch() { return .confirm(batch) }
        if listWanted, !inFlight.contains(where: { if case .listEndpoints = $0 { true } else { false } }) {
            return .listEndpoints
        }
        // A next page is only there once the previous one is confirmed.
        let readingFeed = inFlight.contains { if case .listEndpoints = $0 { false } else { true } }
        if let query, !readingFeed { return .query(from: query.from, to: query.to, pagesLeft: query.pagesLeft) }
        if let deleteBefore, query == nil, !readingFeed { return .delete(before: deleteBefore) }
        return nil
    }

    private func expireUnanswered(now: Date) {
        for (id, entry) in awaiting where now.timeIntervalSince(entry.sentAt) >= configuration.answerTimeout {
            awaiting[id] = nil
            logger.warning("no answer to \(entry.request.name) in \(Int(configuration.answerTimeout)) s")
            if case .listEndpoints = entry.request { listWanted = true }
        }
    }
}

extension FeedReader.Request {
    var name: String { technicalMessageType }

    var technicalMessageType: String {
        switch self {
        case .listEndpoints: return TechnicalMessageType.listEndpoints
        case .query: return TechnicalMessageType.feedMessageQuery
        case .confirm: return TechnicalMessageType.feedConfirm
        case .delete: return TechnicalMessageType.feedDelete
        }
    }

    func payload(retention: Double) -> any SwiftProtobuf.Message {
        switch self {
        case .listEndpoints:
            var query = Agrirouter_Request_Payload_Account_ListEndpointsQuery()
            query.technicalMessageType = TechnicalMessageType.gpsInfo
            query.direction = .sendReceive
            return query
        case .query(let from, let to, _):
            var query = Agrirouter_Feed_Request_MessageQuery()
            query.validityPeriod = .between(from, to)
            return query
        case .confirm(let ids):
            var confirm = Agrirouter_Feed_Request_MessageConfirm()
            confirm.messageIds = ids
            return confirm
        case .delete(let before):
            var delete = Agrirouter_Feed_Request_MessageDelete()
            delete.validityPeriod = .between(before.addingTimeInterval(-retention), before)
            return delete
        }
    }
}

extension Agrirouter_Feed_Request_ValidityPeriod {
    static func between(_ from: Date, _ to: Date) -> Self {
        var period = Self()
        period.sentFrom = Google_Protobuf_Timestamp(date: from)
        period.sentTo = Google_Protobuf_Timestamp(date: to)
        return period
    }
}
