import BlockingWork
import Bounds
import Clocks
import Foundation
import GNSS
import GRDB
import Logging

/// The durable outbox: every sample is committed here before anything else happens to it, and leaves
/// only when agrirouter has acknowledged the batch it went out in.
///
/// Database work runs synchronously inside the actor, so each call is one atomic step: a slow disk
/// delays the next call rather than interleaving with it. Appends never throw: when the disk refuses
/// a write, the sample waits in a bounded memory ring and is written, in order, with the next append
/// that succeeds.
public actor Spool {
    /// Its calls block on the disk (fsync, SQLite's busy timeout), so they run on a thread of its own,
    /// which ends with it, never on Swift's cooperative pool.
    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-spool")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    public nonisolated let path: String
    let configuration: SpoolConfiguration
    private let logger: Logger
    var database: DatabaseQueue?
    private var fault: SpoolError?
    private var ring: [(sample: PositionSample, wireSize: Int)] = []
    private var ringDropped = 0
    /// Unacknowledged rows and their wire bytes, kept here because COUNT(*) is a table scan.
    private var queued = (rows: 0, bytes: 0)
    private var lastReopen: Double
    private var lastAgeSweep = -Double.infinity
    private var lastCheckpoint = -Double.infinity
    /// Rows finished since the last clearing, when no history is kept; see `acknowledge`.
    private var finishedSinceClearing = 0
    /// How many acknowledged rows wait to be deleted together: about four minutes at 1 Hz.
    static let clearEvery = 256
    /// The outputs samples go out by, as the spool was opened; see `SpoolConfiguration.outputs`.
    private var outputs: [SpoolOutput] {
        didSet { insertSQL = SampleColumns.insert(outputs: outputs) }
    }
    private var insertSQL: String
    /// What became of samples, for the machine's own records: counted inside a transaction into
    /// `uncommitted`, and into `tally` once it commits, so a rolled-back write counts nothing.
    private var tally = DeliveryTally()
    var uncommitted = DeliveryTally()
    /// The note of the highest id committed, rewritten after each append; see `CommitMark`.
    private var mark: CommitMark?
    private var markedID: Int64 = 0
    private var markFailing = false
    /// Whether an open since the last `takeLostRows` (this process's, or another's before it) may
    /// have counted rows lost.
    private var lostRowsMayWait = true
    /// A take waiting to be written in the next append's commit; see `takeBatches(_:byteBudget:now:ridingNextAppendWithin:)`.
    var ridingTake: RidingTake?
    var ridingTakes: UInt64 = 0

    /// Rows still owed to some output and in flight in none: eviction takes the oldest of these.
    /// Withheld rows (taken while sharing was paused) are never sent but count here, so they are the
    /// first to go when space runs out.
    static let unsent = DeliverySQL.migrated.unsent
    /// Rows some output still owes; see `DeliverySQL`.
    static let queued = DeliverySQL.migrated.queued
    /// The time a sample is counted at in the records: its receiver's, else the system's when taken.
    static let takenAt = "COALESCE(receiver_time, sampled_at)"
    /// A row that was to be sent: not withheld while sharing was paused (never to be sent, so not lost
    /// when dropped).
    static let owed = "NOT (" + SpoolOutput.all.map { "\($0.delivery) = 'withheld'" }.joined(separator: " OR ") + ")"
    /// Deletes the acknowledged rows waiting to be cleared when no history is kept: see `acknowledge`.
    static let clearAcknowledged = DeliverySQL.migrated.clearAcknowledged
    /// Rows every output is done with (acknowledged, or not wanted).
    static let finished = DeliverySQL.migrated.finished

    /// `init` from async code: the open (a quick check, migrations, perhaps a rebuild) blocks on the
    /// disk, so it runs on a thread of its own, never on Swift's cooperative pool.
    public static func opening(
        path: String, configuration: SpoolConfiguration = SpoolConfiguration(),
        logger: Logger = Logger(label: "agrigps.spool")
    ) async -> Spool {
        await onOwnThread { Spool(path: path, configuration: configuration, logger: logger) }
    }

    /// Opens (creating if needed) the spool at `path`, blocking the calling thread while it does (see
    /// `opening` for async code). Never fails: a corrupt file is moved aside and a new spool
    /// started; a file that cannot be opened leaves the spool holding samples in memory and trying
    /// again every `reopenInterval`.
    public init(
        path: String, configuration: SpoolConfiguration = SpoolConfiguration(),
        logger: Logger = Logger(label: "agrigps.spool")
    ) {
        self.path = path
        self.configuration = configuration
        self.logger = logger
        lastReopen = configuration.monotonic.now()
        let outputs = SpoolConfiguration.enabled(configuration.outputs ?? [.gpsInfo])
        self.outputs = outputs
        insertSQL = SampleColumns.insert(outputs: outputs)
        switch SpoolFile.open(path: path, configuration: configuration, logger: logger) {
        case .success(let opened):
            self.database = opened.database
            self.queued = opened.queued
            self.outputs = opened.outputs
            insertSQL = SampleColumns.insert(outputs: opened.outputs)
            (mark, markedID) = Self.checkMark(
                opened, path: path, keeping: configuration.keepsCommitMark, logger: logger)
        case .failure(let error):
            logger.error("\(error.description); holding samples in memory until it can be written")
            fault = error
        }
    }

    /// Why the spool will not be opened by this version at all (a newer agrigps wrote it), so that
    /// the daemon refuses to start rather than hold samples in memory it can never store.
    public var refusal: SpoolError? { fault?.kind == .newerVersion ? fault : nil }

    /// The outputs each sample waits for, as the spool was opened.
    public var enabledOutputs: [SpoolOutput] { outputs }

    // MARK: - Appending

    /// Commits `sample` before returning, unless the disk refuses; see `AppendOutcome`.
    @discardableResult
    public func append(_ sample: PositionSample) -> AppendOutcome {
        append([sample]).last ?? .heldInMemory(fault ?? notOpen)
    }

    /// Commits several samples in one transaction (one disk sync for all of them).
    @discardableResult
    public func append(_ samples: [PositionSample]) -> [AppendOutcome] {
        let incoming = samples.map { (sample: $0, wireSize: configuration.wireSize($0)) }
        guard let database = database ?? reopenIfDue() else { return hold(incoming) }
        let writes = ring + incoming
        do {
            let now = configuration.clock().timeIntervalSince1970
            let recovered = fault
            uncommitted = DeliveryTally()
            var rode: Result<[SpoolBatch], SpoolError>?
            let (ids, added) = try database.write { db in
                if let recovered {
                    try SpoolState.set("last_storage_fault", number: now, text: recovered.description, in: db)
                }
                let inserted = try insert(writes, at: now, into: db)
                if let ridingTake { rode = ride(ridingTake, in: db) }
                return inserted
            }
            // Only a committed transaction changes the counts, and hands over the take it carried.
            if let rode, let riding = ridingTake {
                ridingTake = nil
                riding.finish(rode)
            }
            tally.merge(uncommitted)
            queued.rows += added.rows
            queued.bytes += added.bytes
            if let recovered {
                logger.notice(
                    "spool writable again after \(recovered.kind.rawValue); wrote \(ring.count) samples held in memory")
            }
            fault = nil
            ring.removeAll()
            ringDropped = 0
            noteMark(committed: ids.max())
            logCommits(ids: ids, samples: writes.map(\.sample))
            return ids.suffix(incoming.count).map { .stored(rowID: $0) }
        } catch {
            let spoolError = storageError(error)
            if spoolError != fault { logger.error("\(spoolError.description); holding samples in memory") }
            fault = spoolError
            if spoolError.kind == .corrupt { self.database = nil }  // reopening quarantines it
            if spoolError.kind == .diskFull { checkpointIfDue(database) }
            return hold(incoming)
        }
    }

    /// Writes the commit mark after a commit: the highest id so far, and the rows owed now.
    private func noteMark(committed id: Int64? = nil) {
        guard let mark else { return }
        markedID = max(markedID, id ?? 0)
        let noted = mark.write(CommitMark.Note(highestID: markedID, owed: Int64(max(0, queued.rows))))
        if !noted, !markFailing {
            logger.warning("cannot write \(mark.path); a damaged write-ahead log would go uncounted")
        }
        markFailing = !noted
    }

    /// At debug level, one line per committed sample: its row id, state and time in milliseconds, and
    /// whose clock that time is (`receiver`, sent as it is, or `system`, which is corrected to the best
    /// known UTC when sent). A record kept elsewhere (the field rig's serial console) can then be held
    /// against what the spool and agrirouter have after a power cut.
    private func logCommits(ids: [Int64], samples: [PositionSample]) {
        guard logger.logLevel <= .debug else { return }
        for (id, sample) in zip(ids, samples) {
            let time = (sample.report?.time ?? sample.sampledAt).timeIntervalSince1970 * 1000
            logger.debug(
                "committed sample",
                metadata: [
                    "id": "\(id)", "state": "\(sample.state.name)",
                    "clock": sample.report?.time == nil ? "system" : "receiver",
                    "time_ms": "\(Bounds.whole(time.rounded()) ?? -1)",
                ])
        }
    }

    /// On a full disk the write-ahead log holds space the main file may not need: moving its pages
    /// home and truncating it lets a nearly full disk take samples again. Tried once per
    /// `reopenInterval`, as it reads and writes the whole log.
    private func checkpointIfDue(_ database: DatabaseQueue) {
        let uptimeNow = configuration.monotonic.now()
        guard uptimeNow - lastCheckpoint >= configuration.reopenInterval else { return }
        lastCheckpoint = uptimeNow
        _ = try? database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
    }

    /// What became of the samples held in memory when the process stops.
    public struct Shutdown: Sendable, Equatable {
        /// Written now, at the last moment.
        public var written = 0
        /// Lost with the process: still unwritable, or dropped earlier from the full memory ring.
        public var lost = 0
        /// Why they could not be written.
        public var fault: SpoolError?
    }

    /// Called once at shutdown: makes a last attempt to write what is held in memory (after a WAL
    /// checkpoint, which gives back the space a full disk may be short of), and says exactly how
    /// many samples are lost if it fails. A loss is never silent.
    public func flushHeld() -> Shutdown {
        guard !ring.isEmpty || ringDropped > 0 else { return Shutdown() }
        let held = ring.count
        let droppedEarlier = ringDropped
        if let database, fault?.kind == .diskFull {
            _ = try? database.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        }
        lastReopen = -Double.infinity  // a last try, not one in five seconds
        _ = append([])
        if ring.isEmpty {
            return Shutdown(written: held, lost: 0)
        }
        for (sample, _) in ring { tally.count(.lost, at: Self.takenAt(sample)) }
        let shutdown = Shutdown(written: 0, lost: ring.count + droppedEarlier, fault: fault)
        logger.critical(
            "\(shutdown.lost) samples held in memory are lost at shutdown: \(fault?.description ?? "the spool cannot store")"
        )
        return shutdown
    }

    /// Inserts and evicts; returns the new row ids and what the transaction adds to the queue.
    private func insert(
        _ writes: [(sample: PositionSample, wireSize: Int)], at now: Double,
        into db: Database
    ) throws -> ([Int64], (rows: Int, bytes: Int)) {
        let statement = try db.cachedStatement(sql: insertSQL)
        var ids: [Int64] = []
        ids.reserveCapacity(writes.count)
        for (sample, wireSize) in writes {
            try statement.execute(arguments: SampleColumns.arguments(sample, wireSize: wireSize))
            ids.append(db.lastInsertedRowID)
        }
        var added = (rows: writes.count, bytes: writes.reduce(0) { $0 + $1.wireSize })
        if ringDropped > 0 { try SpoolState.add(ringDropped, to: "dropped_memory", in: db) }
        try evictOverCaps(adding: &added, now: now, in: db)
        return (ids, added)
    }

    private func hold(_ incoming: [(PositionSample, Int)]) -> [AppendOutcome] {
        ring.append(contentsOf: incoming)
        let excess = ring.count - configuration.memoryRingCapacity
        if excess > 0 {
            for (sample, _) in ring.prefix(excess) { tally.count(.lost, at: Self.takenAt(sample)) }
            ring.removeFirst(excess)
            ringDropped += excess
        }
        let error = fault ?? notOpen
        return incoming.map { _ in .heldInMemory(error) }
    }

    private func reopenIfDue() -> DatabaseQueue? {
        let uptimeNow = configuration.monotonic.now()
        guard uptimeNow - lastReopen >= configuration.reopenInterval else { return nil }
        lastReopen = uptimeNow
        guard case .success(let opened) = SpoolFile.open(path: path, configuration: configuration, logger: logger)
        else {
            return nil
        }
        database = opened.database
        queued = opened.queued
        outputs = opened.outputs
        mark = nil  // closes the old note before the check opens it again
        (mark, markedID) = Self.checkMark(opened, path: path, keeping: configuration.keepsCommitMark, logger: logger)
        lostRowsMayWait = true
        return opened.database
    }

    func storageError(_ error: any Error) -> SpoolError {
        if let error = error as? DatabaseError { return SpoolError(error, path: path) }
        if let error = error as? SpoolError { return error }
        return SpoolError(kind: .database, sqliteCode: 0, message: "\(error)", path: path)
    }

    /// The newer of a sample's system and GNSS times: what the age cap judges it by.
    /// A sample taken while the clock read before 2026 with no receiver time has no true time at all:
    /// it is judged as if new (NULL never compares below the cutoff), so it waits to be sent with its
    /// time left out rather than being deleted as 56 years old.
    static let age =
        "(CASE WHEN receiver_time IS NULL AND sampled_at < \(Int(TrueTime.plausibleFrom.timeIntervalSince1970)) THEN NULL "
        + "ELSE MAX(sampled_at, COALESCE(receiver_time, sampled_at)) END)"

    /// A sample's time on the true clock, for the ages status reports: its GNSS time when it has
    /// one, else its system time less the clock's skew seen when it was taken (a skew out of any
    /// sense counts as none). A sample stamped while the clock read before 2026 with no GNSS time
    /// has no known time (NULL), as for the age cap.
    static let trueTime =
        "(CASE WHEN receiver_time IS NOT NULL THEN receiver_time "
        + "WHEN sampled_at < \(Int(TrueTime.plausibleFrom.timeIntervalSince1970)) THEN NULL "
        + "ELSE sampled_at - (CASE WHEN ABS(clock_skew) < 3.2e9 THEN clock_skew ELSE 0 END) END)"

    // MARK: - Caps

    /// Drops the oldest unsent rows while the spool is over a cap. `added` is what this transaction
    /// adds; it comes back reduced by what was dropped.
    private func evictOverCaps(adding added: inout (rows: Int, bytes: Int), now: Double, in db: Database) throws {
        let uptimeNow = configuration.monotonic.now()
        if uptimeNow - lastAgeSweep >= 60 {
            lastAgeSweep = uptimeNow
            let cutoff = now - configuration.maximumAge
            // Old by both clocks: a box without a battery-backed clock samples at "1970" until NTP
            // runs, and those samples carry their true GNSS time; a replay's GNSS time is years old
            // while its system time is now. Either keeps a sample.
            let old = try Row.fetchOne(
                db,
                sql:
                    "SELECT COUNT(*), TOTAL(\(SampleColumns.wireSizeSQL)) FROM sample WHERE \(Self.unsent) AND \(Self.age) < ?",
                arguments: [cutoff])
            let count: Int = old?[0] ?? 0
            if count > 0 {
                try self.count(
                    .lost, in: db, where: "\(Self.unsent) AND \(Self.age) < ? AND \(Self.owed)", arguments: [cutoff])
                try db.execute(sql: "DELETE FROM sample WHERE \(Self.unsent) AND \(Self.age) < ?", arguments: [cutoff])
                try SpoolState.add(count, to: "dropped_age", in: db)
                added.rows -= count
                added.bytes -= old?.double(at: 1, in: 0...1e15).flatMap(Bounds.whole) ?? 0
            }
        }
        while queued.rows + added.rows > configuration.maximumRows
            || queued.bytes + added.bytes > configuration.maximumBytes
        {
            let reason = queued.rows + added.rows > configuration.maximumRows ? "dropped_rows" : "dropped_bytes"
            let excessRows = max(0, queued.rows + added.rows - configuration.maximumRows)
            let excessBytes = max(0, queued.bytes + added.bytes - configuration.maximumBytes)
            let candidates = try Row.fetchAll(
                db, sql: "SELECT id, wire_size FROM sample WHERE \(Self.unsent) ORDER BY id LIMIT ?",
                arguments: [max(excessRows, 1) + 256])
            guard !candidates.isEmpty else { return }  // only in-flight rows left: wait for them
            var (count, bytes, lastID): (Int, Int, Int64) = (0, 0, 0)
            for row in candidates where count < excessRows || bytes < excessBytes {
                count += 1
                bytes += SampleColumns.wireSize(row)
                lastID = row["id"]
            }
            try self.count(.lost, in: db, where: "\(Self.unsent) AND id <= ? AND \(Self.owed)", arguments: [lastID])
            try db.execute(sql: "DELETE FROM sample WHERE \(Self.unsent) AND id <= ?", arguments: [lastID])
            try SpoolState.add(count, to: reason, in: db)
            added.rows -= count
            added.bytes -= bytes
        }
    }

    /// Counts `event` for each row `condition` selects, by when it was taken.
    private func count(
        _ event: DeliveryTally.Event, in db: Database, where condition: String, arguments: StatementArguments
    ) throws {
        let times = try Row.fetchCursor(
            db, sql: "SELECT \(Self.takenAt) FROM sample WHERE \(condition)", arguments: arguments)
        while let row = try times.next() {
            // the tally checks the range it keeps
            if let time = row.double(at: 0, in: 0...7_258_118_400) { uncommitted.count(event, at: time) }
        }
    }

    /// What a sample held in memory is counted at: the same time `takenAt` reads from a stored row.
    private static func takenAt(_ sample: PositionSample) -> Double {
        (sample.receiverTime ?? sample.sampledAt).timeIntervalSince1970
    }

    /// What became of samples since the last call, by when they were taken; see `DeliveryTally`.
    public func takeDeliveryTally() -> DeliveryTally {
        defer { tally = DeliveryTally() }
        return tally
    }

    // MARK: - Delivery

    /// Takes the oldest samples `output` may send, within `byteBudget` (by their gps:info size; the
    /// publisher, which knows the wire's limits, sets it) and `maximumEntries`, marks them in flight
    /// for it under `id`, and returns them in the order they were taken. Nil when nothing is waiting,
    /// or the output is not enabled.
    public func takeBatch(
        for output: SpoolOutput = .gpsInfo, id: String = UUID().uuidString.lowercased(),
        byteBudget: Int = .max,
        maximumEntries: Int = 20_000, now: Date? = nil
    ) throws(SpoolError) -> SpoolBatch? {
        guard outputs.contains(output) else { return nil }
        let now = (now ?? configuration.clock()).timeIntervalSince1970
        return try write { db in
            try take(for: output, id: id, byteBudget: byteBudget, maximumEntries: maximumEntries, now: now, in: db)
        }
    }

    /// One output's share of a send cycle: see `takeBatches`.
    public struct BatchRequest: Sendable {
        public var output: SpoolOutput
        /// What each entry costs on the wire when the output sizes its entries alike (EFDI's `Time`,
        /// at its upper bound); nil for the row's own gps:info size.
        public var entryCost: Int?
        public var id: String

        public init(output: SpoolOutput, entryCost: Int? = nil, id: String = UUID().uuidString.lowercased()) {
            self.output = output
            self.entryCost = entryCost
            self.id = id
        }
    }

    /// A batch for each request, in one commit (one durable write per send cycle, however many
    /// outputs). Each takes an equal share of what the earlier ones left of `byteBudget`: with both
    /// backlogged they split it, and once one has caught up the next gets all of it. Requests for an
    /// output that is not enabled, or has nothing waiting, give no batch.
    public func takeBatches(_ requests: [BatchRequest], byteBudget: Int, now: Date? = nil) throws(SpoolError)
        -> [SpoolBatch]
    {
        let requests = requests.filter { outputs.contains($0.output) }
        guard !requests.isEmpty else { return [] }
        let now = (now ?? configuration.clock()).timeIntervalSince1970
        return try write { db in try take(requests, byteBudget: byteBudget, now: now, in: db) }
    }

    /// The batches of `takeBatches`, inside a transaction someone else opened.
    func take(_ requests: [BatchRequest], byteBudget: Int, now: Double, in db: Database) throws -> [SpoolBatch] {
        var (remaining, batches) = (max(0, byteBudget), [SpoolBatch]())
        for (index, request) in requests.enumerated() {
            let share = remaining / (requests.count - index)
            let batch: SpoolBatch?
            if let cost = request.entryCost, cost > 0 {
                batch = try take(
                    for: request.output, id: request.id, byteBudget: .max, maximumEntries: max(1, share / cost),
                    now: now, in: db)
                remaining -= (batch?.samples.count ?? 0) * cost
            } else {
                batch = try take(
                    for: request.output, id: request.id, byteBudget: share, maximumEntries: 20_000, now: now, in: db)
                remaining -= batch?.wireBytes ?? 0
            }
            if let batch { batches.append(batch) }
        }
        return batches
    }

    private func take(
        for output: SpoolOutput, id: String, byteBudget: Int, maximumEntries: Int, now: Double,
        in db: Database
    ) throws -> SpoolBatch? {
        let longest = configuration.maximumRetryDelay
        let (sendable, batchID) = (output.sendable, output.batchID)
        let rows = try Row.fetchAll(
            db, sql: "SELECT id, wire_size FROM sample WHERE \(sendable) ORDER BY id LIMIT :limit",
            arguments: ["now": now, "longest": longest, "limit": maximumEntries])
        var (bytes, lastID): (Int, Int64?) = (0, nil)
        guard let firstID: Int64 = rows.first?["id"] else { return nil }
        for row in rows {
            let size = SampleColumns.wireSize(row)
            if lastID != nil && bytes + size > byteBudget { break }
            bytes += size
            lastID = row["id"]
        }
        guard let lastID else { return nil }
        // Sent for the first time by any output: what the records count as sent.
        let neverSent = SpoolOutput.all.map { "\($0.batchID) IS NULL" }.joined(separator: " AND ")
        try count(
            .sent, in: db, where: "\(sendable) AND id <= :last AND \(neverSent)",
            arguments: ["now": now, "longest": longest, "last": lastID])
        // The same predicate over the same prefix of ids marks exactly the rows counted above.
        let number = try SpoolBatches.record(id: id, output: output, first: firstID, last: lastID, sentAt: now, in: db)
        try db.execute(
            sql:
                "UPDATE sample SET \(output.delivery) = 'in_flight', \(batchID) = :batch WHERE \(sendable) AND id BETWEEN :first AND :last",
            arguments: ["batch": number, "now": now, "longest": longest, "first": firstID, "last": lastID])
        let samples = try Row.fetchAll(
            db,
            sql: SampleColumns.select
                + " WHERE id BETWEEN ? AND ? AND \(batchID) = ? AND \(output.delivery) = 'in_flight' ORDER BY id",
            arguments: [firstID, lastID, number])
        return SpoolBatch(id: id, output: output, samples: samples.map(SampleColumns.spooled))
    }

    /// agrirouter acknowledged batch `id` (of whichever output sent it). Samples every enabled output
    /// is now done with leave the spool (a few hundred at a time, or as their history ends); returns
    /// how many. A late acknowledgement for a batch that already went back to pending still counts.
    @discardableResult
    public func acknowledge(batch id: String, now: Date? = nil) throws(SpoolError) -> Int {
        try acknowledge(batches: [id], now: now)
    }

    /// Several acknowledgements in one commit (the answers to one cycle's messages, each output's
    /// batch among them, usually arrive together): one durable write instead of one each.
    @discardableResult
    public func acknowledge(batches ids: [String], now: Date? = nil) throws(SpoolError) -> Int {
        guard !ids.isEmpty else { return 0 }
        let now = (now ?? configuration.clock()).timeIntervalSince1970
        // On a full disk the rows are deleted at once, for the room held samples wait for; even the
        // batch's acknowledgement could need a page the file does not have.
        let full = fault?.kind == .diskFull
        do {
            return try acknowledge(ids, now: now, clearingNow: full)
        } catch  where error.kind == .diskFull && !full {
            return try acknowledge(ids, now: now, clearingNow: true)
        }
    }

    /// Finished rows are not deleted at once but cleared `clearEvery` at a time: deleting a few rows
    /// at each acknowledgement wrote the tree page above them, the free list and the database header
    /// every time (with 1 KiB pages, 6 pages of the log per cycle of 10 samples instead of 2). Until
    /// cleared they count as acknowledged history, which every query leaves aside (`DeliverySQL`).
    private func acknowledge(_ ids: [String], now: Double, clearingNow: Bool) throws(SpoolError) -> Int {
        let (count, bytes, cleared) = try write { db in
            let history = configuration.acknowledgedHistory
            let clearing = clearingNow && history == 0
            if clearing { try db.execute(sql: Self.clearAcknowledged) }
            var finishedNow = (count: 0, bytes: 0)
            for id in ids {
                let finished = try finish(batch: id, now: now, deleting: clearing, in: db)
                finishedNow = (finishedNow.count + finished.count, finishedNow.bytes + finished.bytes)
            }
            if history > 0 {
                try db.execute(sql: "DELETE FROM sample WHERE acknowledged_at < ?", arguments: [now - history])
                return (finishedNow.count, finishedNow.bytes, false)
            }
            guard !clearing else { return (finishedNow.count, finishedNow.bytes, true) }
            guard finishedSinceClearing + finishedNow.count >= Self.clearEvery else {
                return (finishedNow.count, finishedNow.bytes, false)
            }
            try db.execute(sql: Self.clearAcknowledged)
            return (finishedNow.count, finishedNow.bytes, true)
        }
        finishedSinceClearing = cleared ? 0 : finishedSinceClearing + count
        queued.rows -= count
        queued.bytes -= bytes
        noteMark()
        return count
    }

    /// Marks batch `id` acknowledged for the output that sent it, in the batch's row: its samples
    /// still in flight are acknowledged by that alone (see `DeliverySQL`). Those that went back to
    /// pending, or failed, before the answer came are written. Samples no other output waits for are
    /// finished: with history kept they are stamped, and on a full disk (`deleting`) deleted, first,
    /// so that what is written after finds room.
    private func finish(batch id: String, now: Double, deleting: Bool, in db: Database) throws -> (
        count: Int, bytes: Int
    ) {
        var finishedNow = (count: 0, bytes: 0)
        for batch in try SpoolBatches.ranges(of: id, in: db) where !batch.acknowledged {
            let output = batch.output
            let othersDone = SpoolOutput.all.filter { $0 != output }.map {
                "\(DeliverySQL.migrated.delivery($0)) IN \(DeliveryState.done)"
            }
            let rows =
                (["\(batch.rows) AND acknowledged_at IS NULL AND \(output.delivery) NOT IN \(DeliveryState.done)"]
                + othersDone)
                .joined(separator: " AND ")
            // One pass over the finished rows: how many, their bytes, and when each was taken.
            let done = try Row.fetchCursor(
                db, sql: "SELECT \(Self.takenAt), \(SampleColumns.wireSizeSQL) FROM sample WHERE \(rows)")
            while let row = try done.next() {
                finishedNow.count += 1
                finishedNow.bytes += row.int(at: 1, in: 0...1_000_000) ?? 0  // the SQL keeps it in range
                if let time = row.double(at: 0, in: 0...7_258_118_400) { uncommitted.count(.acknowledged, at: time) }
            }
            if deleting {
                try db.execute(sql: "DELETE FROM sample WHERE \(rows)")
            } else if configuration.acknowledgedHistory > 0 {
                try db.execute(
                    sql: "UPDATE sample SET \(output.delivery) = 'acknowledged', acknowledged_at = ? WHERE \(rows)",
                    arguments: [now])
            }
            try SpoolBatches.acknowledge(batch, at: now, in: db)
        }
        return finishedNow
    }

    /// Sending batch `id` failed (agrirouter said ACK_WITH_FAILURE, say). Its samples are retried by
    /// the output that sent them after a growing delay, and parked after `parkAfterFailures` failures.
    public func fail(batch id: String, reason: String, now: Date? = nil) throws(SpoolError) {
        let now = (now ?? configuration.clock()).timeIntervalSince1970
        try write { db in
            // An acknowledged batch stays acknowledged: a failure reported after it changes nothing.
            for batch in try SpoolBatches.ranges(of: id, in: db) where !batch.acknowledged {
                let output = batch.output
                let (attempts, delivery) = (output.attempts, output.delivery)
                try db.execute(
                    sql: """
                        UPDATE sample SET \(attempts) = \(attempts) + 1, \(output.lastError) = :reason,
                            \(delivery) = CASE WHEN \(attempts) + 1 >= :park THEN 'parked' ELSE 'failed' END,
                            \(output.retryAfter) = :now + MIN(:maximum, :delay * (1 << MIN(\(attempts), 30)))
                        WHERE \(batch.rows) AND \(delivery) = 'in_flight'
                        """,
                    arguments: [
                        "reason": reason, "park": configuration.parkAfterFailures, "now": now,
                        "maximum": configuration.maximumRetryDelay, "delay": configuration.retryDelay,
                    ])
            }
        }
    }

    /// Batch `id` was never handed over (no network, say), or its answer did not come within the
    /// outbox's life (`mayHaveArrived`): back to pending with no failure counted. Only the second
    /// kind may reach agrirouter twice, so only its samples count as resent: an outage that fails
    /// every request for an hour resends nothing.
    public func release(batch id: String, mayHaveArrived: Bool = false) throws(SpoolError) {
        try write { db in
            for batch in try SpoolBatches.ranges(of: id, in: db) {
                let released = try batch.release(in: db)
                if mayHaveArrived, released > 0 { try SpoolState.add(released, to: batch.output.resentCounter, in: db) }
            }
        }
    }

    /// Returns in-flight samples older than the timeout to pending; a crash or a lost acknowledgement
    /// becomes a resend, never a loss. For a process other than the publisher, which releases the
    /// batches it gives up on itself, timed on the monotonic clock.
    @discardableResult
    public func reclaimExpiredBatches(now: Date? = nil) throws(SpoolError) -> Int {
        try write { db in try self.reclaimExpired(now: (now ?? configuration.clock()).timeIntervalSince1970, in: db) }
    }

    private func reclaimExpired(now: Double, in db: Database) throws -> Int {
        var reclaimed = 0
        for batch in try SpoolBatches.sent(before: now - configuration.inFlightTimeout, in: db) {
            // Sent, and unanswered: it may have arrived, so its samples go again as resent.
            let released = try batch.release(in: db)
            if released > 0 { try SpoolState.add(released, to: batch.output.resentCounter, in: db) }
            reclaimed += released
        }
        return reclaimed
    }

    /// Batches in flight, with the output that sent them and when: a restarted publisher waits for
    /// their answers instead of resending them.
    public func inFlightBatches() throws(SpoolError) -> [(id: String, output: SpoolOutput, sentAt: Date)] {
        try read { db in
            // Read leniently: a damaged batch row gives no batch (its rows are left to the reclaim) or an unknown time.
            try SpoolBatches.inFlight(in: db).map { batch in
                (
                    id: batch.id, output: batch.output,
                    sentAt: batch.sentAt.map(Date.init(timeIntervalSince1970:)) ?? .distantPast
                )
            }
        }
    }

    /// Parked samples go back to pending, for every output, with their failure counts cleared.
    @discardableResult
    public func retryParked() throws(SpoolError) -> Int {
        try write { db in
            let parked = SpoolOutput.all.map { "\($0.delivery) = 'parked'" }.joined(separator: " OR ")
            let samples = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sample WHERE \(parked)") ?? 0
            for output in SpoolOutput.all {
                try db.execute(
                    sql:
                        "UPDATE sample SET \(output.delivery) = 'pending', \(output.attempts) = 0, \(output.retryAfter) = NULL WHERE \(output.delivery) = 'parked'"
                )
            }
            return samples
        }
    }

    // MARK: - Sharing

    /// Pauses or resumes sharing. While paused, samples are kept as withheld and never sent, because
    /// the user turned sharing off for that time. The setting lives in the database, so another process
    /// (`agrigps pause`) reaches a running daemon through it.
    public func setSharing(paused: Bool) throws(SpoolError) {
        try write { db in try SharingState.set(paused: paused, at: configuration.clock().timeIntervalSince1970, in: db)
        }
    }

    public func isSharingPaused() -> Bool {
        (try? database?.read { db in try String.fetchOne(db, sql: "SELECT text FROM spool_state WHERE name = 'sharing'")
        }) == "paused"
    }

    /// The machine's running totals as the newest sample that had them left them; nil before any.
    public func machineTotals() -> MachineTotals? {
        (try? database?.read { db in try MachineTotalsState.read(db) }) ?? nil
    }

    /// The driver's work switch (`agrigps work`, the cab view), beside the sharing switch: kept across
    /// restarts, read by the daemon at each sample.
    public func setWorkSwitch(on: Bool) throws(SpoolError) {
        try write { db in
            try SpoolState.set(
                "work_switch", number: configuration.clock().timeIntervalSince1970, text: on ? "on" : "off", in: db)
        }
    }

    /// The implement's working width as the driver gave it in the cab view's Settings (metres, within
    /// `MachineReading.workingWidthRange`; the caller checks it by the configuration key's rule); nil
    /// forgets it. Records use it where the configuration sets none.
    public func setWorkingWidth(_ metres: Double?) throws(SpoolError) {
        try write { db in
            if let metres {
                try SpoolState.set("working_width", number: metres, in: db)
            } else {
                try db.execute(sql: "DELETE FROM spool_state WHERE name = 'working_width'")
            }
        }
    }

    /// The width a `spool_state` row keeps (its `number`), within range; nil otherwise.
    static func workingWidth(_ row: Row) -> Double? {
        row.double("number", in: MachineReading.workingWidthRange)
    }

    /// Nil until the switch was first set: a machine whose driver never used it has no work state by it.
    public func workSwitch() -> Bool? {
        switch try? database?.read({ db in
            try String.fetchOne(db, sql: "SELECT text FROM spool_state WHERE name = 'work_switch'")
        }) {
        case "on"?: true
        case "off"?: false
        default: nil
        }
    }

    /// The journal mode and synchronous level of the spool's own connection (SQLite keeps synchronous
    /// per connection, so another connection cannot tell).
    func durability() -> (journalMode: String?, synchronous: Int?) {
        (try? database?.read { db in
            (try String.fetchOne(db, sql: "PRAGMA journal_mode"), try Int.fetchOne(db, sql: "PRAGMA synchronous"))
        }) ?? (nil, nil)
    }

    // MARK: - Status

    public func status(now: Date? = nil) -> SpoolStatus {
        let now = now ?? configuration.clock()
        var status = SpoolStatus()
        status.heldInMemory = ring.count
        status.storageFault = fault
        if ringDropped > 0 { status.dropped["memory"] = ringDropped }
        guard let database else { return status }
        do {
            try database.read { db in try Self.readStatus(db, now: now, into: &status) }
        } catch {
            status.storageFault = storageError(error)
        }
        return status
    }

    /// The counts and notes of `status`, read in one transaction; shared with the read-only `SpoolReader`.
    static func readStatus(_ db: Database, now: Date, into status: inout SpoolStatus) throws {
        let queries =
            DeliverySQL(readingAsItIs: db).batchesAcknowledged ? StatusQueries.migrated : StatusQueries.unmigrated
        // A file of ours is still input: every number is checked before use, so a damaged or
        // edited row gives an unknown, never a trap.
        var oldest: Double?
        for row in try Row.fetchAll(db.cachedStatement(sql: queries.summary)) {
            let states = SpoolOutput.all.indices.map { row.text(at: 1 + $0, limit: 32) }
            let count = row.int(at: 1 + states.count, in: 0...Int.max) ?? 0
            // Queued: not stamped as history, and some output still owes it.
            guard row.int(at: 0, in: 0...1) == 1,
                !states.allSatisfy({ $0.map(DeliveryState.finished.contains) == true })
            else {
                status.acknowledgedKept += count
                continue
            }
            switch DeliveryState.sampleState(states) {
            case "in_flight": status.inFlight += count
            case "failed": status.failed += count
            case "parked": status.parked += count
            case "withheld": status.withheld += count
            default: status.pending += count
            }
            for (output, state) in zip(SpoolOutput.all, states) {
                guard let state, state != DeliveryState.off else { continue }
                status.byOutput[output.name, default: [:]][state, default: 0] += count
            }
            if let waiting = row.double(at: 2 + states.count, in: Bounds.epochSeconds) {
                oldest = min(oldest ?? waiting, waiting)
            }
        }
        // On the true clock on both sides: `now` is the best known UTC (the daemon's, or status's
        // system clock less the skew the daemon last saw), and each sample's time is its GNSS time
        // or its system time less the skew when it was taken. A sample stamped at "1970" is not 56
        // years old, and one taken under a clock 2 h fast is not 2 h old.
        status.oldestPendingAge = oldest.map { max(0, now.timeIntervalSince1970 - $0) }
        let newest = try Row.fetchOne(db.cachedStatement(sql: "SELECT sampled_at FROM sample ORDER BY id DESC LIMIT 1"))
        status.lastAppendAt = newest?.double("sampled_at", in: Bounds.epochSeconds).map {
            Date(timeIntervalSince1970: $0)
        }
        try readNotes(db, into: &status)
    }

    /// The status's query, built once for each kind of file. Statements are cached by their text,
    /// and building these long CASE expressions again at every look (the daemon's and the cab view's,
    /// once a second each) cost more than running them on a small spool.
    struct StatusQueries: Sendable {
        static let migrated = StatusQueries(DeliverySQL.migrated)
        static let unmigrated = StatusQueries(DeliverySQL(batchesAcknowledged: false))

        /// One pass over the rows, grouped by whether a row is still open (not stamped as history)
        /// and by each output's state of it: how many, and the true time of the oldest that an output
        /// waits to send. Each row's states are worked out once; the few groups are folded in Swift.
        /// Four passes (one per count) cost the cab view a millisecond a second on a spool of a few
        /// hundred rows, and grew with a day's backlog.
        let summary: String

        init(_ delivery: DeliverySQL) {
            let states = SpoolOutput.all.indices.map { "state\($0)" }
            let perRow =
                ["acknowledged_at IS NULL AS open"]
                + zip(SpoolOutput.all, states).map { "\(delivery.delivery($0)) AS \($1)" }
                + ["\(Spool.trueTime) AS true_time"]
            // An output's pending and failed rows are so in the row itself: only in-flight ones read their batch.
            let waiting = states.map { "\($0) IN ('pending', 'failed')" }.joined(separator: " OR ")
            summary =
                "SELECT open, \(states.joined(separator: ", ")), COUNT(*), MIN(CASE WHEN \(waiting) THEN true_time END) "
                + "FROM (SELECT \(perRow.joined(separator: ", ")) FROM sample) GROUP BY open, \(states.joined(separator: ", "))"
        }
    }

    /// The counters and notes of `spool_state`, and the pause in force with what it kept.
    private static func readNotes(_ db: Database, into status: inout SpoolStatus) throws {
        var pauseMark: Int?
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT name, number, text FROM spool_state")) {
            guard let name = row.text("name", limit: 100) else { continue }
            let count = row.double("number", in: Bounds.count).flatMap(Bounds.count)
            if name.hasPrefix("dropped_"), let count {
                status.dropped[String(name.dropFirst("dropped_".count)), default: 0] += count
            } else if name == "sharing" {
                status.sharingPaused = row.text("text") == "paused"
                status.pausedSince = status.sharingPaused ? row.date("number") : nil
            } else if name == "work_switch" {
                status.workSwitch = row.text("text", limit: 8).flatMap { $0 == "on" ? true : $0 == "off" ? false : nil }
            } else if name == "working_width" {
                status.workingWidth = workingWidth(row)
            } else if name == "paused_after_id" {
                pauseMark = count
            } else if SpoolOutput.all.contains(where: { $0.resentCounter == name }), let count {
                status.resent += count
            } else if name == "last_storage_fault" {
                status.lastStorageFault = row.text("text")
                status.lastStorageFaultAt = row.date("number")
            } else if name == "quarantined_file" {
                status.quarantinedFile = row.text("text")
                status.quarantinedAt = row.date("number")
            }
        }
        // Counted only while paused: the rest of the time the page's look a second pays nothing for it.
        if status.sharingPaused {
            status.keptWhilePaused = try SharingState.kept(after: pauseMark, withheldInAll: status.withheld, in: db)
        }
    }

    /// Rows committed before this spool was opened and gone since (counted by `CommitMark`), with
    /// what is known of them; taken once, by the daemon, which reports them. Nil when none went.
    public func takeLostRows() -> (count: Int, reason: String)? {
        // Only an open can count a loss: between opens (the daemon asks every 10 s) there is nothing to read.
        guard lostRowsMayWait else { return nil }
        let taken: Row?
        do {
            taken = try write { db in
                let row = try Row.fetchOne(db, sql: "SELECT number, text FROM spool_state WHERE name = 'vanished_rows'")
                try db.execute(sql: "DELETE FROM spool_state WHERE name = 'vanished_rows'")
                return row
            }
        } catch {
            return nil  // the spool cannot be written; the count waits for the next call
        }
        lostRowsMayWait = false
        guard let taken, let count = taken.int("number", in: 1...Int.max) else { return nil }
        return (count, taken.text("text", limit: 400) ?? "the spool lost committed rows")
    }

    /// The highest row id the spool has ever given out (kept past deletions, see `RowIDs`); 0 for a
    /// new spool. A restart that finds it lower than the daemon last saw means committed rows are gone:
    /// a write-ahead log deleted or damaged, or a spool moved aside.
    public func highestRowID() -> Int64? {
        let fetched: Row??
        fetched = try? read { db in try Row.fetchOne(db, sql: "SELECT \(RowIDs.highestSQL)") }
        guard let row = fetched else { return nil }  // the spool cannot be read: nothing can be concluded
        return row?.int(at: 0, in: 0...Int.max).map { Int64($0) } ?? 0
    }

    /// The most recently appended sample still in the spool, whatever its delivery state.
    public func newestSample() throws(SpoolError) -> SpooledSample? {
        try read { db in
            try Row.fetchOne(db, sql: SampleColumns.select + " ORDER BY id DESC LIMIT 1").map(SampleColumns.spooled)
        }
    }

    /// Every spooled sample in append order, whatever its delivery state; for inspection and tests.
    /// Acknowledged rows are left out unless history is kept: without it they have left the spool,
    /// and only wait to be cleared with others.
    public func allSamples() throws(SpoolError) -> [(SpooledSample, delivery: String)] {
        let kept = configuration.acknowledgedHistory > 0 ? "" : " WHERE \(Self.queued)"
        let delivery = DeliverySQL.migrated.delivery(.gpsInfo)
        return try read { db in
            try Row.fetchAll(
                db,
                sql: SampleColumns.select.replacingOccurrences(
                    of: " FROM sample", with: ", \(delivery) AS delivery FROM sample") + kept + " ORDER BY id"
            )
            .map { (SampleColumns.spooled($0), $0.text("delivery", limit: 64) ?? "unreadable") }
        }
    }

    private func read<T>(_ body: (Database) throws -> T) throws(SpoolError) -> T {
        guard let database else { throw fault ?? notOpen }
        do {
            return try database.read(body)
        } catch {
            throw storageError(error)
        }
    }

    private var notOpen: SpoolError {
        SpoolError(kind: .database, sqliteCode: 0, message: "spool not open", path: path)
    }

    /// One transaction, synced to disk before it returns. Takes and acknowledgements too: a take
    /// lost to a power cut after its batch went out, or an acknowledgement lost after agrirouter
    /// took it from the outbox, would have the same samples sent again. They were once left to
    /// the next append's sync, which cost less flash but sent a batch twice after such a cut.
    private func write<T>(_ body: (Database) throws -> T) throws(SpoolError) -> T {
        guard let database else { throw fault ?? notOpen }
        do {
            uncommitted = DeliveryTally()
            let result = try database.write(body)
            tally.merge(uncommitted)
            return result
        } catch {
            throw storageError(error)
        }
    }
}

