import AgrirouterLink
import AgrirouterWire
import BlockingWork
import Bounds
import Clocks
import Foundation
import GNSS
import Spool
import StateDirectory
import StateFiles
import Synchronization

/// What `agrigps status` reports, read from the state directory alone: the daemon's heartbeat, the
/// credentials (never the secret), the spool and the store of other machines.
public struct StatusSnapshot: Sendable {
    public enum Daemon: Sendable, Equatable {
        case running(pid: Int32, heartbeatAge: Double)
        /// Its process is there but the heartbeat is older than allowed: the work loop is stuck.
        case stalled(pid: Int32, heartbeatAge: Double)
        /// No heartbeat, or its process is gone.
        case notRunning(lastHeartbeat: Date?)
    }

    public var takenAt: Date
    public var daemon: Daemon
    public var heartbeat: Heartbeat?
    /// nil when not onboarded.
    public var environment: String?
    public var credentialsProblem: String?
    /// The endpoint certificate's expiry: from the credential when status may read it, else the heartbeat's copy.
    public var certificateNotAfter: Date?
    public var spool: SpoolStatus?
    public var spoolProblem: String?
    /// What only the running daemon knows of its spool, from its heartbeat: why the spool cannot
    /// store (a read-only or damaged file the file itself does not show), and what it holds in memory.
    public var storageFault: String?
    public var others: OthersView
    public var othersProblem: String?
    /// State files replaced by something that is not a regular file (a FIFO, a device, a link): each
    /// is refused unread, and says so.
    public var fileProblems: [String] = []
    /// Set when the state directory itself cannot be read (permissions): nothing can be judged.
    public var unreadable: String?
    /// Bytes free for the daemon's user on the disk that holds the state directory; nil if unknown.
    public var diskFree: Int64?
    public var stateDirectory = ""
    /// Seconds the system had been running at `takenAt`, by the monotonic clock (which counts from
    /// boot and which setting the system clock does not move); nil when unknown, and then no age is
    /// bounded. No age a look computes is longer: see `age(since:)`.
    public var sinceBoot: Double?

    /// Less than this free and the spool cannot grow: the daemon holds new samples in memory only.
    public static let diskFullBelow: Int64 = 1 << 20
    /// Less than this free: the spool could not reach its default cap (64 MiB).
    public static let diskLowBelow: Int64 = 64 << 20
    /// Active, stale and gone machines, and our own name: from the store, or the heartbeat's copy.
    public var othersCounts = Heartbeat.OthersCounts(active: 0, stale: 0, gone: 0)

    public struct Paths: Sendable {
        public var stateDirectory: String
        public var spool: String
        public var others: String
        public var heartbeat: String

        public init(stateDirectory: String, spool: String, others: String, heartbeat: String) {
            self.stateDirectory = stateDirectory
            self.spool = spool
            self.others = others
            self.heartbeat = heartbeat
        }
    }

    /// The two databases' readers, for a caller that looks again and again (the cab view): kept
    /// open between looks rather than opened, with a thread each, every time.
    public struct Readers: Sendable {
        public var spool: SpoolReader
        public var others: OtherMachinesStore
        var files: FileReads

        /// `executor`: the thread the small files are read on; the cab view gives the one its
        /// readers share, so that a look switches no thread.
        public init(
            spool: SpoolReader, others: OtherMachinesStore,
            executor: DedicatedThreadExecutor = DedicatedThreadExecutor(name: "agrigps-look")
        ) {
            self.spool = spool
            self.others = others
            files = FileReads(executor: executor)
        }
    }

