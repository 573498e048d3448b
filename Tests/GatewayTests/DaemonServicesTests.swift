import Foundation
import GNSS
import ServiceLifecycle
import Spool
import Testing

@testable import Gateway

/// The daemon's jobs as services in one group: how it stops.
@Suite("the daemon's services", .timeLimit(.minutes(1)))
struct DaemonServicesTests {
    /// A daemon that samples into a fresh spool only, and the source it samples.
    private func sampler() -> (
        GatewayDaemon, Spool, AsyncStream<SamplerOutput>, AsyncStream<SamplerOutput>.Continuation, String
    ) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "agrigps-services-\(UUID().uuidString)"
        ).path
        let spool = Spool(path: directory + "/spool.sqlite")
        let daemon = GatewayDaemon(spool: spool, connection: nil, setup: nil)
        let (source, feed) = AsyncStream<SamplerOutput>.makeStream()
        return (daemon, spool, source, feed, directory)
    }

    @Test("a graceful shutdown through the group ends sampling: what was taken is in the spool, nothing after it is")
    func gracefulShutdownStopsSampling() async throws {
        let (daemon, spool, source, feed, directory) = sampler()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (groups, handOver) = AsyncStream<ServiceGroup>.makeStream()
        let running = Task { await daemon.run(sampled: source, started: { handOver.yield($0) }) }
        var iterator = groups.makeAsyncIterator()
        let group = try #require(await iterator.next())
        for second in 0..<5 {
            feed.yield(.sample(PositionSample(sampledAt: Date().addingTimeInterval(Double(second - 5)), state: .noFix)))
        }
        while await spool.status().pending < 5 { try await Task.sleep(for: .milliseconds(20)) }
        await group.triggerGracefulShutdown()
        let summary = await running.value
        // The source is still open: the run ended because the group was shut down, not because it ran dry.
        feed.yield(.sample(PositionSample(sampledAt: Date(), state: .noFix)))
        #expect(summary.samples == 5)
        #expect(await spool.status().pending == 5)
        feed.finish()
    }

    @Test("a service run alongside that ends (the credential watcher seeing new credentials) ends the daemon's run")
    func aServiceAlongsideEndsTheRun() async throws {
        let (daemon, _, source, feed, directory) = sampler()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let watcher = ServiceGroupConfiguration.ServiceConfiguration(
            service: ClosureService { try await Task.sleep(for: .milliseconds(300)) },
            successTerminationBehavior: .gracefullyShutdownGroup)
        let started = Date()
        let summary = await daemon.run(sampled: source, alongside: [watcher])
        #expect(summary.samples == 0)
        #expect(Date().timeIntervalSince(started) < 10)
        feed.finish()
    }

    @Test("a stoppable job asked to stop is cancelled and waited for at most its grace")
    func aStuckJobIsLeftAfterItsGrace() async throws {
        // A job that ignores cancellation for 30 s, as a request on curl's own thread does.
        let job = StoppableJob(grace: 0.5, logger: .init(label: "test")) {
            await withCheckedContinuation { continuation in
                LateCallback.after(seconds: 30) { continuation.resume() }
            }
        }
        let running = Task { await job.run() }
        try await Task.sleep(for: .milliseconds(200))
        let cancelledAt = Date()
        running.cancel()
        await running.value
        let waited = Date().timeIntervalSince(cancelledAt)
        #expect(waited >= 0.4 && waited < 5, "waited \(waited) s")
    }
}

/// Calls back after a delay from a thread of its own, outside Swift's concurrency: a stand-in for
/// work that cancellation cannot reach.
enum LateCallback {
    static func after(seconds: Double, _ body: @escaping @Sendable () -> Void) {
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: seconds)
            body()
        }
    }
}