/// The commit mark's comparison at open (see `CommitMark`).
extension Spool {
    /// Why rows the mark says were committed are not in the spool just opened.
    enum VanishCause {
        /// Its write-ahead log deleted or damaged, or the file put back from an older copy.
        case damaged
        /// The file was corrupt and moved aside, rows and all, to `aside`.
        case quarantined(aside: String)
    }

    /// Compares the spool just opened with its commit mark. Rows committed before and missing now are
    /// counted, kept as `vanished_rows` until the daemon takes them, and their ids are never given out
    /// again. Returns the mark, open for the commits to come when this spool keeps it, and the highest
    /// id noted. When the comparison fails, the mark is left as it is, to be compared at the next open.
    static func checkMark(_ opened: SpoolFile.Opened, path: String, keeping: Bool, logger: Logger) -> (
        CommitMark?, Int64
    ) {
        let (database, owed) = (opened.database, opened.queued.rows)
        let cause = opened.quarantined.map { VanishCause.quarantined(aside: $0) } ?? .damaged
        let markPath = path + "-mark"
        let noted = CommitMark.read(markPath)
        let highest: Int64
        do {
            highest = try database.write { db -> Int64 in
                let highest =
                    try Row.fetchOne(db, sql: "SELECT \(RowIDs.highestSQL)")?.int(at: 0, in: 0...Int.max).map {
                        Int64($0)
                    } ?? 0
                guard let noted, noted.highestID > highest else { return highest }
                try recordVanished(from: highest + 1, noted: noted, cause: cause, in: db)
                return noted.highestID
            }
        } catch {
            logger.error("cannot compare the spool with its commit mark: \(error); compared again at the next open")
            return (nil, noted?.highestID ?? 0)
        }
        guard keeping else { return (nil, highest) }
        do {
            let mark = try CommitMark(path: markPath)
            if !mark.write(CommitMark.Note(highestID: highest, owed: Int64(max(0, owed)))) {
                logger.warning("cannot write \(markPath)")
            }
            return (mark, highest)
        } catch {
            logger.warning("\(error.description); a damaged write-ahead log would go uncounted")
            return (nil, highest)
        }
    }

