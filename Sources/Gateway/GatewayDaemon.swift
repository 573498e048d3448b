import AgrirouterLink
import AgrirouterWire
import BlockingWork
import Bounds
import Clocks
import Fields
import Foundation
import GNSS
import Logging
import ServiceLifecycle
import Spool
import StateDirectory
import Synchronization
import Track

/// The long-running job: samples go to the spool first, always; when the machine is onboarded, the
/// publisher sends them to agrirouter. One object, stopped by cancelling the task that runs it.
public struct GatewayDaemon: Sendable {
    public struct Configuration: Sendable {
        public var samplingInterval: Double = 1
        /// Seconds between send cycles when there is no backlog (5, 10 or 20 are usual).
        public var sendInterval: Double = 10
        /// With a receiver on a CAN bus: what the bus shows, for the heartbeat (and `agrigps status`).
        public var receiverBus: (@Sendable () -> String?)?
        /// What the machine was doing at a sample, put in the sample: from the bus's controllers
        /// when one is listened to, and the driver's work switch (nil until first set). Nil when
        /// neither said anything. With `machineStatus`, the bus's signals for status.
        public var machine: (@Sendable (PositionSample, _ workSwitch: Bool?) -> MachineReading?)?
        public var machineStatus: (@Sendable () -> Heartbeat.MachineStatus?)?
        /// Set when the machine's state comes from the work switch alone (no bus): the device
        /// description has the machine once the switch was first used.
        public var machineBySwitchOnly = false
        /// Seconds between attempts of the endpoint set-up while agrirouter cannot be reached.
        public var setupRetry: Double = 30
        /// Re-send capabilities and subscription this often, as agrirouter recommends.
        public var setupRenewal: Double = 24 * 3600
        /// At the end of a finite source (a replay), how long to keep sending before giving up.
        public var drainTimeout: Double = 300
        /// How other machines' positions are read.
        public var feed = FeedReader.Configuration()
        /// Where the daemon writes its heartbeat for `agrigps status` and `agrigps others`; nil writes none.
        public var heartbeatPath: String?
        /// systemd's notify socket: READY once the spool is open and gpsd has been tried, then
        /// WATCHDOG and STATUS with every sample the spool has taken.
        public var notifier: SystemdNotifier?
        /// Seconds a stop waits for the request in progress, so that SIGTERM ends the daemon within 5 s.
        public var shutdownGrace: Double = 3
        /// Seconds more a stop waits while a GET of the outbox is under way: the answers it brings
        /// are agrirouter's only copy, and lost with them their batches would go twice. Within the
        /// unit's TimeoutStopSec (20 s).
        public var outboxAnswersGrace: Double = 10
        /// The agrirouter environment onboarded to, for the heartbeat; nil when not onboarded.
        public var environment: String?
        /// Seconds without data before another machine counts as stale, for the heartbeat's counts.
        public var staleAfter: Double = 300
        /// The endpoint certificate's expiry, for the heartbeat, where status reads it without root.
        public var certificateNotAfter: Date?
        /// The best known UTC, disciplined by the samples' GNSS time; the connection stamps requests with it.
        public var clock: TrueTime?
        /// What the daemon's intervals, retries and renewals are measured and waited on.
        public var monotonic: MonotonicClock = .system
        /// Where the last acknowledged endpoint set-up is remembered; nil runs it at every start.
        public var setupRecordPath: String?
        /// How long agrirouter keeps an answer in the outbox: a batch unanswered this long is sent again.
        /// Shorter only in tests, against a local agrirouter configured the same.
        public var outboxLifetime: Double = AgrirouterLimits.outboxLifetime
        /// How often dke:ping asks whether agrirouter still knows the endpoint.
        public var endpointCheckInterval: Double = 24 * 3600
        /// A start turns sharing back on; a restart for new credentials keeps a pause as it was.
        public var resumeSharingAtStart = true
        /// What positions are published as (the spool must have been opened with the same).
        public var outputs: [SpoolOutput] = [.gpsInfo]
        /// agrigps's version, for the device description EFDI sends.
        public var softwareVersion = "0.0.0"
        /// Where TaskData received through agrirouter puts the farm's fields (STATE-DIR/fields.sqlite);
        /// nil leaves TaskData unread.
        public var fieldsPath: String?
        /// The machine's own track, kept whether or not it is onboarded; nil keeps none.
        public var track: TrackStore?
        /// Whether a sample without a receiver time goes on the track dated by the system clock. Not in
        /// a replay of a recording at its own time: the clock says nothing about when it was made.
        public var trackDatesBySystemClock = true