    /// The small files' reads on a thread kept for them, rather than one started for every look.
    actor FileReads {
        private nonisolated let executor: DedicatedThreadExecutor
        nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

        /// The heartbeat as last decoded, with its file's stamp: the daemon writes it every 10 s at
        /// most, and the cab view looks every second.
        private var heartbeat: (stamp: FileStamp, value: Heartbeat?)?

        func read(_ paths: Paths, now: Date, sinceBoot: Double?, heartbeatLimit: Double) -> StatusSnapshot {
            StatusSnapshot.readFiles(paths, now: now, sinceBoot: sinceBoot, heartbeatLimit: heartbeatLimit) { path in
                let stamp = FileStamp.of(path)
                if let heartbeat, heartbeat.stamp == stamp, stamp != FileStamp.absent { return heartbeat.value }
                let value = Heartbeat.read(from: path)
                heartbeat = (stamp, value)
                return value
            }
        }

        init(executor: DedicatedThreadExecutor) {
            self.executor = executor
        }
    }

    /// Reads everything; a part that cannot be read is reported as a problem, not thrown, so status
    /// always has something to say. `readers`, when given, are used instead of readers opened for this look.
    /// Runs on the caller's actor: the cab view's shares its thread with its readers, and a look then
    /// switches no thread at all.
    /// `sinceBoot` is the monotonic clock's reading at `now`: a test gives its own, to look in virtual time.
    public static func gather(
        _ paths: Paths, now: Date = Date(), sinceBoot: Double? = uptime(), heartbeatLimit: Double = 120,
        staleAfter: Double = 300,
        readers: Readers? = nil, isolation: isolated (any Actor)? = #isolation
    ) async -> StatusSnapshot {
        // File reads, and the key's decryption to check the certificate: blocking work, off the pool.
        var snapshot =
            if let readers {
                await readers.files.read(paths, now: now, sinceBoot: sinceBoot, heartbeatLimit: heartbeatLimit)
            } else {
                await onOwnThread { readFiles(paths, now: now, sinceBoot: sinceBoot, heartbeatLimit: heartbeatLimit) }
            }
        let heartbeat = snapshot.heartbeat
        if snapshot.spoolProblem == nil {
            // Read-only: a look must never change, migrate or move aside the daemon's file.
            do {
                try await snapshot.readSpool(readers?.spool ?? SpoolReader(path: paths.spool))
            } catch {
                if let counts = heartbeat?.spool {
                    snapshot.spool = SpoolStatus(counts)
                } else {
                    snapshot.spoolProblem = error.description
                }
            }
        }
        do {
            snapshot.others = try await (readers?.others ?? OtherMachinesStore(readingOnly: paths.others)).view(
                now: now, staleAfter: staleAfter)
            snapshot.othersCounts = Heartbeat.OthersCounts(snapshot.others)
        } catch {
            if let counts = heartbeat?.others {
                snapshot.othersCounts = counts
            } else {
                snapshot.othersProblem = error.description
            }
        }
        return snapshot
    }