    /// Ids `first` to the noted highest were committed and are gone. Of them, at most as many as were
    /// owed when the mark was written had not been acknowledged by every output: exactly that many
    /// when every row ever committed was still owed (a box offline, not onboarded), else up to that.
    /// The daemon reports them (`takeLostRows`), whichever process opened the spool first.
    private static func recordVanished(from first: Int64, noted: CommitMark.Note, cause: VanishCause, in db: Database)
        throws
    {
        let last = noted.highestID
        let gone = last - first + 1
        let lost = min(gone, noted.owed)
        let exact = noted.owed >= last
        let why: String
        switch cause {
        case .damaged: why = "its write-ahead log was deleted or damaged, or the file replaced by an older copy"
        case .quarantined(let aside):
            why = "the file was corrupt and moved aside to \(aside), where they may still be read"
        }
        let reason =
            exact
            ? "the spool lost \(lost) committed samples (ids \(first) to \(last)) that were never sent: \(why)"
            : "the spool lost up to \(lost) samples not acknowledged by every output, of \(gone) committed (ids \(first) to \(last)) "
                + "and gone since: \(why)"
        try SpoolState.set("highest_id", number: Double(last), in: db)
        guard lost > 0 else { return }
        try db.execute(
            sql: """
                INSERT INTO spool_state (name, number, text) VALUES ('vanished_rows', ?, ?)
                ON CONFLICT(name) DO UPDATE SET number = number + excluded.number, text = excluded.text
                """, arguments: [lost, reason])
    }
}