        public init() {}
    }

    public struct Summary: Sendable, Equatable {
        public var samples = 0
        public var published = 0
        public var acknowledged = 0
        /// Messages from other machines read (not counting repeats): stored, or passed over because
        /// the same positions came, or come, as EFDI.
        public var othersStored = 0
        /// Samples held in memory that could not be written before the process ended, and why.
        public var lostAtShutdown = 0
        public var lossReason: String?

        public init() {}

        /// Adds up the runs of one process (a restart for new credentials is a second run).
        public mutating func add(_ other: Summary) {
            samples += other.samples
            published += other.published
            acknowledged += other.acknowledged
            othersStored += other.othersStored
            lostAtShutdown += other.lostAtShutdown
            lossReason = other.lossReason ?? lossReason
        }
    }

    private let spool: Spool
    private let connection: AgrirouterConnection?
    private let setup: EndpointSetup?
    private let others: OtherMachinesStore?
    private let configuration: Configuration
    private let logger: Logger

    /// `connection` and `setup` are nil when the machine is not onboarded: it then samples into the spool only.
    /// Without `others`, it sends and does not read what other machines send.
    public init(
        spool: Spool, connection: AgrirouterConnection?, setup: EndpointSetup?, others: OtherMachinesStore? = nil,
        configuration: Configuration = Configuration(), logger: Logger = Logger(label: "agrigps.daemon")
    ) {
        self.spool = spool
        self.connection = connection
        self.setup = setup
        self.others = others
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs on a live gpsd, sampled on its reader thread.
    public func run(
        gpsd: GPSDSource, alongside others: [ServiceGroupConfiguration.ServiceConfiguration] = []
    ) async -> Summary {
        await run(
            sampled: gpsd.sampled(by: Sampler(interval: configuration.samplingInterval, wall: wall)), alongside: others)
    }

    /// Runs on a stream of events, sampled here; for replays and tests.
    public func run(
        events: AsyncStream<SourceEvent>, skewLimit: Double? = 60,
        alongside others: [ServiceGroupConfiguration.ServiceConfiguration] = []
    ) async -> Summary {
        await run(
            sampled: Sampler(interval: configuration.samplingInterval, skewLimit: skewLimit, wall: wall).outputs(
                from: events),
            alongside: others)
    }

    /// Puts a sample on the machine's own track, dated as agrirouter would get it: its receiver time,
    /// else the system time corrected to the best known UTC. A sample with neither a receiver time nor
    /// a plausible system time (a clock not yet set at boot) is left off: it would land decades away.
    static func record(_ sample: PositionSample, in configuration: Configuration, logger: Logger, failing: Flag) async {
        guard let track = configuration.track else { return }
        let corrected = configuration.clock.map { clock in
            sample.sampledUptime.flatMap(clock.time(atUptime:)) ?? clock.corrected(sample.sampledAt)
        }
        let time = sample.receiverTime ?? corrected ?? sample.sampledAt
        guard sample.receiverTime != nil || (configuration.trackDatesBySystemClock && time >= TrueTime.plausibleFrom)
        else { return }
        do {
            try await track.record(TrackPoint(sample, time: time))
            if failing.set(false) { logger.notice("the track is written again") }
        } catch {
            // The spool, the outbox, is another file: positions are still sent.
            if !failing.set(true) { logger.error("\(error.description); positions are still sent") }
        }
    }

    /// Puts what became of samples (sent, acknowledged, dropped unsent) on the track's days, by when
    /// they were taken. The spool counts; this moves its counts over, every 10 s and at the end.
    static func countDeliveries(from spool: Spool, in configuration: Configuration, logger: Logger, failing: Flag) async
    {
        let tally = await spool.takeDeliveryTally()
        guard let track = configuration.track, !tally.isEmpty else { return }
        let counts = tally.byTime.map { quarter in
            DeliveryCount(
                time: Date(timeIntervalSince1970: quarter.start), sent: quarter.counts.sent,
                acknowledged: quarter.counts.acknowledged, lost: quarter.counts.lost)
        }
        do {
            try await track.count(counts)
        } catch {
            if !failing.set(true) { logger.error("\(error.description); positions are still sent") }
        }
    }

    /// The system clock, as the clock the daemon was given reads it.
    private var wall: WallClock { configuration.clock?.wall ?? .system }
    private var monotonic: MonotonicClock { configuration.monotonic }

    /// Runs until shut down gracefully or cancelled, or, for a finite source, until it ends and the
    /// spool has been sent.
    ///
    /// Its jobs are services in one `ServiceGroup`: the publisher (which makes the feed reader's
    /// requests too, in the same spacing), the sampler, then `alongside` (the command's credential
    /// watcher). A graceful shutdown goes the other way: what came alongside, then sampling, then
    /// publishing with its grace. Any of them ending shuts the group down. Run inside a service of
    /// another group (the program's, which owns the signals), the group follows its shutdown.
    public func run(
        sampled source: AsyncStream<SamplerOutput>,
        alongside extra: [ServiceGroupConfiguration.ServiceConfiguration] = []
    ) async -> Summary {
        do {
            if configuration.resumeSharingAtStart {
                try await spool.setSharing(paused: false)  // a start with credentials means sharing is on
            } else {
                _ = await spool.isSharingPaused()  // opens the spool, as the READY that sampling sends promises
            }
        } catch {
            logger.error("\(error.description)")
        }
        let counter = Counter()
        let trackFailing = Flag()
        let heartbeat = configuration.heartbeatPath.map {
            HeartbeatWriter(
                path: $0, environment: configuration.environment, clock: configuration.clock,
                monotonic: monotonic, sendInterval: configuration.sendInterval,
                receiverBus: configuration.receiverBus,
                machine: configuration.machineStatus)
        }
        await heartbeat?.certificate(notAfter: configuration.certificateNotAfter)
        await checkForLostRows(heartbeat)
        await heartbeat?.counted(
            spool: await spool.status(), others: try? await others?.view(staleAfter: configuration.staleAfter))
        await heartbeat?.beat()
        let reader = both(connection, others).map { connection, store in
            FeedReader(
                store: store, connection: connection, ownEndpointID: connection.endpoint.deviceAlternateId,
                configuration: configuration.feed, clock: configuration.clock,
                fields: configuration.fieldsPath.map { FieldStore(path: $0) }, logger: logger)
        }
        let sampling = SamplingService(
            source: source, spool: spool, others: others, configuration: configuration, counter: counter,
            heartbeat: heartbeat, trackFailing: trackFailing, reader: reader, connected: connection != nil,
            logger: logger)
        let publishing = PublishingService(
            grace: configuration.shutdownGrace, holdingGrace: configuration.outboxAnswersGrace,
            holding: { [connection] in await connection?.outboxRequestInFlight ?? false },
            abort: { [connection] in connection?.link.abortRequests() }, monotonic: monotonic, logger: logger
        ) { [self] in
            await publish(counter: counter, heartbeat: heartbeat, reader: reader)
        }
        // TaskData is read beside the publisher, which only hands it over: none holds back positions.
        let importing = reader.flatMap { $0.imports == nil ? nil : TaskDataImportService(reader: $0) }.map {
            ServiceGroupConfiguration.ServiceConfiguration(service: $0, successTerminationBehavior: .ignore)
        }
        let services =
            [
                // Not onboarded, the publisher has nothing to do and ends at once: the sampler goes on.
                ServiceGroupConfiguration.ServiceConfiguration(service: publishing, successTerminationBehavior: .ignore)
            ] + (importing.map { [$0] } ?? []) + [
                ServiceGroupConfiguration.ServiceConfiguration(
                    service: sampling, successTerminationBehavior: .gracefullyShutdownGroup)
            ] + extra
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(services: services, logger: logger))
        do {
            try await group.run()
        } catch {
            logger.error("the daemon's services stopped: \(error)")
        }
        return await finish(counter: counter, heartbeat: heartbeat, reader: reader, trackFailing: trackFailing)
    }

