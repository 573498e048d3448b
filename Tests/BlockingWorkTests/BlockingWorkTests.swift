import BlockingWork
import Foundation
import Synchronization
import TestSupport
import Testing

/// An actor like the stores: synchronous, blocking work in its methods, run on a dedicated thread.
private actor BlockingStore {
    nonisolated let executor: DedicatedThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var calls = 0

    init(executor: DedicatedThreadExecutor) { self.executor = executor }

    /// Blocks its thread as an fsync on a slow card would, and says which thread that was.
    func blockingCall(seconds: Double) -> String {
        calls += 1
        usleep(UInt32(seconds * 1_000_000))
        return threadName()
    }

    var callCount: Int { calls }
}

private func threadName() -> String {
    ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
        .trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Counts how often a task on the cooperative pool gets to run while `work` is under way.
private func poolTicks(during work: @Sendable () async -> Void) async -> Int {
    let ticker = Task {
        var ticks = 0
        while !Task.isCancelled {
            ticks += 1
            try? await Task.sleep(for: .milliseconds(10))
        }
        return ticks
    }
    await work()
    ticker.cancel()
    return await ticker.value
}

/// How many bodies run at once, and the most that ever did.
private final class Overlap: Sendable {
    private let counts = Mutex<(now: Int, most: Int)>((0, 0))
    func enter() {
        counts.withLock {
            $0.now += 1
            $0.most = max($0.most, $0.now)
        }
    }
    func leave() { counts.withLock { $0.now -= 1 } }
    var most: Int { counts.withLock { $0.most } }
}

@Suite(.timeLimit(.minutes(1)))
struct BlockingWorkTests {
    @Test func anActorOnADedicatedExecutorRunsOnItsThread() async {
        let store = BlockingStore(executor: DedicatedThreadExecutor(name: "test-storage"))
        let name = await store.blockingCall(seconds: 0)
        #expect(name == "test-storage")
        #expect(threadName() != "test-storage")
    }

    /// A store made per test, as the tests make spools by the hundred: its thread must go with it.
    @Test func theThreadEndsWithItsActor() async throws {
        func threads() -> Int { ThreadCensus.count(named: "test-ends") }
        var store: BlockingStore? = BlockingStore(executor: DedicatedThreadExecutor(name: "test-ends"))
        _ = await store?.blockingCall(seconds: 0)
        #expect(threads() == 1)
        store = nil
        let deadline = ContinuousClock.now + .seconds(5)
        while threads() > 0 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(threads() == 0, "the executor's thread outlived its actor")
    }

    /// Two stores blocking at once, and more calls than the pool has threads: the pool keeps running
    /// other tasks all the while, and the calls of one executor never overlap.
    @Test func blockingCallsLeaveThePoolFree() async {
        // In a process of its own, where the pool it watches runs no other test's work.
        await #expect(processExitsWith: .success) {
            await Self.serialisedCalls()
            // The executor's thread ends with its last store; the child exits only after it.
            #expect(await ThreadCensus.waitUntilGone(["test-serial"]), "the executor's thread outlived its stores")
        }
    }

    private static func serialisedCalls() async {
        let executor = DedicatedThreadExecutor(name: "test-serial")
        let stores = [BlockingStore(executor: executor), BlockingStore(executor: executor)]
        let started = ContinuousClock.now
        let ticks = await poolTicks {
            await withTaskGroup(of: Void.self) { group in
                for store in stores {
                    for _ in 0..<4 { group.addTask { _ = await store.blockingCall(seconds: 0.1) } }
                }
            }
        }
        let elapsed = ContinuousClock.now - started
        // Eight calls of 0.1 s on one thread: serialised, so at least 0.8 s.
        #expect(elapsed >= .milliseconds(790))
        // A pool blocked by them would have ticked at most a couple of times.
        #expect(ticks >= 20, "the pool task ran \(ticks) times in \(elapsed)")
        let counts = [await stores[0].callCount, await stores[1].callCount]
        #expect(counts == [4, 4])
    }

    /// Six waits at once, three times the pool's threads here: they all run side by side, and the
    /// pool keeps running other tasks meanwhile.
    @Test func ownThreadWaitsDoNotHoldThePool() async {
        // In a process of its own, where the pool it watches runs no other test's work.
        await #expect(processExitsWith: .success) {
            let overlap = Overlap()
            let ticks = await poolTicks {
                await withTaskGroup(of: Void.self) { group in
                    for _ in 0..<6 {
                        group.addTask {
                            await onOwnThread {
                                overlap.enter()
                                usleep(300_000)
                                overlap.leave()
                            }
                        }
                    }
                }
            }
            #expect(ticks >= 10, "the pool task ran \(ticks) times")
            #expect(overlap.most == 6)
        }
    }

    private struct Refused: Error, Equatable { var code: Int32 }

    @Test func ownThreadPassesResultsAndTypedErrorsBack() async throws {
        let value = await onOwnThread { () -> Int in 42 }
        #expect(value == 42)
        do throws(Refused) {
            _ = try await onOwnThread { () throws(Refused) -> Int in throw Refused(code: 28) }
            Issue.record("no error came back")
        } catch {
            #expect(error == Refused(code: 28))
        }
    }
}
