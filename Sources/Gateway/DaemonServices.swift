import Clocks
import Foundation
import GNSS
import Logging
import ServiceLifecycle
import Spool
import StateDirectory

/// Takes every sample into the spool, the track and the heartbeat, and feeds systemd's watchdog.
///
/// A graceful shutdown ends it first: no sample is taken after the publisher has stopped. A
/// finite source (a replay) ends it by itself; it then waits, up to the drain timeout, until what
/// it sampled has been sent and the feed read, and its end shuts the others down.
struct SamplingService: Service {
    var source: AsyncStream<SamplerOutput>
    var spool: Spool
    var others: OtherMachinesStore?
    var configuration: GatewayDaemon.Configuration
    var counter: Counter
    var heartbeat: HeartbeatWriter?
    var trackFailing: Flag
    /// The feed reader whose catching up a finite source's end waits for; nil when it does not read.
    var reader: FeedReader?
    /// Whether there is an agrirouter to drain to.
    var connected: Bool
    var logger: Logger

    func run() async {
        let notifier = configuration.notifier
        // The spool is open (the daemon's start opened it): READY once gpsd has answered or failed to.
        var ready = false
        var countedAt = configuration.monotonic.now()
        // Going on from the totals the last run left, or from zero on a box that never counted.
        var totalling = MachineTotalling(totals: await spool.machineTotals() ?? MachineTotals())
        for await output in source.cancelOnGracefulShutdown() {
            if !ready {
                ready = true
                notifier?.ready(status: "started; gpsd \(GatewayDaemon.describe(output))")
            }
            guard case .sample(let sample) = output else { continue }
            await take(sample, totalling: &totalling)
            if configuration.monotonic.now() - countedAt >= 10 {
                countedAt = configuration.monotonic.now()
                await GatewayDaemon.countDeliveries(
                    from: spool, in: configuration, logger: logger, failing: trackFailing)
                // A spool reopened while running (after a fault, or a corrupt file moved aside) may have counted a loss.
                await GatewayDaemon.reportLostRows(of: spool, to: heartbeat, logger: logger)
            }
            // The watchdog is fed from this loop only: if sampling into the spool stalls, systemd restarts us.
            if let notifier {
                let summary = await counter.summary
                notifier.send(
                    "WATCHDOG=1\nSTATUS=\(sample.state.name); \(summary.samples) samples, \(summary.acknowledged) acknowledged"
                )
            }
        }
        notifier?.stopping()
        guard !Task.isCancelled, !Task.isShuttingDownGracefully, connected else { return }
        await counter.startDraining()
        await drain()
    }

    /// The spool first, always; then the counts, the heartbeat and the track.
    private func take(_ sample: PositionSample, totalling: inout MachineTotalling) async {
        var sample = sample
        if let machine = configuration.machine { sample.machine = machine(sample, await spool.workSwitch()) }
        let totals = totalling.add(sample.machine, at: sample.receiverTime ?? sample.sampledAt)
        sample.machine?.totals = totals
        configuration.clock?.observe(sample)
        var rowID: Int64?
        switch await spool.append(sample) {
        case .heldInMemory(let error): logger.warning("sample held in memory: \(error.description)")
        case .stored(let id): rowID = id
        }
        await counter.add(samples: 1)
        if let heartbeat, await heartbeat.countsOlder(than: 10) {
            await heartbeat.counted(
                spool: await spool.status(), others: try? await others?.view(staleAfter: configuration.staleAfter),
                feed: await reader?.counters)
        }
        await heartbeat?.sampled(sample, rowID: rowID)
        await GatewayDaemon.record(sample, in: configuration, logger: logger, failing: trackFailing)
    }

    /// Waits until nothing is left to send or in flight, and the feed has been read, or the drain
    /// timeout passes, or a stop comes.
    private func drain() async {
        let deadline = configuration.monotonic.now() + configuration.drainTimeout
        while configuration.monotonic.now() < deadline && !Task.isCancelled && !Task.isShuttingDownGracefully {
            let status = await spool.status()
            let feedRead = await reader?.hasCaughtUp ?? true
            if status.waiting == 0 && feedRead { return }
            try? await configuration.monotonic.sleep(for: 0.1)
        }
        logger.warning("stopped with samples still in the spool; they are sent on the next run")
    }
}

/// The machine's running totals as samples come: each sample's reading stands for the time until
/// the next one (at most `PositionSample.longestStep`). A sample without a reading breaks the run.
struct MachineTotalling {
    var totals: MachineTotals
    private var previous: (time: Date, reading: MachineReading)?

    init(totals: MachineTotals) {
        self.totals = totals
    }

    /// The totals at a sample with `reading` taken at `time`; nil without a reading.
    mutating func add(_ reading: MachineReading?, at time: Date) -> MachineTotals? {
        defer { previous = reading.map { (time, $0) } }
        guard reading != nil else { return nil }
        if let previous { totals = totals.adding(previous.reading, from: previous.time, to: time) }
        return totals
    }
}

/// The publisher's loop as a service. A graceful shutdown (or a cancellation) cancels the loop at
/// once, so it starts nothing new, but a request to agrirouter under way is not cut off: it has
/// `grace` seconds to bring its answer, and a GET of the outbox, whose answers agrirouter gives only
/// once and which are lost if the process ends before it records them, `holdingGrace` more while
/// `holding` says one is under way. What is still under way then is ended (`abort`); its batch
/// stays in flight in the spool, and the next start looks for its answer before sending it again.
/// The service returns when the loop has.
struct PublishingService: Service {
    var grace: Double
    var holdingGrace: Double = 0
    var holding: @Sendable () async -> Bool = { false }
    var abort: @Sendable () -> Void = {}
    /// What the graces are waited on.
    var monotonic: MonotonicClock = .system
    var logger: Logger
    var job: @Sendable () async -> Void

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await cancelWhenGracefulShutdown { await job() } }
            group.addTask { await endRequestsAfterGrace() }
            // The loop's end, or the requests ended for it: either way the loop is let go to its end.
            await group.next()
            group.cancelAll()
        }
    }

    /// Waits for the shutdown, then for the grace; cancelled as soon as the loop has ended.
    private func endRequestsAfterGrace() async {
        do {
            try await gracefulShutdown()
            try await monotonic.sleep(for: grace)
        } catch {
            // The loop ended (nothing is under way), or the service was cancelled: nothing waits.
            return abort()
        }
        if holdingGrace > 0, await holding() {
            logger.notice(
                "waiting up to \(Int(holdingGrace)) s for the outbox's answers in progress, which agrirouter gives only once"
            )
            guard (try? await monotonic.sleep(for: holdingGrace)) != nil else { return abort() }
            logger.warning(
                "stopping before the outbox's answers arrived: their batches go again after the outbox's life")
        } else {
            logger.notice("ending the request in progress; its samples stay in the spool")
        }
        abort()
    }
}

/// Imports the TaskData the feed reader receives, beside the publisher's loop; ends at the start
/// of a graceful shutdown (a read in progress stops, and its message comes again after the start).
struct TaskDataImportService: Service {
    var reader: FeedReader

    func run() async {
        await cancelWhenGracefulShutdown { [reader] in await reader.runImports() }
    }
}