    /// Samples held in memory while the spool could not store are written now if the disk allows,
    /// otherwise counted as lost, in the summary, the log and the heartbeat.
    private func finish(counter: Counter, heartbeat: HeartbeatWriter?, reader: FeedReader?, trackFailing: Flag) async
        -> Summary
    {
        let shutdown = await spool.flushHeld()
        await Self.countDeliveries(from: spool, in: configuration, logger: logger, failing: trackFailing)
        do {
            try await configuration.track?.flush()
        } catch {
            logger.error("the track's last points were not written: \(error.description)")
        }
        await heartbeat?.lost(
            shutdown.lost,
            reason: "held in memory at shutdown; " + (shutdown.fault?.description ?? "the spool could not store them"))
        await heartbeat?.beat()
        var summary = await counter.summary
        if let counters = await reader?.counters { summary.othersStored = counters.stored + counters.passedOver }
        summary.lostAtShutdown = shutdown.lost
        summary.lossReason = shutdown.fault?.description
        return summary
    }

    private func publish(counter: Counter, heartbeat: HeartbeatWriter?, reader: FeedReader?) async {
        guard let connection, let setup else {
            logger.notice("not onboarded: sampling into the spool only")
            return
        }
        // Named as the endpoint list last named it, so that a restart describes the box as before.
        var describedAs = (try? await others?.ownName()) ?? nil
        var describedMachine = await describesMachine()
        let description = DeviceDescription(
            endpointID: connection.endpoint.deviceAlternateId, softwareVersion: configuration.softwareVersion,
            name: describedAs, machine: describedMachine)
        let publisher = Publisher(
            spool: spool, connection: connection, outputs: configuration.outputs,
            efdi: configuration.outputs.contains(.efdi) ? Publisher.EFDI(description: description) : nil,
            rideAppendsWithin: Self.rideAppendsWithin(samplingInterval: configuration.samplingInterval),
            clock: configuration.clock, monotonic: monotonic, logger: logger)
        // When the set-up was last acknowledged, on the monotonic clock: a clock step neither
        // repeats it at once nor puts it off for hours.
        var setUpAt = remembered(setup, connection)
        if setUpAt != nil {
            // Capabilities and subscription stand; the feed is still read back on connect, as agrirouter asks.
            await reader?.connected()
            logger.info("capabilities and subscription acknowledged within a day; not sent again before it is up")
        }
        var readerTurn = false
        var check = EndpointCheck(interval: configuration.endpointCheckInterval)
        var certificateRefusals = 0
        var probedTime = false
        while !Task.isCancelled {
            // Nothing stamped goes out on the system clock's word alone while an outbox poll (which
            // carries no timestamp) can learn agrirouter's time from its answer first.
            // Once is enough: an answer without a `Date` leaves the system clock as the best known.
            if !probedTime, !connection.timeIsVerified {
                guard
                    let settled = await learnTime(
                        connection, publisher: publisher, reader: reader, check: &check, heartbeat: heartbeat)
                else {
                    try? await monotonic.sleep(for: configuration.sendInterval)
                    continue
                }
                await counter.add(acknowledged: settled)
            }
            probedTime = true
            if setUpAt.map({ monotonic.now() - $0 > configuration.setupRenewal }) ?? true {
                do {
                    try await setup.run(on: connection)
                    let settled = await deliver(connection, publisher: publisher, reader: reader, check: &check)
                    await counter.add(acknowledged: settled.acknowledged)
                    setUpAt = monotonic.now()
                    await publisher.endpointSetUp()
                    await remember(setup, connection, at: trueNow())
                    await reader?.connected()
                    logger.info("capabilities and subscription acknowledged")
                } catch {
                    check.setUpRefused(error, now: trueNow())
                    await heartbeat?.endpointDeleted(at: check.deletedAt)
                    await heartbeat?.failed("endpoint set-up: \(error.description)")
                    await heartbeat?.backingOff(
                        seconds: await connection.backingOff(), failures: await connection.consecutiveFailures)
                    await heartbeat?.beat()
                    logger.warning(
                        "endpoint set-up: \(error.description); retrying in \(Int(configuration.setupRetry)) s")
                    try? await monotonic.sleep(for: configuration.setupRetry)
                    continue
                }
            }
            let started = monotonic.now()
            await describe(publisher, connection, as: &describedAs, machine: &describedMachine)
            await pingIfDue(&check, connection)
            let (report, error) = await pass(
                publisher: publisher, connection: connection, reader: reader, heartbeat: heartbeat,
                readerTurn: &readerTurn, check: &check)
            await counter.add(published: report.published, acknowledged: report.acknowledged)
            await heartbeat?.described(await publisher.descriptionState)
            for codes in report.refusals { check.suspect(codes: codes) }
            certificateRefusals = Self.refusesCertificate(error) ? certificateRefusals + 1 : 0
            check.suspectCertificateRefusals(certificateRefusals, uptimeNow: monotonic.now())
            await heartbeat?.endpointDeleted(at: check.deletedAt)
            if error != nil {
                try? await monotonic.sleep(for: configuration.sendInterval)
            } else if !(await hasWorkNow(publisher: publisher, reader: reader, counter: counter)) {
                // The next cycle starts one send interval after this one started.
                let settled = await idle(
                    until: started + configuration.sendInterval, connection: connection, publisher: publisher,
                    reader: reader, check: &check)
                if settled > 0 {
                    await counter.add(acknowledged: settled)
                    await heartbeat?.acknowledged()
                }
            }
        }
    }

