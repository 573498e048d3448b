import Foundation
import GRDB
import TestSupport
import Testing

@testable import Spool

/// gps:info and EFDI from one spool: a sample leaves only when every enabled output has been
/// acknowledged for it, and each output's batches, refusals and retries are its own.
@Suite struct SpoolOutputTests {
    @Test func aSampleLeavesOnlyWhenEveryOutputHasItsAcknowledgement() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both())
        for seq in 1...4 { await spool.append(sample(seq)) }
        let gps = try #require(try await spool.takeBatch(for: .gpsInfo, id: "g1", now: epoch))
        let efdi = try #require(try await spool.takeBatch(for: .efdi, id: "e1", maximumEntries: 2, now: epoch))
        #expect(gps.output == .gpsInfo && efdi.output == .efdi)
        #expect(seqs(gps.samples) == [1, 2, 3, 4] && seqs(efdi.samples) == [1, 2])
        #expect(try await spool.acknowledge(batch: "g1", now: epoch) == 0)  // EFDI still owes all four
        #expect(try await spool.allSamples().count == 4)
        #expect(
            await spool.status().byOutput == ["gps_info": ["acknowledged": 4], "efdi": ["in_flight": 2, "pending": 2]])
        #expect(try await spool.acknowledge(batch: "e1", now: epoch) == 2)
        #expect(seqs(try await spool.allSamples().map(\.0)) == [3, 4])
        // gps:info has nothing left to send; EFDI takes the rest.
        #expect(try await spool.takeBatch(for: .gpsInfo, now: epoch) == nil)
        let rest = try #require(try await spool.takeBatch(for: .efdi, id: "e2", now: epoch))
        #expect(seqs(rest.samples) == [3, 4])
        #expect(try await spool.acknowledge(batch: "e2", now: epoch) == 2)
        #expect(try await spool.allSamples().isEmpty)
        let status = await spool.status()
        #expect(status.waiting == 0 && status.byOutput.isEmpty)
    }

    @Test func aRefusalOfOneOutputNeitherHoldsBackNorDuplicatesTheOther() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both { $0.parkAfterFailures = 2 })
        for seq in 1...3 { await spool.append(sample(seq)) }
        _ = try await spool.takeBatch(for: .efdi, id: "e1", now: epoch)
        try await spool.fail(batch: "e1", reason: "VAL_000020", now: epoch)
        // gps:info is untouched by EFDI's failure: its samples go once, and are acknowledged once.
        let gps = try #require(try await spool.takeBatch(for: .gpsInfo, id: "g1", now: epoch))
        #expect(seqs(gps.samples) == [1, 2, 3])
        try await spool.acknowledge(batch: "g1", now: epoch)
        #expect(try await spool.takeBatch(for: .gpsInfo, now: epoch) == nil)
        // EFDI retries after its delay, and parks after its second failure.
        #expect(try await spool.takeBatch(for: .efdi, now: epoch) == nil)
        _ = try #require(try await spool.takeBatch(for: .efdi, id: "e2", now: epoch.addingTimeInterval(31)))
        try await spool.fail(batch: "e2", reason: "VAL_000020", now: epoch.addingTimeInterval(31))
        var status = await spool.status()
        #expect(status.parked == 3 && status.byOutput == ["gps_info": ["acknowledged": 3], "efdi": ["parked": 3]])
        // EFDI's second try follows a refusal, which agrirouter did not keep: nothing can arrive twice.
        #expect(status.resent == 0)
        #expect(try await spool.retryParked() == 3)
        _ = try #require(try await spool.takeBatch(for: .efdi, id: "e3", now: epoch.addingTimeInterval(40)))
        #expect(try await spool.acknowledge(batch: "e3", now: epoch.addingTimeInterval(40)) == 3)
        status = await spool.status()
        #expect(status.waiting == 0 && status.parked == 0)
    }

    @Test func releasesAndReclaimsAreByOutputAndRestartsFindEachBatchsOutput() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both { $0.inFlightTimeout = 300 })
        for seq in 1...2 { await spool.append(sample(seq)) }
        _ = try await spool.takeBatch(for: .gpsInfo, id: "g1", now: epoch)
        _ = try await spool.takeBatch(for: .efdi, id: "e1", now: epoch.addingTimeInterval(100))
        let inFlight = try await spool.inFlightBatches()
        #expect(
            inFlight.map { "\($0.id) \($0.output) \($0.sentAt.timeIntervalSince(epoch))" }.sorted() == [
                "e1 efdi 100.0", "g1 gps_info 0.0",
            ])
        try await spool.release(batch: "e1")
        #expect(await spool.status().byOutput == ["gps_info": ["in_flight": 2], "efdi": ["pending": 2]])
        // Only gps:info's batch is past the timeout.
        _ = try await spool.takeBatch(for: .efdi, id: "e2", now: epoch.addingTimeInterval(200))
        #expect(try await spool.reclaimExpiredBatches(now: epoch.addingTimeInterval(301)) == 2)
        #expect(await spool.status().byOutput == ["gps_info": ["pending": 2], "efdi": ["in_flight": 2]])
        // A late acknowledgement for the reclaimed gps:info batch still counts.
        #expect(try await spool.acknowledge(batch: "g1", now: epoch) == 0)
        #expect(try await spool.acknowledge(batch: "e2", now: epoch) == 2)
        #expect(try await spool.allSamples().isEmpty)
    }

    @Test func samplesTakenWhilePausedAreWithheldFromEveryOutput() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both())
        try await spool.setSharing(paused: true)
        await spool.append(sample(1))
        try await spool.setSharing(paused: false)
        await spool.append(sample(2))
        #expect(seqs(try #require(try await spool.takeBatch(for: .gpsInfo, now: epoch)).samples) == [2])
        #expect(seqs(try #require(try await spool.takeBatch(for: .efdi, now: epoch)).samples) == [2])
        let status = await spool.status()
        #expect(status.withheld == 1 && status.inFlight == 1)
        #expect(
            status.byOutput == ["gps_info": ["withheld": 1, "in_flight": 1], "efdi": ["withheld": 1, "in_flight": 1]])
    }

    @Test func turningAnOutputOffFinishesWhatOnlyItHeldAndTurningItOnTakesWhatIsLeft() async throws {
        let scratch = TemporaryDirectory("spool")
        do {
            let spool = Spool(path: scratch.spoolPath, configuration: both())
            for seq in 1...4 { await spool.append(sample(seq)) }
            _ = try await spool.takeBatch(for: .gpsInfo, id: "g1", maximumEntries: 2, now: epoch)
            try await spool.acknowledge(batch: "g1", now: epoch)
            _ = try await spool.takeBatch(for: .efdi, id: "e1", maximumEntries: 1, now: epoch)
        }
        // EFDI off: samples 1 and 2, which gps:info has had, are finished; 3 and 4 wait for gps:info.
        do {
            let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo] })
            #expect(seqs(try await spool.allSamples().map(\.0)) == [3, 4])
            #expect(await spool.status().byOutput == ["gps_info": ["pending": 2]])
            #expect(try await spool.takeBatch(for: .efdi, now: epoch) == nil)
            // A late answer for EFDI's batch changes nothing any more.
            #expect(try await spool.acknowledge(batch: "e1", now: epoch) == 0)
            await spool.append(sample(5))
        }
        // A process that only pauses or reads opens it without outputs of its own and changes nothing.
        do {
            let reader = Spool(path: scratch.spoolPath, configuration: configuration())
            #expect(await reader.enabledOutputs == [.gpsInfo])
            #expect(await reader.status().byOutput == ["gps_info": ["pending": 3]])
        }
        // EFDI on again: it takes every sample still in the spool.
        let spool = Spool(path: scratch.spoolPath, configuration: both())
        #expect(await spool.status().byOutput == ["gps_info": ["pending": 3], "efdi": ["pending": 3]])
        #expect(seqs(try #require(try await spool.takeBatch(for: .efdi, now: epoch)).samples) == [3, 4, 5])
        #expect(
            await Spool(path: scratch.spoolPath, configuration: configuration()).enabledOutputs == [.gpsInfo, .efdi])
    }

    @Test func withHistoryAFinishedSampleIsKeptAsAcknowledged() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: both { $0.acknowledgedHistory = 60 })
        await spool.append(sample(1))
        _ = try await spool.takeBatch(for: .gpsInfo, id: "g1", now: epoch)
        _ = try await spool.takeBatch(for: .efdi, id: "e1", now: epoch)
        try await spool.acknowledge(batch: "g1", now: epoch)
        #expect(await spool.status().acknowledgedKept == 0)
        try await spool.acknowledge(batch: "e1", now: epoch)
        #expect(await spool.status().acknowledgedKept == 1)
        #expect(try await spool.acknowledge(batch: "e1", now: epoch.addingTimeInterval(61)) == 0)
        #expect(try await spool.allSamples().isEmpty)
    }

    /// Any interleaving of takes, acknowledgements, refusals and releases across the two outputs: a
    /// sample stays until both have acknowledged it, and each output has every sample acknowledged
    /// exactly once in the end.
    @Test(arguments: 1...8 as ClosedRange<UInt64>)
    func randomInterleavingsLoseNothingAndFinishEverything(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(
            path: scratch.spoolPath,
            configuration: both {
                $0.retryDelay = 0
                $0.parkAfterFailures = 1000
            })
        var appended = 0
        var inFlight: [String: (SpoolOutput, [Int])] = [:]
        var acknowledged: [SpoolOutput: [Int]] = [.gpsInfo: [], .efdi: []]
        var drained = false
        for step in 1...5000 {
            if step > 400, appended == 30, inFlight.isEmpty, try await spool.allSamples().isEmpty {
                drained = true
                break
            }
            let output: SpoolOutput = random.next() % 2 == 0 ? .gpsInfo : .efdi
            switch random.next() % 5 {
            case 0 where appended < 30:
                appended += 1
                await spool.append(sample(appended))
            case 1, 0:
                let id = "b\(step)"
                if let batch = try await spool.takeBatch(
                    for: output, id: id, maximumEntries: Int(random.next() % 5) + 1, now: epoch)
                {
                    inFlight[id] = (output, seqs(batch.samples))
                }
            case 2, 3:
                guard
                    let id = inFlight.keys.sorted().first(where: { _ in random.next() % 2 == 0 })
                        ?? inFlight.keys.sorted().first,
                    let (batchOutput, batchSeqs) = inFlight.removeValue(forKey: id)
                else { continue }
                switch random.next() % 3 {
                case 0: try await spool.fail(batch: id, reason: "refused", now: epoch)
                case 1: try await spool.release(batch: id)
                default:
                    try await spool.acknowledge(batch: id, now: epoch)
                    acknowledged[batchOutput, default: []] += batchSeqs
                }
            default:
                // Every sample still in the spool is owed by at least one output.
                let left = Set(seqs(try await spool.allSamples().map(\.0)))
                let owed = Set(1...max(appended, 1)).subtracting(
                    Set(acknowledged[.gpsInfo]!).intersection(acknowledged[.efdi]!))
                #expect(left == owed.filter { $0 <= appended })
            }
        }
        #expect(drained, "the spool did not drain in 5000 steps")
        #expect(acknowledged[.gpsInfo]!.sorted() == Array(1...30))
        #expect(acknowledged[.efdi]!.sorted() == Array(1...30))
        #expect(await spool.status().waiting == 0)
    }
}
