import BlockingWork
import Bounds
import Clocks
import Foundation
import GNSS
import Logging
import Spool
import StateDirectory
import StateFiles

/// Keeps the heartbeat current. A sample whose state differs from the last one is written at once;
/// otherwise the file is written at most every `minimumGap` seconds, so a 1 Hz sampler neither wears
/// the flash with a file per sample nor spends its CPU on them. Status allows 120 s.
actor HeartbeatWriter {
    /// Its calls block on the disk (fsync, SQLite's busy timeout), so they run on a thread of its own,
    /// which ends with it, never on Swift's cooperative pool.
    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-beat")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let path: String
    private let minimumGap: Double
    private var heartbeat: Heartbeat
    /// Monotonic time of the last write and the last count: a system clock stepped back by hours
    /// must not stop the heartbeat for hours.
    private var writtenAt: Double?
    private var countedUptime: Double?
    private var failure: String?
    /// Monotonic times of the start and of the last acknowledgement, for `quietSeconds`.
    private let startedUptime: Double
    private var acknowledgedUptime: Double?
    private let logger = Logger(label: "agrigps.heartbeat")

    /// What the previous run's heartbeat said, read at start.
    let previous: Heartbeat?
    /// The daemon's best known UTC, whose difference from the system clock each write records.
    private let clock: TrueTime?
    private let monotonic: MonotonicClock
    /// What the CAN bus shows, asked at each write.
    private let receiverBus: (@Sendable () -> String?)?
    /// What the machine's bus shows, asked at each write.
    private let machine: (@Sendable () -> Heartbeat.MachineStatus?)?
    /// The work state the newest sample carries ("working", …), nil without one.
    private var newestWork: String?

    init(
        path: String, environment: String?, clock: TrueTime? = nil, monotonic: MonotonicClock = .system,
        sendInterval: Double? = nil, minimumGap: Double = 10,
        receiverBus: (@Sendable () -> String?)? = nil, machine: (@Sendable () -> Heartbeat.MachineStatus?)? = nil
    ) {
        self.path = path
        self.clock = clock
        self.monotonic = monotonic
        startedUptime = monotonic.now()
        self.receiverBus = receiverBus
        self.machine = machine
        self.minimumGap = minimumGap
        var heartbeat = Heartbeat(onboarded: environment != nil)
        heartbeat.environment = environment
        heartbeat.sendInterval = sendInterval
        let previous = Heartbeat.read(from: path)
        self.previous = previous
        heartbeat.spoolRowID = previous?.spoolRowID
        heartbeat.lastFix = previous?.lastFix
        // A loss stays reported after the restart that follows it, for `lossReported`.
        if let lostAt = previous?.lostAt, Date().timeIntervalSince(lostAt) < Heartbeat.lossReported {
            (heartbeat.lostSamples, heartbeat.lossReason, heartbeat.lostAt) = (
                previous?.lostSamples, previous?.lossReason, lostAt
            )
        }
        self.heartbeat = heartbeat
    }

    /// A sample taken, and the spool's row id for it when it was committed.
    func sampled(_ sample: PositionSample, rowID: Int64? = nil) {
        if let rowID { heartbeat.spoolRowID = rowID }
        let summary = Heartbeat.Sample(sample)
        let changed = heartbeat.lastSample?.state != summary.state
        heartbeat.lastSample = summary
        if summary.coordinate != nil { heartbeat.lastFix = summary }
        let work = sample.machine?.work.rawValue
        let workChanged = work != newestWork
        newestWork = work
        writeIfDue(force: changed || workChanged)
    }

    func counted(spool: SpoolStatus, others: OthersView?, feed: FeedReader.Counters? = nil, at time: Date = Date()) {
        heartbeat.spool = Heartbeat.SpoolCounts(spool)
        heartbeat.others = others.map(Heartbeat.OthersCounts.init)
        if let feed, feed.taskDataImported + feed.taskDataRefused + feed.taskDataOlder + feed.taskDataExpired > 0 {
            heartbeat.taskData = Heartbeat.TaskDataCounts(
                imported: feed.taskDataImported, refused: feed.taskDataRefused, older: feed.taskDataOlder,
                expired: feed.taskDataExpired, lastProblem: feed.lastTaskDataProblem)
        }
        heartbeat.countedAt = time
        countedUptime = monotonic.now()
    }

    /// Where EFDI's device description stands, after each send cycle.
    func described(_ state: Publisher.DescriptionState?) {
        heartbeat.efdi = state.map {
            Heartbeat.EFDIDescription(
                teamSetContextID: $0.teamSetContextID, acceptedAt: $0.acceptedAt, refusal: $0.refusal)
        }
    }

    /// The transport and what its connection is doing, after each send cycle.
    func linked(transport: String, state: String) {
        let changed = heartbeat.connection != state
        (heartbeat.transport, heartbeat.connection) = (transport, state)
        if changed { writeIfDue(force: true) }
    }

    func acknowledged(at time: Date = Date()) {
        heartbeat.lastAcknowledgedAt = time
        acknowledgedUptime = monotonic.now()
    }

    func failed(_ error: String, at time: Date = Date()) {
        heartbeat.lastError = error
        heartbeat.lastErrorAt = time
    }

    /// The connection's backoff after a cycle: nil seconds when it is not backing off.
    /// A link that starts or stops failing is written at once, so that status says so within seconds.
    func backingOff(seconds: Double?, failures: Int, at time: Date = Date()) {
        let failing = failures > 0
        let changed = failing != ((heartbeat.transportFailures ?? 0) > 0)
        heartbeat.nextAttemptAt = seconds.map { time.addingTimeInterval($0) }
        heartbeat.transportFailures = failing ? failures : nil
        if changed { writeIfDue(force: true) }
    }

    /// The connection's count of messages dropped unread; logged when it grows.
    func droppedInbound(total: Int) {
        guard total > (heartbeat.droppedInbound ?? 0) else { return }
        logger.warning(
            """
            messages from agrirouter dropped unread: more waited at once than the daemon keeps (1,000 messages or 4 MiB over MQTT, \
            64 pushes for the feed reader); the largest or the oldest went first. A flood of pushes to this endpoint?
            """, metadata: ["dropped": "\(total - (heartbeat.droppedInbound ?? 0))", "total": "\(total)"])
        heartbeat.droppedInbound = total
    }

    func lost(_ count: Int, reason: String?) {
        guard count > 0 else { return }
        let (sum, overflow) = (heartbeat.lostSamples ?? 0).addingReportingOverflow(max(0, count))
        heartbeat.lostSamples = overflow ? Int.max : sum
        heartbeat.lossReason = reason
        heartbeat.lostAt = Date()
    }

    func stored(rowID: Int64) {
        heartbeat.spoolRowID = rowID
    }

    func endpointDeleted(at time: Date?) {
        guard let time, heartbeat.endpointDeletedAt == nil else { return }
        heartbeat.endpointDeletedAt = time
        writeIfDue(force: true)
    }

    func certificate(notAfter: Date?) {
        heartbeat.certificateNotAfter = notAfter
    }

    func beat(now: Date = Date()) {
        writeIfDue(now: now, force: true)
    }

    /// Written if the last write is `minimumGap` old.
    func refresh(now: Date = Date()) {
        writeIfDue(now: now)
    }

    private func writeIfDue(now: Date = Date(), force: Bool = false) {
        guard force || writtenAt.map({ monotonic.now() - $0 >= minimumGap }) ?? true else { return }
        heartbeat.updatedAt = now
        heartbeat.quietSeconds = max(0, monotonic.now() - (acknowledgedUptime ?? startedUptime))
        heartbeat.systemClockError = clock?.systemClockError()
        heartbeat.receiverBus = receiverBus?()
        // The work state as the newest sample carries it (the work switch's part included); a
        // machine known by the switch alone has no signals to list.
        heartbeat.machine =
            machine?() ?? newestWork.map { .init(work: $0, tractorECU: nil, engine: nil, signals: [], notHeard: []) }
        if let newestWork { heartbeat.machine?.work = newestWork }
        do {
            try heartbeat.write(to: path)
            failure = nil
        } catch {
            // Said once for each new reason, not at every write.
            let reason = "\(error)"
            if reason != failure { logger.error("\(reason); agrigps status cannot see this daemon until it is fixed") }
            failure = reason
        }
        writtenAt = monotonic.now()
    }

    /// Whether the counts are older than `seconds` by the monotonic clock.
    func countsOlder(than seconds: Double) -> Bool {
        countedUptime.map { monotonic.now() - $0 >= seconds } ?? true
    }
}