    /// The device description names the box as agrirouter's endpoint list does, once it is known,
    /// and has the machine once something tells its state; a new description is built only when
    /// either has changed since `describedAs` and `describedMachine`.
    private func describe(
        _ publisher: Publisher, _ connection: AgrirouterConnection, as describedAs: inout String?,
        machine describedMachine: inout Bool
    ) async {
        guard configuration.outputs.contains(.efdi) else { return }
        let name = ((try? await others?.ownName()) ?? nil) ?? describedAs
        let machine = await describesMachine()
        guard name != describedAs || machine != describedMachine else { return }
        (describedAs, describedMachine) = (name, machine)
        await publisher.describe(
            DeviceDescription(
                endpointID: connection.endpoint.deviceAlternateId,
                softwareVersion: configuration.softwareVersion, name: name, machine: machine))
    }

    /// A bus listened to describes the machine from the start; the work switch alone once it was used.
    private func describesMachine() async -> Bool {
        guard configuration.machine != nil else { return false }
        guard configuration.machineBySwitchOnly else { return true }
        return await spool.workSwitch() != nil
    }

    /// When (on the monotonic clock) the same set-up was acknowledged within `setupRenewal`, by the
    /// record; nil to run it now.
    private func remembered(_ setup: EndpointSetup, _ connection: AgrirouterConnection) -> Double? {
        guard let path = configuration.setupRecordPath, let record = EndpointSetupRecord.read(from: path) else {
            return nil
        }
        let endpoint = connection.endpoint.deviceAlternateId
        let now = trueNow()
        return record.stillValid(
            endpointID: endpoint, fingerprint: setup.fingerprint(endpointID: endpoint),
            maximumAge: configuration.setupRenewal, now: now
        )
        .map { monotonic.now() - now.timeIntervalSince($0) }
    }