/// The machine's running totals: each sample's row carries them, and a row that leaves the queue
/// with totals newer than those kept in `spool_state` leaves them there (a trigger, whatever deletes
/// it), so that a restart goes on from them when every row has been acknowledged and deleted.
enum MachineTotalsState {
    /// What each total may be, as it is kept and read back: EFDI's 32-bit values, in seconds and millilitres.
    static let range = 0...Double(Int32.max)

    /// Keeps the totals of a deleted row if it is newer than the row whose totals are kept (the
    /// row's id in `number`; none in what versions before kept, written at every append, and none
    /// when it is not a number, as `read` takes it).
    static let keptOnDelete = """
        CREATE TRIGGER sample_leaves_machine_totals AFTER DELETE ON sample
        WHEN typeof(OLD.machine_effective_s) = 'real' AND typeof(OLD.machine_ineffective_s) = 'real'
          AND typeof(OLD.machine_fuel_ml) = 'real'
          AND OLD.id > COALESCE((SELECT number FROM spool_state WHERE name = 'machine_totals'
                                 AND typeof(number) IN ('integer', 'real')), -1)
        BEGIN
          INSERT OR REPLACE INTO spool_state (name, number, text) VALUES ('machine_totals', OLD.id,
            printf('%.17g %.17g %.17g %.17g', OLD.machine_effective_s, OLD.machine_ineffective_s, OLD.machine_fuel_ml,
                   CASE typeof(OLD.machine_engine_s) WHEN 'real' THEN OLD.machine_engine_s ELSE 0 END));
        END
        """

