import Foundation
import TestSupport
import Testing

@testable import Spool

/// A send cycle's take written in the next append's commit (see `RidingTake`). The wait is an
/// injected sleep: one that returns at once stands for an append that never came, one that waits
/// until cancelled for an append that must come first.
@Suite(.timeLimit(.minutes(1)))
struct RidingTakeTests {
    static let never: @Sendable (Double) async -> Void = { _ in try? await Task.sleep(for: .seconds(3_600)) }
    static let atOnce: @Sendable (Double) async -> Void = { _ in }

    @Test("a take waiting for the next append is written with it, carries it, and leaves both outputs' rows in flight")
    func takeRidesTheNextAppend() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both())
        for seq in 0..<3 { #expect(isStored(await spool.append(sample(seq)))) }
        async let riding = spool.takeBatches(
            [.init(output: .gpsInfo), .init(output: .efdi, entryCost: 10)], byteBudget: 10_000,
            ridingNextAppendWithin: 60, sleep: Self.never)
        while !(await spool.takeWaitsForAppend) { await Task.yield() }
        #expect(isStored(await spool.append(sample(3))))
        let batches = try await riding
        #expect(batches.map(\.output) == [.gpsInfo, .efdi])
        #expect(batches.map { seqs($0.samples) } == [[0, 1, 2, 3], [0, 1, 2, 3]])
        #expect(await !spool.takeWaitsForAppend)
        let status = await spool.status()
        #expect(status.inFlight == 4 && status.pending == 0, "\(status)")
        // What was taken is acknowledged like any batch.
        #expect(try await spool.acknowledge(batches: batches.map(\.id)) == 4)
    }

    @Test("with no append within the wait, the take goes alone, with what was there")
    func takeGoesAloneWithoutAnAppend() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        for seq in 0..<2 { #expect(isStored(await spool.append(sample(seq)))) }
        let batches = try await spool.takeBatches(
            [.init(output: .gpsInfo)], byteBudget: 10_000, ridingNextAppendWithin: 60, sleep: Self.atOnce)
        #expect(batches.map { seqs($0.samples) } == [[0, 1]])
        #expect(await !spool.takeWaitsForAppend)
        // The next append carries no take.
        #expect(isStored(await spool.append(sample(2))))
        #expect(await spool.status().pending == 1)
    }

    @Test("a cancelled wait takes alone at once; an empty spool gives no batch either way")
    func cancelledWaitTakesAlone() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        let empty = try await spool.takeBatches(
            [.init(output: .gpsInfo)], byteBudget: 10_000, ridingNextAppendWithin: 60, sleep: Self.atOnce)
        #expect(empty.isEmpty)
        #expect(isStored(await spool.append(sample(0))))
        let task = Task {
            try await spool.takeBatches(
                [.init(output: .gpsInfo)], byteBudget: 10_000, ridingNextAppendWithin: 60, sleep: Self.never)
        }
        while !(await spool.takeWaitsForAppend) { await Task.yield() }
        task.cancel()
        let batches = try await task.value
        #expect(batches.map { seqs($0.samples) } == [[0]])
        #expect(await !spool.takeWaitsForAppend)
    }
}