    /// The best known UTC, or the system clock's reading while it is unknown.
    private func trueNow() -> Date {
        TrueTime.bestGuess(configuration.clock)
    }

    private func remember(_ setup: EndpointSetup, _ connection: AgrirouterConnection, at time: Date) async {
        guard let path = configuration.setupRecordPath else { return }
        let endpoint = connection.endpoint.deviceAlternateId
        let record = EndpointSetupRecord(
            endpointID: endpoint, fingerprint: setup.fingerprint(endpointID: endpoint), acknowledgedAt: time)
        do {
            // The write syncs the file and its directory: off the cooperative pool.
            try await onOwnThread { try record.write(to: path) }
        } catch {
            logger.warning("cannot remember the endpoint set-up in \(path): \(error); it runs again at the next start")
        }
    }

    /// One send cycle: publish the next batch unless paused, taken from the spool at its turn so it
    /// is as fresh as can be, with the feed reader's confirm in the same request; then either poll
    /// the outbox (answers, pushes) or, every other cycle when it has one due, make the feed reader's
    /// request in the poll's place. Over REST, two requests a cycle keep the interval at twice the
    /// spacing (10 s in production) even while the feed is read; over MQTT, whose answers and pushes
    /// cost no request, the publish alone, unless the reader lists, queries or deletes.
    private func pass(
        publisher: Publisher, connection: AgrirouterConnection, reader: FeedReader?, heartbeat: HeartbeatWriter?,
        readerTurn: inout Bool, check: inout EndpointCheck
    ) async -> (Publisher.CycleReport, error: GatewayError?) {
        var report = Publisher.CycleReport()
        var failure: GatewayError?
        do throws(GatewayError) {
            // Paused: nothing is sent, but the others are still read.
            let paused = await spool.isSharingPaused()
            if !paused {
                // What arrives while the publish waits out the spacing is taken as it comes (MQTT only:
                // over REST the publisher's own wait does it, and a backoff is always its to wait out).
                if connection.link.deliversAnswers {
                    report.acknowledged += await idle(
                        until: monotonic.now() + (await connection.untilSpacingAllows()), connection: connection,
                        publisher: publisher, reader: reader, check: &check)
                }
                // The feed reader's confirm goes in the publisher's request, not in a slot of its own.
                let along = await reader?.confirmToRideAlong()
                let sent = await publisher.cycle(
                    inFlightTimeout: configuration.outboxLifetime, along: along.map { [$0] } ?? [])
                await reader?.rodeAlong(sent: sent.alongSent)
                report.published = sent.published
                if let error = sent.error { throw error }
            }
            // What was just published is answered within moments over MQTT: wait for that much (at
            // once over REST). Answers cost no request there: they are taken every cycle, whoever's turn it is.
            await connection.waitForAnswers(atMost: min(2, configuration.sendInterval))
            let answersAreFree = connection.link.deliversAnswers
            if answersAreFree {
                // Settled before the feed reader's turn, whose request may wait out the spacing first.
                let settled = try await pollAndSettle(connection, publisher: publisher, reader: reader, check: &check)
                report.acknowledged += settled.acknowledged
                report.refusals += settled.refusals
            }
            if readerTurn, let reader, try await reader.step(confirming: paused) {
                readerTurn = false
            } else if answersAreFree {
                readerTurn = true
            } else {
                let settled = try await pollAndSettle(connection, publisher: publisher, reader: reader, check: &check)
                report.acknowledged += settled.acknowledged
                report.refusals += settled.refusals
                readerTurn = true
            }
        } catch .transport(.stopping) {
            failure = .transport(.stopping)  // not a failure of the link: nothing to report
        } catch {
            logger.warning("\(error.description)")
            await heartbeat?.failed(error.description)
            failure = error
        }
        await heartbeat?.backingOff(
            seconds: await connection.backingOff(), failures: await connection.consecutiveFailures)
        await heartbeat?.linked(transport: connection.link.transport.rawValue, state: connection.link.state.description)
        await heartbeat?.droppedInbound(total: await connection.droppedInbound)
        if report.acknowledged > 0 {
            logger.info("agrirouter acknowledged \(report.acknowledged) samples")
            await heartbeat?.acknowledged()
        }
        // A failure shows at once; otherwise the pass's counts ride on the next due write (every 10 s
        // with the samples), not on a file of their own each pass.
        if failure != nil { await heartbeat?.beat() } else { await heartbeat?.refresh() }
        return (report, failure)
    }