    /// The spool's counts, on the clock its samples were measured with, and what only the running
    /// daemon knows of them from its heartbeat.
    mutating func readSpool(_ reader: SpoolReader, isolation: isolated (any Actor)? = #isolation)
        async throws(SpoolError)
    {
        takeSpool(try await reader.status(now: spoolTime))
    }

    /// The time a spool's counts are read at for this look: ages on the clock its samples were measured with.
    public var spoolTime: Date { Self.trueNow(takenAt, heartbeat: heartbeat, daemon: daemon) }

    /// The spool's counts read at `spoolTime`, with what only the running daemon knows of them.
    public mutating func takeSpool(_ status: SpoolStatus) {
        spool = status
        // Read at the clock the heartbeat's error makes of now: just after a step from 1970, 56 years ahead.
        let oldest = status.oldestPendingAge.map(bounded)
        spool?.oldestPendingAge = oldest
        if case .running = daemon, let counts = heartbeat?.spool {
            storageFault = counts.storageFault
            spool?.heldInMemory = counts.heldInMemory
        }
    }

    /// The same look at `now` when only the spool moved (the cab view, at each sample): the daemon's
    /// state judged again, the small files, the credentials and the other machines as they were,
    /// and the spool's counts still to be read at `spoolTime` (then `takeSpool`), with the new rows
    /// in one transaction. Nil when the spool could not be read before: then only a whole look can
    /// say why (as it can when the read now fails).
    public func respooling(now: Date, sinceBoot: Double? = uptime(), heartbeatLimit: Double) -> StatusSnapshot? {
        guard spool != nil, spoolProblem == nil, unreadable == nil else { return nil }
        var next = self
        next.takenAt = now
        next.sinceBoot = sinceBoot
        next.daemon = Self.daemonState(heartbeat, now: now, sinceBoot: sinceBoot, limit: heartbeatLimit)
        return next
    }

    /// The small files and the credentials: everything but the two databases.
    static func readFiles(
        _ paths: Paths, now: Date, sinceBoot: Double?, heartbeatLimit: Double,
        readHeartbeat: (String) -> Heartbeat? = Heartbeat.read(from:)
    ) -> StatusSnapshot {
        let heartbeat = readHeartbeat(paths.heartbeat)
        var snapshot = StatusSnapshot(
            takenAt: now, daemon: daemonState(heartbeat, now: now, sinceBoot: sinceBoot, limit: heartbeatLimit),
            heartbeat: heartbeat, others: OthersView())
        snapshot.sinceBoot = sinceBoot
        for path in [
            paths.heartbeat, paths.stateDirectory + "/endpoint.json", paths.stateDirectory + "/endpoint.secret",
            paths.spool + "-mark",
        ] {
            do { try StateFile.checkKind(path) } catch { snapshot.fileProblems.append(error.description) }
        }
        for path in [paths.spool, paths.others] {
            do { try StateFile.checkDatabase(path) } catch { snapshot.fileProblems.append(error.description) }
        }
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: paths.stateDirectory, isDirectory: &isDirectory)
            || !isDirectory.boolValue
        {
            snapshot.unreadable = "no state directory at \(paths.stateDirectory)"
        } else if access(paths.stateDirectory, R_OK | X_OK) != 0 {
            snapshot.unreadable =
                "cannot read the state directory \(paths.stateDirectory): run as its owner or a member of its group"
        }
        if !FileManager.default.fileExists(atPath: paths.spool) {
            snapshot.spoolProblem = "no spool yet at \(paths.spool): the daemon has not run here"
        }
        snapshot.stateDirectory = paths.stateDirectory
        snapshot.diskFree = freeBytes(on: paths.stateDirectory)
        // The files themselves are the daemon's user's; a member of its group reads the heartbeat's copy.
        do {
            let store = CredentialStore(directory: paths.stateDirectory)
            let fingerprint = store.fingerprint()
            if let known = credentialsSeen.withLock({ $0[paths.stateDirectory] }), known.fingerprint == fingerprint {
                // The same files as at the last look: the key need not be decrypted again.
                (snapshot.environment, snapshot.certificateNotAfter) = (known.environment, known.notAfter)
            } else {
                let stored = try store.load()
                snapshot.environment = stored?.environment
                snapshot.certificateNotAfter = try? stored?.credentials?.check().notAfter
                credentialsSeen.withLock {
                    $0[paths.stateDirectory] = (fingerprint, snapshot.environment, snapshot.certificateNotAfter)
                }
            }
        } catch {
            if let heartbeat {
                snapshot.environment = heartbeat.environment
            } else {
                snapshot.credentialsProblem = error.description
            }
            snapshot.certificateNotAfter = heartbeat?.certificateNotAfter
        }
        return snapshot
    }

    /// What the credentials said at the last look, by state directory, with the files' fingerprint
    /// (inode, size and time of both): a look a second must not decrypt the key every time.
    private static let credentialsSeen = Mutex<
        [String: (fingerprint: [FileStamp], environment: String?, notAfter: Date?)]
    >([:])