    /// The newest totals: those of the newest row that has them, or, when no row newer than the
    /// one they were kept from has any, those kept. Nil when there are none, or what is kept is not
    /// three or four numbers within EFDI's 32 bits (three: kept before the engine's total was,
    /// which then counts from 0).
    static func read(_ db: Database) throws -> MachineTotals? {
        let kept = try Row.fetchOne(db, sql: "SELECT number, text FROM spool_state WHERE name = 'machine_totals'")
        let keptID = kept?.double(at: 0, in: 0...9e15) ?? -1
        if let row = try Row.fetchOne(
            db,
            sql: """
                SELECT machine_effective_s, machine_ineffective_s, machine_fuel_ml, machine_engine_s FROM sample
                WHERE id > ? AND machine_effective_s IS NOT NULL ORDER BY id DESC LIMIT 1
                """, arguments: [keptID]), let totals = SampleColumns.totals(row)
        {
            return totals
        }
        guard let text = kept?.text(at: 1, limit: 200) else { return nil }
        let words = text.split(separator: " ")
        let numbers = words.compactMap { Double($0) }.filter(range.contains)
        guard numbers.count == words.count, (3...4).contains(numbers.count) else { return nil }
        return MachineTotals(
            effectiveSeconds: numbers[0], ineffectiveSeconds: numbers[1], fuelMillilitres: numbers[2],
            engineSeconds: numbers.count == 4 ? numbers[3] : 0)
    }
}

/// Numbers and notes kept beside the queue, in the same database: one row each in `spool_state`.
enum SpoolState {
    static func set(_ name: String, number: Double? = nil, text: String? = nil, in db: Database) throws {
        // Cached: an append runs this in every transaction.
        try db.cachedStatement(
            sql:
                "INSERT INTO spool_state (name, number, text) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET number = excluded.number, text = excluded.text"
        )
        .execute(arguments: [name, number, text])
    }

    static func add(_ count: Int, to name: String, in db: Database) throws {
        try db.cachedStatement(
            sql:
                "INSERT INTO spool_state (name, number) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET number = number + excluded.number"
        )
        .execute(arguments: [name, count])
    }
}