    /// Reports rows committed before this start and gone since: the spool counts them against its
    /// commit mark when it opens. A spool deleted with its mark is still noticed against what the
    /// previous run's heartbeat saw it commit, though that may be up to ten seconds old, and which of
    /// the rows agrirouter had acknowledged is not known, so that count is an upper bound.
    private func checkForLostRows(_ heartbeat: HeartbeatWriter?) async {
        await Self.reportLostRows(of: spool, to: heartbeat, logger: logger)
        guard let heartbeat, let seen = heartbeat.previous?.spoolRowID, seen > 0,
            let highest = await spool.highestRowID(), highest < seen
        else { return }
        let reason =
            "the spool lost committed rows (its write-ahead log deleted or damaged, or the file moved aside); "
            + "up to \(seen - highest) samples taken before this start were not sent"
        logger.critical("\(reason)")
        await heartbeat.lost(Bounds.whole(Double(seen - highest)) ?? 0, reason: reason)
        await heartbeat.stored(rowID: highest)
    }

    /// How long a send cycle's take waits for the next append, to share its disk sync: a sampling
    /// interval at most (the append comes within one), never more than 1.25 s, which the batch's
    /// newest sample makes up for.
    static func rideAppendsWithin(samplingInterval: Double) -> Double {
        min(max(samplingInterval, 0), 1) + 0.25
    }

