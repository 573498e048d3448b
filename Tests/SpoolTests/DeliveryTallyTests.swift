import Foundation
import TestSupport
import Testing

@testable import Spool

/// The spool's count of what became of samples, for the machine's own records.
@Suite struct DeliveryTallyTests {
    /// The tally `times` should give for `event`: one per sample, in its quarter hour.
    func expected(_ event: DeliveryTally.Event, _ seqs: [Int]) -> DeliveryTally {
        var tally = DeliveryTally()
        for seq in seqs { tally.count(event, at: epoch.timeIntervalSince1970 + Double(seq)) }
        return tally
    }

    @Test(
        "a sample counts as sent the first time either output sends it, and as acknowledged once every output is done with it"
    )
    func sentOnceAcknowledgedOnce() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo, .efdi] })
        await spool.append((1...4).map { sample($0) })
        #expect(await spool.takeDeliveryTally().isEmpty, "an append sends nothing")
        let gps = try #require(try await spool.takeBatch(for: .gpsInfo, id: "gps", now: epoch))
        #expect(gps.samples.count == 4)
        #expect(await spool.takeDeliveryTally() == expected(.sent, [1, 2, 3, 4]))
        let efdi = try #require(try await spool.takeBatch(for: .efdi, id: "efdi", now: epoch))
        #expect(efdi.samples.count == 4)
        #expect(await spool.takeDeliveryTally().isEmpty, "sent by gps:info already")
        #expect(try await spool.acknowledge(batch: "gps", now: epoch) == 0)
        #expect(await spool.takeDeliveryTally().isEmpty, "EFDI still owes them")
        #expect(try await spool.acknowledge(batch: "efdi", now: epoch) == 4)
        #expect(await spool.takeDeliveryTally() == expected(.acknowledged, [1, 2, 3, 4]))

        // A batch that failed and is sent again is not sent twice in the records.
        await spool.append(sample(5))
        _ = try await spool.takeBatch(for: .gpsInfo, id: "first", now: epoch)
        try await spool.release(batch: "first")
        _ = try await spool.takeBatch(for: .gpsInfo, id: "again", now: epoch)
        #expect(await spool.takeDeliveryTally() == expected(.sent, [5]))
    }

    @Test("samples dropped unsent by a cap count as lost, but not those withheld while sharing was paused")
    func lostToACap() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumRows = 3 })
        await spool.append((1...3).map { sample($0) })
        try await spool.setSharing(paused: true)
        await spool.append(sample(4))  // withheld: never to be sent
        try await spool.setSharing(paused: false)
        for seq in 5...7 { await spool.append(sample(seq)) }
        #expect(seqs(try await spool.allSamples().map(\.0)) == [5, 6, 7])
        #expect(await spool.takeDeliveryTally() == expected(.lost, [1, 2, 3]))
    }

    @Test("samples held in memory and lost at shutdown count as lost")
    func lostAtShutdown() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumPageCount = 24 })
        var (seq, held) = (0, [Int]())
        while held.count < 3 && seq < 100_000 {
            seq += 1
            if case .heldInMemory = await spool.append(sample(seq)) { held.append(seq) }
        }
        _ = await spool.takeDeliveryTally()
        #expect(await spool.flushHeld().lost == 3)
        #expect(await spool.takeDeliveryTally() == expected(.lost, held))
    }

    @Test("counts go by quarter hour of the sample's time; nonsense times are not counted")
    func quarters() {
        var tally = DeliveryTally()
        tally.count(.sent, at: 899.5)
        tally.count(.sent, at: 900)
        tally.count(.acknowledged, at: 1799, 2)
        for nonsense in [-1, .nan, .infinity, 1e12] { tally.count(.lost, at: nonsense) }
        #expect(tally.byTime.map(\.start) == [0, 900])
        #expect(
            tally.byTime.map(\.counts) == [
                DeliveryTally.Counts(sent: 1), DeliveryTally.Counts(sent: 1, acknowledged: 2),
            ])
        var other = DeliveryTally()
        other.count(.lost, at: 0)
        tally.merge(other)
        #expect(tally.byTime.first?.counts == DeliveryTally.Counts(sent: 1, lost: 1))
    }
}