    /// The system clock corrected by the error the running daemon knows it to have (from a fix or
    /// agrirouter's clock), or else by the skew its last sample saw, so that the spool's ages read on
    /// the clock its samples were measured with; the system clock as it is when no daemon runs or
    /// nothing is known.
    static func trueNow(_ now: Date, heartbeat: Heartbeat?, daemon: Daemon) -> Date {
        guard case .running = daemon,
            let error = heartbeat?.systemClockError ?? heartbeat?.lastSample?.clockSkew, abs(error) < 3.2e9
        else { return now }
        return now.addingTimeInterval(-error)
    }

    /// What statvfs says an unprivileged user may still write there (root's reserve not counted).
    static func freeBytes(on path: String) -> Int64? {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return nil }
        let bytes = Double(info.f_bavail) * Double(info.f_frsize)
        return Bounds.whole(min(bytes, 1e18)).map(Int64.init)
    }

    static func daemonState(_ heartbeat: Heartbeat?, now: Date, sinceBoot: Double? = nil, limit: Double) -> Daemon {
        guard let heartbeat else { return .notRunning(lastHeartbeat: nil) }
        // Signal 0 asks only whether the process exists; EPERM means it does, under another user.
        guard kill(heartbeat.pid, 0) == 0 || errno == EPERM else {
            return .notRunning(lastHeartbeat: heartbeat.updatedAt)
        }
        // A process that runs started in this boot, and wrote its heartbeat since: a stamp older
        // than the boot was made on a clock set forward since (from 1970, by NTP or a fix).
        let age = min(now.timeIntervalSince(heartbeat.updatedAt), sinceBoot ?? .infinity)
        return age > limit
            ? .stalled(pid: heartbeat.pid, heartbeatAge: age) : .running(pid: heartbeat.pid, heartbeatAge: age)
    }
}

extension SpoolStatus {
    /// The counts the daemon last put in its heartbeat.
    init(_ counts: Heartbeat.SpoolCounts) {
        self.init()
        pending = counts.pending
        inFlight = counts.inFlight
        failed = counts.failed
        parked = counts.parked
        withheld = counts.withheld
        heldInMemory = counts.heldInMemory
        oldestPendingAge = counts.oldestPendingAge
        sharingPaused = counts.sharingPaused
        // The heartbeat carries no pause mark: as with a pause written without one, every withheld
        // sample still in the spool is counted (see `SpoolStatus.keptWhilePaused`); the start stays unknown.
        keptWhilePaused = counts.sharingPaused ? counts.withheld : 0
        byOutput = counts.byOutput ?? [:]
        if counts.dropped > 0 { dropped = ["total": counts.dropped] }
    }
}

extension StatusSnapshot {
    /// How long a position may wait, with nothing acknowledged meanwhile, before sharing counts as
    /// offline: three send cycles, and half a minute at least (a cycle's request and its answers).
    public static func lateAfter(sendInterval: Double?) -> Double {
        let interval = sendInterval.flatMap { $0.isFinite ? $0 : nil } ?? 10
        return max(30, 3 * min(max(interval, 0.1), 3600))
    }

    /// Positions are late when the oldest has waited past its send cycles and nothing was
    /// acknowledged in that time; then how long each. A request that hangs fails only at its
    /// timeout (a minute), and a network that drops packets fails nothing at all, so waiting for a
    /// failure says "sharing" while nothing goes out. Acknowledgements arriving while a backlog
    /// drains (oldest first, so its oldest stays old) are not late. The cab's label and `status`
    /// both go by this, so the two never disagree.
    public func positionsLate() -> (waited: Double, quiet: Double)? {
        guard let waited = spool?.oldestPendingAge, let heartbeat, let quiet = secondsWithoutAcknowledgement() else {
            return nil
        }
        let lateAfter = Self.lateAfter(sendInterval: heartbeat.sendInterval)
        return waited > lateAfter && quiet > lateAfter ? (waited, quiet) : nil
    }

