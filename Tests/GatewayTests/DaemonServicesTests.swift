import Foundation
import GNSS
import ServiceLifecycle
import Spool
import Synchronization
import TestSupport
import Testing

@testable import Gateway

/// The daemon's jobs as services in one group: how it stops.
@Suite("the daemon's services", .timeLimit(.minutes(1)))
struct DaemonServicesTests {
    /// A daemon that samples into a fresh spool in `scratch` only, and the source it samples.
    private func sampler(in scratch: TemporaryDirectory) -> (
        GatewayDaemon, Spool, AsyncStream<SamplerOutput>, AsyncStream<SamplerOutput>.Continuation
    ) {
        let spool = Spool(path: scratch.file("spool.sqlite"))
        let daemon = GatewayDaemon(spool: spool, connection: nil, setup: nil)
        let (source, feed) = AsyncStream<SamplerOutput>.makeStream()
        return (daemon, spool, source, feed)
    }

    @Test(
        "a graceful shutdown of the program's group ends the daemon's, nested in it: what was taken is in the spool, nothing after it is"
    )
    func gracefulShutdownStopsSampling() async throws {
        let scratch = TemporaryDirectory("services")
        let (daemon, spool, source, feed) = sampler(in: scratch)
        // As in `agrigps run`: the daemon runs in a service of the program's group, which owns the signals.
        let summary = Mutex<GatewayDaemon.Summary?>(nil)
        let program = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(
                        service: ClosureService {
                            let ran = await daemon.run(sampled: source)
                            summary.withLock { $0 = ran }
                        })
                ], logger: .init(label: "test")))
        let running = Task { try await program.run() }
        for second in 0..<5 {
            feed.yield(.sample(PositionSample(sampledAt: Date().addingTimeInterval(Double(second - 5)), state: .noFix)))
        }
        while await spool.status().pending < 5 { try await Task.sleep(for: .milliseconds(20)) }
        await program.triggerGracefulShutdown()
        try await running.value
        // The source is still open: the run ended because the group was shut down, not because it ran dry.
        feed.yield(.sample(PositionSample(sampledAt: Date(), state: .noFix)))
        #expect(summary.withLock { $0?.samples } == 5)
        #expect(await spool.status().pending == 5)
        feed.finish()
    }

    @Test("a service run alongside that ends (the credential watcher seeing new credentials) ends the daemon's run")
    func aServiceAlongsideEndsTheRun() async throws {
        let scratch = TemporaryDirectory("services")
        let (daemon, _, source, feed) = sampler(in: scratch)
        let watcher = ServiceGroupConfiguration.ServiceConfiguration(
            service: ClosureService { try await Task.sleep(for: .milliseconds(300)) },
            successTerminationBehavior: .gracefullyShutdownGroup)
        let started = Date()
        let summary = await daemon.run(sampled: source, alongside: [watcher])
        #expect(summary.samples == 0)
        #expect(Date().timeIntervalSince(started) < 10)
        feed.finish()
    }

    /// The publishing service in a group of its own, stopped gracefully 200 ms in: how long the stop took.
    private func stop(_ service: PublishingService) async throws -> Double {
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: service)], logger: .init(label: "test")))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(200))
        let stoppedAt = ContinuousClock.now
        await group.triggerGracefulShutdown()
        try await running.value
        let waited = ContinuousClock.now - stoppedAt
        return Double(waited.components.seconds) + Double(waited.components.attoseconds) / 1e18
    }

    @Test("a stop gives the request under way its grace, then ends it, and returns when the loop has")
    func aStuckRequestIsEndedAfterItsGrace() async throws {
        // A request that cancellation does not reach, as a GET of the outbox: only `abort` ends it.
        let request = Latch()
        let ended = Latch()
        let service = PublishingService(grace: 0.5, abort: { request.open() }, logger: .init(label: "test")) {
            await request.wait()
            ended.open()
        }
        let waited = try await stop(service)
        #expect(waited >= 0.45 && waited < 5, "waited \(waited) s")
        #expect(ended.isOpen, "the service returned before its loop")
    }

    @Test("while a GET of the outbox is under way the stop waits its grace and the holding grace")
    func anOutboxRequestIsGivenMore() async throws {
        let request = Latch()
        let service = PublishingService(
            grace: 0.3, holdingGrace: 0.6, holding: { true }, abort: { request.open() }, logger: .init(label: "test")
        ) { await request.wait() }
        let waited = try await stop(service)
        #expect(waited >= 0.85 && waited < 5, "waited \(waited) s")
    }

    @Test("a loop that ends at the stop is not waited on for the grace")
    func aLoopThatStopsIsNotHeld() async throws {
        let aborted = Latch()
        let service = PublishingService(grace: 10, abort: { aborted.open() }, logger: .init(label: "test")) {
            try? await Task.sleep(for: .seconds(60))  // the loop's wait between cycles, which a stop cancels
        }
        let waited = try await stop(service)
        #expect(waited < 5, "waited \(waited) s")
    }
}
