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

    /// The publishing service in a group of its own, run until `body` (which stops it) is done and
    /// the group has returned.
    private func running(_ service: PublishingService, _ body: (ServiceGroup) async throws -> Void) async throws {
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [.init(service: service)], logger: .init(label: "test")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await body(group)
            try await tasks.waitForAll()
        }
    }

    @Test("a stop gives the request under way its grace (virtual time), then ends it, and returns when the loop has")
    func aStuckRequestIsEndedAfterItsGrace() async throws {
        // A request that cancellation does not reach, as a GET of the outbox: only `abort` ends it.
        let time = ManualClock()
        let (request, started, ended) = (Latch(), Latch(), Latch())
        let service = PublishingService(
            grace: 3, abort: { request.open() }, monotonic: time.clock, logger: .init(label: "test")
        ) {
            started.open()
            await request.wait()
            ended.open()
        }
        try await running(service) { group in
            await started.wait()
            await group.triggerGracefulShutdown()
            await time.sleepers(atLeast: 1)
            time.advance(by: 2.999)
            #expect(!request.isOpen, "ended before its grace was out")
            time.advance(by: 0.001)
        }
        #expect(request.isOpen && ended.isOpen, "the service returned before its loop")
    }

    @Test("while a GET of the outbox is under way the stop waits its grace and the holding grace (virtual time)")
    func anOutboxRequestIsGivenMore() async throws {
        let time = ManualClock()
        let (request, started) = (Latch(), Latch())
        let service = PublishingService(
            grace: 3, holdingGrace: 10, holding: { true }, abort: { request.open() }, monotonic: time.clock,
            logger: .init(label: "test")
        ) {
            started.open()
            await request.wait()
        }
        try await running(service) { group in
            await started.wait()
            await group.triggerGracefulShutdown()
            await time.sleepers(atLeast: 1)
            time.advance(by: 3)
            await time.sleepers(atLeast: 1)  // the holding grace
            time.advance(by: 9.999)
            #expect(!request.isOpen, "ended within the holding grace")
            time.advance(by: 0.001)
        }
        #expect(request.isOpen && time.now() == 1013)
    }

    @Test("a loop that ends at the stop is not waited on for the grace")
    func aLoopThatStopsIsNotHeld() async throws {
        let started = Latch()
        let service = PublishingService(grace: 10, logger: .init(label: "test")) {
            started.open()
            try? await Task.sleep(for: .seconds(60))  // the loop's wait between cycles, which a stop cancels
        }
        let stoppedAt = ContinuousClock.now
        try await running(service) { group in
            await started.wait()
            await group.triggerGracefulShutdown()
        }
        let waited = ContinuousClock.now - stoppedAt
        #expect(waited < .seconds(5), "waited \(waited)")
    }
}
