import Agrirouter
import Foundation
import GNSS
import Logging
import Spool

/// The long-running job: samples go to the spool first, always; when the machine is onboarded, the
/// publisher sends them to agrirouter. One object, stopped by cancelling the task that runs it.
public struct GatewayDaemon: Sendable {
    public struct Configuration: Sendable {
        public var samplingInterval: Double = 1
        /// Seconds between send cycles when there is no backlog (5, 10 or 20 are usual).
        public var sendInterval: Double = 10
        /// Seconds between attempts of the endpoint set-up while agrirouter cannot be reached.
        public var setupRetry: Double = 30
        /// Re-send capabilities and subscription this often, as agrirouter recommends.
        public var setupRenewal: Double = 24 * 3600
        /// At the end of a finite source (a replay), how long to keep sending before giving up.
        public var drainTimeout: Double = 300

        public init() {}
    }

    public struct Summary: Sendable, Equatable {
        public var samples = 0
        public var published = 0
        public var acknowledged = 0
    }

    private let spool: Spool
    private let connection: AgrirouterConnection?
    private let setup: EndpointSetup?
    private let configuration: Configuration
    private let logger: Logger

    /// `connection` and `setup` are nil when the machine is not onboarded: it then samples into the spool only.
    public init(spool: Spool, connection: AgrirouterConnection?, setup: EndpointSetup?,
                configuration: Configuration = Configuration(), logger: Logger = Logger(label: "agrigps.daemon")) {
        self.spool = spool
        self.connection = connection
        self.setup = setup
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs until cancelled, or, for a finite source, until it ends and the spool has been sent.
    public func run(events: AsyncStream<SourceEvent>, skewLimit: Double? = 60) async -> Summary {
        do {
            try await spool.setSharing(paused: false)  // a start with credentials means sharing is on
        } catch {
            logger.error("\(error.description)")
        }
        let counter = Counter()
        let sampling = Task { [spool, configuration, logger] in
            for await sample in Sampler(interval: configuration.samplingInterval, skewLimit: skewLimit).samples(from: events) {
                if case .heldInMemory(let error) = await spool.append(sample) {
                    logger.warning("sample held in memory: \(error.description)")
                }
                await counter.add(samples: 1)
            }
        }
        let publishing = Task { [self] in await publish(counter: counter) }
        await withTaskCancellationHandler {
            await sampling.value
        } onCancel: {
            sampling.cancel()
        }
        if !Task.isCancelled, connection != nil {
            await drain()
        }
        publishing.cancel()
        _ = await publishing.value
        return await counter.summary
    }

    private func publish(counter: Counter) async {
        guard let connection, let setup else {
            logger.notice("not onboarded: sampling into the spool only")
            return
        }
        let publisher = Publisher(spool: spool, connection: connection, logger: logger)
        var setUpAt: Date?
        while !Task.isCancelled {
            if setUpAt.map({ Date().timeIntervalSince($0) > configuration.setupRenewal }) ?? true {
                do {
                    let seen = await publisher.absorb(try await setup.run(on: connection))
                    await counter.add(acknowledged: seen.acknowledged)
                    setUpAt = Date()
                    logger.info("capabilities and subscription acknowledged")
                } catch {
                    logger.warning("endpoint set-up: \(error.description); retrying in \(Int(configuration.setupRetry)) s")
                    try? await Task.sleep(for: .seconds(configuration.setupRetry))
                    continue
                }
            }
            if await spool.isSharingPaused() {
                try? await Task.sleep(for: .seconds(configuration.sendInterval))
                continue
            }
            let report = await publisher.cycle()
            await counter.add(published: report.published, acknowledged: report.acknowledged)
            if report.acknowledged > 0 { logger.info("agrirouter acknowledged \(report.acknowledged) samples") }
            if let error = report.error { logger.warning("\(error.description)") }
            // With a backlog or answers due, go again at once: the connection keeps the spacing.
            let pending = await spool.status().pending
            let awaiting = await publisher.awaitingAnswers
            let busy = report.published > 0 || awaiting > 0 || pending > 0
            if !busy || report.error != nil {
                try? await Task.sleep(for: .seconds(configuration.sendInterval))
            }
        }
    }

    /// Waits until nothing is left to send or in flight, or the drain timeout passes.
    private func drain() async {
        let deadline = Date().addingTimeInterval(configuration.drainTimeout)
        while Date() < deadline && !Task.isCancelled {
            let status = await spool.status()
            if status.pending + status.inFlight + status.failed == 0 { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
        logger.warning("stopped with samples still in the spool; they are sent on the next run")
    }
}

private actor Counter {
    var summary = GatewayDaemon.Summary()

    func add(samples: Int = 0, published: Int = 0, acknowledged: Int = 0) {
        summary.samples += samples
        summary.published += published
        summary.acknowledged += acknowledged
    }
}
