import AgrirouterLink
import AgrirouterWire
import BlockingWork
import Bounds
import Clocks
import Fields
import Foundation
import GNSS
import Logging
import Spool
import StateDirectory
import StateFiles
import StateView

/// Watches the state directory for the page process: woken when a file it reads is written (or
/// every `pollInterval` where inotify cannot watch), a cheap look at the files' stamps, and a full
/// read only when something changed, or every `refreshInterval` so that ages and staleness move on.
///
/// The monitor and its readers share one thread: the reads block on SQLite and the disk, and a
/// rebuild goes from one reader to the next without a thread switch, where four hops between
/// threads a second were most of the page process's CPU.
actor CabMonitor {
    struct Settings: Sendable {
        var paths: StatusSnapshot.Paths
        var thresholds: StatusThresholds
        var environments: [String]
        /// Another machine that has not moved this far for this long is announced.
        var notMovingAfter: Double = 600
        var workSwitchCounts = true
        /// [machine] working_width: it stands over the driver's width from Settings.
        var workingWidth: Double?
        var pollInterval: Double = 0.25
        var refreshInterval: Double = 5
        /// Own positions kept for the trail, and the span they cover: the last hour by default.
        var trackLimit = 3600
        var trailSeconds: Double = 3600
    }

    /// One announcement on the page and in the journal.
    struct Notice: Codable, Equatable, Sendable {
        var sequence: Int
        var kind: String
        /// In English, for the journal and a page without the words for `key`.
        var text: String
        var at: String
        /// The page's catalogue key for the words, and what fills them in: names as they came
        /// (set as text by the page), a count, a time span in seconds.
        var key: String?
        var values: [String: String]?
        var count: Int?
        var seconds: Double?
    }

    /// What a notice says, for `post`.
    struct Words {
        var text: String
        var key: String
        var values: [String: String] = [:]
        var count: Int?
        var seconds: Double?
    }

    /// Also the executor an open page's event stream prefers: woken by a new model, the stream
    /// runs on with no switch to Swift's pool and back.
    nonisolated let executor: DedicatedThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private let settings: Settings
    private let logger: Logger
    private let spool: SpoolReader
    private let readers: StatusSnapshot.Readers
    private(set) var model: CabModel?
    /// Moves on with every model built.
    private(set) var version = 0
    private(set) var notices: [Notice] = []
    private var noticeSequence = 0
    private(set) var track: [[Double]] = []
    /// When each point of `track` was sampled (system seconds): the trail keeps the last
    /// `trailSeconds` before the newest point, so a wrong clock does not empty it.
    private var trackTimes: [Double] = []
    private var lastRowID: Int64 = 0
    private var newest: PositionSample?
    /// The work state last announced from, for `announceWork`.
    private var lastWork: String?
    private var lastFix: PositionSample?
    private var signature = Stamps()
    /// The last whole look, for the looks in between that read only the spool.
    private var snapshot: StatusSnapshot?
    /// The spool's change counter as the last look read it.
    private var spoolVersion: Int64?
    private var builtAt = Date.distantPast
    private var previous: [String: Observed] = [:]
    /// Positions kept in the pause in force as last seen; nil when sharing was not paused.
    private var keptInPause: Int?
    private let fieldStore: FieldStore
    private var fields = CabFields()
    /// A rebuild suspends at its reads, and another may start meanwhile (the actor is reentrant):
    /// one at a time, so that a model read after a write never gives way to one read before it.
    private var rebuilding = false
    private var waitingToRebuild: [CheckedContinuation<Void, Never>] = []

    private struct Observed {
        var state: String
        var coordinate: Coordinate?
        var stillSince: Date
        var announcedStill = false
    }

    init(settings: Settings, logger: Logger) {
        self.settings = settings
        self.logger = logger
        let executor = DedicatedThreadExecutor(name: "agrigps-cab")
        self.executor = executor
        spool = SpoolReader(path: settings.paths.spool, executor: executor)
        // Kept open between looks: a look a second would otherwise open both files every time.
        readers = StatusSnapshot.Readers(
            spool: spool, others: OtherMachinesStore(readingOnly: settings.paths.others, executor: executor),
            executor: executor)
        fieldStore = FieldStore(path: Self.fieldsPath(settings.paths), readOnly: true, executor: executor)
    }

    static func fieldsPath(_ paths: StatusSnapshot.Paths) -> String { paths.stateDirectory + "/fields.sqlite" }

    /// The fields as the page draws them.
    func fieldsGeoJSON() -> FieldsGeoJSON { fields.geoJSON() }

    /// The fields as last read: the Records tab splits a day by the same copy the map draws.
    func storedFields() -> [StoredField] { fields.fields }

    /// Looks whenever a file changed, and every `refreshInterval`, until cancelled.
    func run() async {
        let paths = settings.paths
        let credentials = CredentialStore(directory: paths.stateDirectory)
        let watched = [paths.heartbeat, paths.others, paths.spool, Self.fieldsPath(paths)] + credentials.files
        guard
            let watch = DirectoryWatch(
                .init(paths: watched, refresh: settings.refreshInterval, fallback: settings.pollInterval))
        else {
            logger.warning("cannot watch the state directory; looking every \(settings.pollInterval) s instead")
            while !Task.isCancelled {
                await refreshIfChanged()
                try? await Task.sleep(for: .seconds(settings.pollInterval))
            }
            return
        }
        defer { watch.close() }
        var wake = DirectoryWatch.Wake.refresh
        while !Task.isCancelled {
            if wake == .refresh {
                await rebuildAtOnce()
            } else if await refreshIfChanged() {
                await lookAgainForCommit()
            }
            wake = await watch.next()
        }
    }

    /// A commit's last write reaches the spool's file before SQLite makes the commit visible (after
    /// its fsync, through an index in shared memory, which inotify does not see). A look that found
    /// the file moved and nothing new looks again, twice at most, until the spool's version moves:
    /// else a sample could wait for the next one, or for the refresh, to be shown.
    private func lookAgainForCommit() async {
        for delay in [0.1, 0.4] {
            try? await Task.sleep(for: .seconds(delay))
            guard !Task.isCancelled else { return }
            if let version = try? await spool.changeCounter(), version != spoolVersion {
                await rebuild(now: Date(), onlySpool: snapshot != nil)
                return
            }
        }
    }

    /// A refresh of ages and staleness: whether or not a file changed.
    private func rebuildAtOnce() async {
        signature = currentSignature()
        await rebuild(now: Date(), onlySpool: false)
    }

    /// Builds a new model when anything in the state directory moved, or when the last is old.
    /// True when the spool's file moved but its rows had not (a commit not visible yet, or one that
    /// only changed rows already seen).
    @discardableResult
    func refreshIfChanged(now: Date = Date()) async -> Bool {
        let current = currentSignature()
        let old = now.timeIntervalSince(builtAt) >= settings.refreshInterval
        guard current != signature || old || model == nil else { return false }
        // A sample committed, nothing else: the common case, once a second with a 1 Hz receiver.
        let spoolMoved = current.spool != signature.spool
        let onlySpool = !old && current.others == signature.others && current.fields == signature.fields && spoolMoved
        signature = current
        let seen = lastRowID
        await rebuild(now: now, onlySpool: onlySpool)
        return spoolMoved && lastRowID == seen
    }

    /// The files' stamps: equal when nothing the page shows can have changed. Every commit to a
    /// store in WAL mode writes its -wal file, so stat calls see it: a look costs a few system calls,
    /// and no query.
    struct Stamps: Equatable {
        var spool: [FileStamp] = []
        /// The store of fields and its -wal.
        var fields: [FileStamp] = []
        /// The heartbeat, the credentials and the store of other machines.
        var others: [FileStamp] = []
    }

    private func currentSignature() -> Stamps {
        let paths = settings.paths
        let fields = Self.fieldsPath(paths)
        return Stamps(
            spool: [paths.spool, paths.spool + "-wal"].map(FileStamp.of),
            fields: [fields, fields + "-wal"].map(FileStamp.of),
            others: CredentialStore(directory: paths.stateDirectory).fingerprint()
                + [paths.heartbeat, paths.others, paths.others + "-wal"].map(FileStamp.of))
    }

    /// A model read now, from every file: for a switch the page itself just set, which must show
    /// in the next answer, even when a look woken by its write already took the files' stamps.
    func rebuildAfterWrite() async {
        signature = currentSignature()
        await rebuild(now: Date(), onlySpool: false)
    }

    private func rebuild(now: Date, onlySpool: Bool) async {
        while rebuilding { await withCheckedContinuation { waitingToRebuild.append($0) } }
        rebuilding = true
        defer {
            rebuilding = false
            if !waitingToRebuild.isEmpty { waitingToRebuild.removeFirst().resume() }
        }
        await rebuildAlone(now: now, onlySpool: onlySpool)
    }

    private func rebuildAlone(now: Date, onlySpool: Bool) async {
        let thresholds = settings.thresholds
        // Only the spool moved: its new rows and its counts in one read.
        let respooled = onlySpool ? self.snapshot?.respooling(now: now, heartbeatLimit: thresholds.heartbeatLimit) : nil
        let counts = await readOwnSamples(statusAt: respooled?.spoolTime)
        let snapshot: StatusSnapshot
        if let counts, var next = respooled {
            next.takeSpool(counts)
            snapshot = next
        } else {
            snapshot = await StatusSnapshot.gather(
                settings.paths, now: now, heartbeatLimit: thresholds.heartbeatLimit,
                staleAfter: thresholds.staleAfter, readers: readers)
        }
        self.snapshot = snapshot
        var built = CabModel(
            snapshot: snapshot, newest: newest, lastFix: lastFix, thresholds: settings.thresholds,
            environments: settings.environments)
        await readFieldsIfChanged()
        built.work.switchCounts = settings.workSwitchCounts
        if let configured = settings.workingWidth {
            (built.work.width, built.work.widthConfigured) = (configured, true)
        }
        placeInFields(&built, now: now)
        announce(built.others, now: now)
        announceResume(snapshot.spool, now: now)
        announceWork(built, now: now)
        // The same model again is no new version: no page redraws it. A look's model always has its
        // own `takenAt`, so every look, at every `refreshInterval` at least, reaches each open page:
        // the page takes the stream's silence for a box it no longer hears.
        if built != model {
            model = built
            version += 1
        }
        builtAt = now
        wakeAll()
    }

    /// New own samples since the last look, in order: the newest for the marker, fixes for the trail.
    /// With `statusAt`, the spool's counts at that time, read with them; nil when not asked or unread.
    private func readOwnSamples(statusAt: Date?) async -> SpoolStatus? {
        let limit = lastRowID == 0 ? settings.trackLimit : 120
        guard
            let (rows, version, counts) = try? await spool.newestWithVersion(
                after: lastRowID, limit: limit, statusAt: statusAt)
        else { return nil }
        spoolVersion = version
        for row in rows.reversed() where row.rowID > lastRowID {
            lastRowID = row.rowID
            newest = row.sample
            if row.sample.state.hasPosition, let latitude = row.sample.report?.latitude,
                let longitude = row.sample.report?.longitude
            {
                lastFix = row.sample
                // A third element of 1 marks a point driven working: the page draws those stretches apart.
                track.append(row.sample.machine?.work == .working ? [latitude, longitude, 1] : [latitude, longitude])
                trackTimes.append(row.sample.sampledAt.timeIntervalSince1970)
            }
        }
        let newestTime = trackTimes.last ?? 0
        let old = max(
            track.count - settings.trackLimit, trackTimes.prefix { $0 < newestTime - settings.trailSeconds }.count)
        if old > 0 {
            track.removeFirst(old)
            trackTimes.removeFirst(old)
        }
        return counts
    }

    /// The fields again when their store changed since they were read (by the stamps of the last
    /// look); a store that cannot be read keeps what was read before.
    private func readFieldsIfChanged() async {
        let stamp = signature.fields
        guard fields.changed(stamp) else { return }
        do {
            fields.take(try await fieldStore.fields(), stamp: stamp)
        } catch {
            logger.error("\(error.description)")
            fields.take(nil, stamp: stamp)
        }
    }

    /// Which field each machine is in, and a notice when one entered or left a field.
    private func placeInFields(_ model: inout CabModel, now: Date) {
        model.fieldsKnown = !fields.fields.isEmpty
        model.fieldsVersion = fields.version
        guard model.fieldsKnown else { return }
        model.field = fields.field(latitude: model.own?.latitude, longitude: model.own?.longitude)
        model.placeWork(speedOverGround: model.own?.speed)
        if model.own != nil, let change = fields.moved("", to: model.field) {
            post("field", Self.fieldWords(change, machine: model.settings.endpointName), now)
        }
        for index in model.others.indices {
            let other = model.others[index]
            model.others[index].field = fields.field(latitude: other.latitude, longitude: other.longitude)
            if other.latitude != nil, let change = fields.moved(other.id, to: model.others[index].field) {
                post("field", Self.fieldWords(change, machine: other.name), now)
            }
        }
    }

    /// "Harvester entered Nordacker"; this machine, with no name of its own, is "This machine".
    static func fieldWords(_ change: CabFields.Change, machine: String?) -> Words {
        let name = machine ?? "This machine"
        var values = ["machine": name, "field": change.field]
        if machine == nil { values["own"] = "true" }
        return change.entered
            ? Words(text: "\(name) entered \(change.field)", key: "notice.entered", values: values)
            : Words(text: "\(name) left \(change.field)", key: "notice.left", values: values)
    }

    /// Another machine went stale, came back, left the endpoint list, or stood still too long.
    private func announce(_ others: [CabModel.Other], now: Date) {
        var seen: [String: Observed] = [:]
        for other in others {
            let coordinate = both(other.latitude, other.longitude).map { Coordinate(latitude: $0, longitude: $1) }
            var observed = Observed(state: other.state, coordinate: coordinate, stillSince: now)
            if let before = previous[other.id] {
                if before.state != other.state {
                    switch (before.state, other.state) {
                    case (_, "stale"):
                        post(
                            "stale",
                            Words(
                                text: "Nothing received from \(other.name) for \(other.age)", key: "notice.stale",
                                values: ["machine": other.name], seconds: other.ageSeconds), now)
                    case ("stale", "active"), ("gone", "active"):
                        post(
                            "back",
                            Words(text: "\(other.name) is back", key: "notice.back", values: ["machine": other.name]),
                            now)
                    case (_, "gone"):
                        post(
                            "gone",
                            Words(
                                text: "\(other.name) is gone from agrirouter", key: "notice.gone",
                                values: ["machine": other.name]), now)
                    default: break
                    }
                }
                let moved = both(before.coordinate, coordinate).map { $0.distance(to: $1) > 5 } ?? true
                if !moved {
                    observed.stillSince = before.stillSince
                    observed.announcedStill = before.announcedStill
                }
                if other.state == "active", !observed.announcedStill,
                    now.timeIntervalSince(observed.stillSince) >= settings.notMovingAfter
                {
                    observed.announcedStill = true
                    let still = now.timeIntervalSince(observed.stillSince)
                    post(
                        "still",
                        Words(
                            text: "\(other.name) has not moved for \(durationText(still))", key: "notice.still",
                            values: ["machine": other.name], seconds: still), now)
                }
            }
            seen[other.id] = observed
        }
        previous = seen
    }

    /// Sharing went on again after a pause: said once, with what the pause kept back. Judged by the
    /// spool's own switch, not the indicator's state, which a stopped daemon or a missing
    /// onboarding hides a pause behind; an unreadable spool decides nothing.
    private func announceResume(_ spool: SpoolStatus?, now: Date) {
        guard let spool else { return }
        if spool.sharingPaused {
            keptInPause = spool.keptWhilePaused
        } else if let kept = keptInPause {
            keptInPause = nil
            post(
                "resumed",
                Words(
                    text:
                        "Sharing again · \(kept) position\(kept == 1 ? " from the pause stays" : "s from the pause stay") here",
                    key: "notice.resumed", count: kept), now)
        }
    }

    /// "Nordacker: work started", "work stopped": when the machine's work state turns to or from
    /// working. A state not known in between changes nothing; the first state seen is no change.
    private func announceWork(_ model: CabModel, now: Date) {
        guard let state = model.work.state, state != "unknown" else { return }
        defer { lastWork = state }
        guard let previous = lastWork, (state == "working") != (previous == "working") else { return }
        let started = state == "working"
        let field = model.field
        let what = started ? "work started" : "work stopped"
        var values: [String: String] = [:]
        if let field { values["field"] = field }
        post(
            started ? "work-started" : "work-stopped",
            Words(
                text: field.map { "\($0): \(what)" } ?? (started ? "Work started" : "Work stopped"),
                key: "notice." + (started ? "workStarted" : "workStopped") + (field == nil ? "" : "In"), values: values),
            now)
    }

    private func post(_ kind: String, _ words: Words, _ now: Date) {
        noticeSequence += 1
        notices.append(
            Notice(
                sequence: noticeSequence, kind: kind, text: words.text, at: ISO8601UTC.string(from: now),
                key: words.key,
                values: words.values.isEmpty ? nil : words.values, count: words.count, seconds: words.seconds))
        if notices.count > 50 { notices.removeFirst(notices.count - 50) }
        logger.notice("\(words.text)", metadata: ["event": "\(kind)"])
        wakeAll()
    }

    /// Notices after `sequence`.
    func notices(after sequence: Int) -> [Notice] {
        notices.filter { $0.sequence > sequence }
    }

    // MARK: - Waiting for a change

    /// Event streams waiting for the next model or notice, by a number of their own.
    private var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter = 0
    private var closing = false

    /// What an open page has not had yet: the model when it moved past the page's version, and the
    /// notices after its last.
    struct Update: Sendable {
        var version: Int
        var model: CabModel?
        var notices: [Notice]
    }

    /// The next update after `version` and `notice`, waiting for the next look (an update with
    /// neither model nor notices when it found nothing new): an open page's stream asks once per
    /// change, not once per part, and each ask is a switch to this thread and back.
    func update(after version: Int, notice: Int) async -> Update {
        // Before the first model there is nothing to send: wait for it rather than ask again at once.
        await waitForChange(after: model == nil ? self.version : version, notice: notice)
        return Update(
            version: self.version, model: self.version != version ? model : nil, notices: notices(after: notice))
    }

    /// The sequence number of the newest notice: a page that opens now is told only of later ones.
    var lastNotice: Int { notices.last?.sequence ?? 0 }

    /// Returns when the model moves past `version` or a notice past `notice` is posted, or at the
    /// next look whatever it found (every `refreshInterval` at least, so a stream can keep itself
    /// alive): each open page waits here rather than asking ten times a second, and with no timer
    /// of its own, which cost a timer thread's wake-up and a cancellation at every change.
    func waitForChange(after version: Int, notice: Int) async {
        guard self.version == version, lastNotice <= notice, !Task.isCancelled, !closing else { return }
        nextWaiter += 1
        let id = nextWaiter
        await withTaskCancellationHandler {
            await withCheckedContinuation { waiters[id] = $0 }
        } onCancel: {
            Task { await self.wake(id) }
        }
    }

    /// Resumes one waiter, once: whichever of the look, the change or a cancellation comes first.
    private func wake(_ id: Int) {
        waiters.removeValue(forKey: id)?.resume()
    }

    /// The server is shutting down: every stream waiting is let go, and none waits again.
    func close() {
        closing = true
        wakeAll()
    }

    private func wakeAll() {
        let all = waiters
        waiters = [:]
        for waiter in all.values { waiter.resume() }
    }
}