    /// Onboarded on disk, and the running daemon is not: an onboarding it has not taken. A live
    /// daemon takes one within seconds; one replaying a recording never does, and until it starts
    /// again nothing is sent.
    public var credentialsNotTaken: Bool {
        guard case .running = daemon, let heartbeat, environment != nil else { return false }
        return !heartbeat.onboarded
    }

    /// Seconds agrirouter has taken nothing, as the heartbeat tells it (see `Heartbeat.secondsWithoutAcknowledgement`),
    /// never longer than the system has run; nil without a heartbeat.
    public func secondsWithoutAcknowledgement() -> Double? {
        heartbeat.map { bounded($0.secondsWithoutAcknowledgement(at: takenAt)) }
    }
}

extension StatusSnapshot {
    /// Seconds from `time` to this look, never more than the system has run (`sinceBoot`). A box
    /// without a battery-backed clock boots at 1970 and is set right later, by NTP or a fix; for a
    /// while after, the files hold stamps of the old clock, and the heartbeat its old error, and an
    /// age measured across the step came out as 56 years ("no fix for 1795840913 s"). Whatever the
    /// box says it saw, it saw while it ran: a stamp older than the boot is either on a clock since
    /// set forward or from an earlier run, and the time since boot is all the box can vouch for.
    /// (Other machines' ages are not bounded: they are of reports kept across restarts, and a
    /// machine last heard two days ago was.)
    public func age(since time: Date) -> Double {
        bounded(takenAt.timeIntervalSince(time))
    }

    /// `seconds` of age, at most `sinceBoot`.
    func bounded(_ seconds: Double) -> Double {
        guard let sinceBoot, seconds > sinceBoot else { return seconds }
        return sinceBoot
    }

    /// `time`, or the moment the system started when `time` is earlier: for a "since" the page counts from.
    public func sinceBootAtMost(_ time: Date) -> Date {
        guard let sinceBoot else { return time }
        return max(time, takenAt.addingTimeInterval(-sinceBoot))
    }
}

extension StatusSnapshot {
    /// A number of seconds for a status line; checked values never reach Int's ends, and this clamps if one did.
    static func whole(_ value: Double) -> Int { Bounds.whole(value) ?? 0 }