    /// Says what the spool counted against its commit mark, in the journal and in status, at once.
    static func reportLostRows(of spool: Spool, to heartbeat: HeartbeatWriter?, logger: Logger) async {
        guard let (count, reason) = await spool.takeLostRows() else { return }
        logger.critical("\(reason)")
        await heartbeat?.lost(count, reason: reason)
        if let highest = await spool.highestRowID() { await heartbeat?.stored(rowID: highest) }
        await heartbeat?.beat()
    }

    /// Polls the outbox, handing its answers on as any poll does, for the `Date` of its answer.
    /// Returns the samples its answers acknowledged; nil when the poll failed.
    private func learnTime(
        _ connection: AgrirouterConnection, publisher: Publisher, reader: FeedReader?,
        check: inout EndpointCheck, heartbeat: HeartbeatWriter?
    ) async -> Int? {
        do throws(GatewayError) {
            return try await pollAndSettle(connection, publisher: publisher, reader: reader, check: &check).acknowledged
        } catch {
            logger.warning("\(error.description)")
            await heartbeat?.failed(error.description)
            await heartbeat?.backingOff(
                seconds: await connection.backingOff(), failures: await connection.consecutiveFailures)
            return nil
        }
    }

    /// Sends dke:ping when the check wants one; its answer comes with the next outbox poll.
    private func pingIfDue(_ check: inout EndpointCheck, _ connection: AgrirouterConnection) async {
        guard check.isDue(uptimeNow: monotonic.now()) else { return }
        do throws(GatewayError) {
            let sent = try await connection.send(TechnicalMessageType.ping, payload: nil, for: .check)
            check.sent(sent.applicationMessageID, uptimeNow: monotonic.now())
        } catch {
            check.notSent()
            logger.warning("dke:ping: \(error.description)")
        }
    }

    /// agrirouter refused the endpoint's certificate, or the endpoint itself.
    static func refusesCertificate(_ error: GatewayError?) -> Bool {
        switch error {
        case .transport(.unauthorized)?, .transport(.forbidden)?, .transport(.clientCertificateRejected)?: return true
        default: return false
        }
    }