    /// The overall health and every reason for it, worst first.
    ///
    /// The sharing label's state, judged here as the cab view judges it (from `lastState`, the spool's
    /// newest sample when the caller has it, else the heartbeat's last), sets the least it says: what
    /// the label calls act now is CRITICAL, whatever else is found, with what to do.
    public func verdict(_ thresholds: StatusThresholds, lastState: FixState? = nil) -> (
        health: Health, reasons: [String]
    ) {
        // Without the state directory nothing else was read: a missing heartbeat then proves nothing.
        if let unreadable { return (.unknown, [unreadable]) }
        var findings: [(Health, String)] = []
        let diskFull = diskFree.map { $0 < Self.diskFullBelow } ?? false
        switch daemon {
        case .notRunning: findings.append((.critical, "daemon not running"))
        case .stalled(_, let age) where diskFull:
            findings.append(
                (.critical, "no heartbeat for \(Self.whole(age)) s: the daemon cannot write it to a full disk"))
        case .stalled(_, let age): findings.append((.critical, "daemon stalled: no heartbeat for \(Self.whole(age)) s"))
        case .running: break
        }
        if let free = diskFree, diskFull {
            findings.append(
                (
                    .critical,
                    "the disk holding \(TerminalText.safe(stateDirectory, limit: 200)) is full (\(free / 1024) KiB free): "
                        + "new samples are held in memory only and are lost if the daemon stops; free space there"
                ))
        } else if let free = diskFree, free < Self.diskLowBelow {
            findings.append(
                (
                    .warning,
                    "only \(free >> 20) MiB free on the disk holding \(TerminalText.safe(stateDirectory, limit: 200))"
                ))
        }
        for problem in fileProblems { findings.append((.critical, problem)) }
        // A spool file of the wrong kind is among the file problems already: said once.
        if let problem = spoolProblem, spool == nil, !fileProblems.contains(problem) {
            findings.append((.critical, "spool: \(problem)"))
        }
        if let lost = heartbeat?.lostSamples, lost > 0,
            heartbeat?.lostAt.map({ takenAt.timeIntervalSince($0) < Heartbeat.lossReported }) ?? true
        {
            findings.append(
                (.critical, "\(lost) samples lost: " + (heartbeat?.lossReason ?? "the spool could not store them")))
        }
        let label = SharingIndicator(self, lastState: lastState ?? lastSampleState, thresholds: thresholds)
        switch label.state {
        case .noReceiver:
            findings.append(
                (
                    .critical,
                    "no receiver: gpsd sees none, so no position is taken; check the receiver's cable and power"
                ))
        case .gpsdUnreachable:
            findings.append(
                (.critical, "gpsd unreachable, so no position is taken; check that gpsd runs: systemctl status gpsd"))
        default: break  // said below in status's own words, or OK (see `SharingIndicator.State.health`)
        }
        if environment == nil, credentialsProblem == nil { findings.append((.warning, "not onboarded")) }
        if credentialsNotTaken {
            findings.append(
                (
                    .warning,
                    "onboarded, but the running daemon has not taken the credentials; restart it: systemctl restart agrigps"
                ))
        }
        if case .running = daemon {
            let fixAge = heartbeat?.lastFix.map { age(since: $0.sampledAt ?? $0.time) }
            switch fixAge {
            case nil: findings.append((.warning, "no fix yet"))
            case let age? where age > thresholds.fixAgeCritical:
                findings.append((.critical, "no fix for \(Self.whole(age)) s"))
            case let age? where age > thresholds.fixAgeWarning:
                findings.append((.warning, "no fix for \(Self.whole(age)) s"))
            default: break
            }
            if let skew = heartbeat?.lastSample?.clockSkew {
                findings.append((.warning, "system clock off by \(Self.whole(skew)) s"))
            }
        }
        var linkSaid = false  // whether a finding below says why positions wait
        if let spool {
            if let age = spool.oldestPendingAge, age > thresholds.queueAgeCritical {
                findings.append((.critical, "oldest unsent sample waited \(Self.whole(age)) s"))
            } else if let age = spool.oldestPendingAge, age > thresholds.queueAgeWarning {
                findings.append((.warning, "oldest unsent sample waited \(Self.whole(age)) s"))
            }
            // Held in memory is nothing lost yet: a WARNING. What the full memory ring had to drop is lost: CRITICAL.
            if let fault = spool.storageFault?.description ?? storageFault {
                findings.append((.warning, "the spool cannot store: \(TerminalText.safe(fault, limit: 300))"))
            }
            if spool.heldInMemory > 0 {
                findings.append((.warning, "\(spool.heldInMemory) samples held in memory only"))
            }
            if let lost = spool.dropped["memory"], lost > 0 {
                findings.append(
                    (.critical, "\(lost) samples lost: the memory ring overflowed while the spool could not store"))
            }
            if spool.parked > 0 {
                findings.append((.warning, "\(spool.parked) samples parked after repeated refusals"))
            }
            if let refusal = heartbeat?.efdi?.refusal {
                findings.append(
                    (
                        .warning,
                        "agrirouter refused the EFDI device description (\(refusal.joined(separator: ", "))); "
                            + "TimeLogs wait until it takes one, and it is tried again every 5 minutes"
                    ))
            }
            let capped = spool.droppedTotal - (spool.dropped["memory"] ?? 0)
            if capped > 0 { findings.append((.warning, "\(capped) samples dropped by the spool's caps")) }
            if let file = spool.quarantinedFile,
                spool.quarantinedAt.map({ takenAt.timeIntervalSince($0) < 86_400 }) ?? true
            {
                findings.append(
                    (
                        .warning,
                        "a damaged spool was moved aside as \(TerminalText.safe(file, limit: 200)); what it held was not sent"
                    ))
            }
            // Onboarded with samples waiting, and agrirouter has taken none for a while: an outage,
            // even if the daemon itself is fine.
            if environment != nil, spool.waiting > 0, case .running = daemon, let heartbeat,
                let quiet = secondsWithoutAcknowledgement()
            {
                let failing = (heartbeat.transportFailures ?? 0) > 0  // said below, with the reason
                if quiet > thresholds.ackAgeWarning {
                    var reason = "nothing acknowledged for \(Self.whole(quiet)) s"
                    if let next = heartbeat.nextAttemptAt, next > takenAt {
                        reason += "; next attempt in \(Self.whole(next.timeIntervalSince(takenAt))) s"
                    }
                    findings.append((.warning, reason))
                    linkSaid = true
                } else if !failing, let late = positionsLate() {
                    // What the cab's label calls offline, before any request has failed.
                    findings.append(
                        (
                            .warning,
                            "positions late: the oldest waited \(Self.whole(late.waited)) s, "
                                + "nothing acknowledged for \(Self.whole(late.quiet)) s; agrirouter or the network does not answer"
                        ))
                    linkSaid = true
                }
            }
        }
        // Failing now: said at once, not only after `ackAgeWarning` without an acknowledgement.
        if environment != nil, case .running = daemon, let heartbeat, let failures = heartbeat.transportFailures,
            failures > 0
        {
            var reason =
                "agrirouter unreachable: "
                + (heartbeat.lastError.map { TerminalText.safe($0, limit: 200) } ?? "requests fail")
            reason += " (\(failures) failed request\(failures == 1 ? "" : "s") in a row)"
            if let next = heartbeat.nextAttemptAt, next > takenAt {
                reason += "; next attempt in \(Self.whole(next.timeIntervalSince(takenAt))) s"
            }
            findings.append((.warning, reason))
            linkSaid = true
        }
        if environment != nil, heartbeat?.transport == "mqtt", let connection = heartbeat?.connection,
            connection.hasPrefix("taken over")
        {
            findings.append((.warning, "agrirouter MQTT connection \(connection)"))
        }
        if environment != nil, let deleted = heartbeat?.endpointDeletedAt {
            findings.append(
                (
                    .critical,
                    "agrirouter no longer knows this endpoint (since \(ISO8601UTC.string(from: deleted).prefix(16))Z): "
                        + "it was deleted or offboarded; onboard again with a new TAN"
                ))
        }
        if environment != nil, let notAfter = certificateNotAfter {
            let left = notAfter.timeIntervalSince(takenAt)
            if left <= 0 {
                findings.append(
                    (
                        .critical,
                        "the endpoint certificate expired on \(ISO8601UTC.string(from: notAfter).prefix(10)); onboard again"
                    ))
            } else if left < thresholds.certificateWarning {
                findings.append(
                    (
                        .warning,
                        "the endpoint certificate expires in \(Self.whole(left / 86_400)) d; onboard again before then"
                    ))
            }
        }
        // Offline by the label's own rule (a request failed after the last acknowledgement, with no
        // failure counted, as after a refusal) and nothing above said why: said here, so that the
        // label's amber is never an OK.
        if label.state == .offline, !linkSaid {
            let waiting = label.waiting
            findings.append(
                (
                    .warning,
                    "offline: \(waiting) sample\(waiting == 1 ? "" : "s") wait\(waiting == 1 ? "s" : "") to be sent"
                        + (heartbeat?.lastError.map {
                            "; the last request failed: " + TerminalText.safe($0, limit: 200)
                        } ?? "")
                ))
        }
        let sorted = findings.sorted { $0.0 > $1.0 }
        return (sorted.first?.0 ?? .ok, sorted.map(\.1))
    }

    /// The state of the heartbeat's last sample, for a caller without the spool's newest.
    var lastSampleState: FixState? {
        heartbeat?.lastSample.flatMap { FixState(name: $0.state) }
    }
}