    /// Whether to go again at once rather than wait for the next cycle (the connection keeps the
    /// spacing): a backlog older than a cycle drains in full batches, the feed reader has requests
    /// to make, or a finished replay is being sent off. Samples of the current cycle wait for the next.
    private func hasWorkNow(publisher: Publisher, reader: FeedReader?, counter: Counter) async -> Bool {
        let status = await spool.status()
        if (status.oldestPendingAge ?? 0) > configuration.sendInterval + configuration.samplingInterval { return true }
        // Confirms go with the next publish, unless paused: they need no cycle of their own.
        if await reader?.isBusy(confirmsRideAlong: !(await spool.isSharingPaused())) ?? false { return true }
        guard await counter.draining else { return false }
        let awaiting = await publisher.awaitingAnswers
        return status.waiting > 0 || awaiting > 0
    }

    static func describe(_ output: SamplerOutput) -> String {
        guard case .event(let event) = output else { return "answering" }
        switch event {
        case .connected(let address): return "connected at \(address)"
        case .unreachable(let error), .disconnected(let error): return "unreachable (\(error.description))"
        default: return "answering"
        }
    }

    /// One GET of the outbox, then every answer to whoever it is for.
    private func pollAndSettle(
        _ connection: AgrirouterConnection, publisher: Publisher, reader: FeedReader?,
        check: inout EndpointCheck
    ) async throws(GatewayError) -> Publisher.CycleReport {
        for error in try await connection.poll() { logger.warning("outbox item skipped: \(error.description)") }
        return await deliver(connection, publisher: publisher, reader: reader, check: &check)
    }

    /// Waits until `deadline` (monotonic) for the next cycle. Over MQTT, what arrives meanwhile is
    /// taken as it comes, which costs no request: another machine's push reaches the others' store,
    /// and the cab view, at once rather than at the next cycle (up to a send interval later). Returns
    /// the samples that answers taken meanwhile acknowledged.
    private func idle(
        until deadline: Double, connection: AgrirouterConnection, publisher: Publisher, reader: FeedReader?,
        check: inout EndpointCheck
    ) async -> Int {
        guard connection.link.deliversAnswers, reader != nil else {
            try? await monotonic.sleep(until: deadline)
            return 0
        }
        var settled = 0
        while !Task.isCancelled, deadline - monotonic.now() > 0 {
            await connection.link.waitForMail(atMost: deadline - monotonic.now())
            guard deadline - monotonic.now() > 0 else { break }  // the cycle takes what came at its end
            guard let report = try? await pollAndSettle(connection, publisher: publisher, reader: reader, check: &check)
            else {
                // The cycle's own poll reports the failure; here the rest of the wait is slept.
                try? await monotonic.sleep(until: deadline)
                break
            }
            settled += report.acknowledged
        }
        return settled
    }

    /// Hands each part the answers the last polls brought it: the feed reader its pushes and
    /// answers, the endpoint check its ping's, the publisher its batches' (what it settled is returned).
    private func deliver(
        _ connection: AgrirouterConnection, publisher: Publisher, reader: FeedReader?,
        check: inout EndpointCheck
    ) async -> Publisher.CycleReport {
        let forReader = await connection.answers(for: .reader)
        if let reader { _ = await reader.absorb(forReader) }
        _ = check.absorb(await connection.answers(for: .check), now: trueNow())
        return await publisher.absorb(await connection.answers(for: .publisher))
    }
}

/// Whether the track failed at its last write: its error is logged once, not every second.
final class Flag: Sendable {
    private let value = Mutex(false)

    /// Sets it; returns what it was.
    func set(_ new: Bool) -> Bool {
        value.withLock { old in
            defer { old = new }
            return old
        }
    }
}

actor Counter {
    var summary = GatewayDaemon.Summary()
    /// The source has ended (a replay): send what is left without waiting for cycles.
    private(set) var draining = false

    func startDraining() { draining = true }

    func add(samples: Int = 0, published: Int = 0, acknowledged: Int = 0) {
        summary.samples += samples
        summary.published += published
        summary.acknowledged += acknowledged
    }
}
