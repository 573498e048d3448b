import AgrirouterSim
import AgrirouterWire
import Foundation
import GNSS
import TestSupport
import Testing

@testable import Gateway

/// agrigps goes by an answer's type, not its code: with the codes the documentation gives (a publish
/// 201, a push 200, a delete 201) and with those the local agrirouter gave before (200, 0, 200), it
/// publishes, reads pushes, catches up and cleans its feed alike.
@Suite("agrigps with either set of response codes", .serialized)
struct ResponseCodeTests {
    @Test(
        "published in both formats, every sample acknowledged and gone from the spool",
        arguments: [SimResponseCodes.documented, .earlier])
    func publishing(codes: SimResponseCodes) async throws {
        let rig = try await Rig.make(outputs: [.gpsInfo, .efdi], responseCodes: codes)
        try await tearingDown({ await rig.close() }) {
            let samples = (0..<12).map { sample($0, state: .fix(.threeD, .rtkFixed)) }
            await rig.spool.append(samples)
            _ = await rig.drain()
            let status = await rig.spool.status()
            #expect(status.pending == 0 && status.inFlight == 0 && status.parked == 0, "\(status.byOutput)")
            let left = try await rig.spool.allSamples()
            let (entries, times) = (try await rig.publishedEntries(), try await rig.publishedTimes())
            #expect(
                left.isEmpty && entries.count == 12 && times.count == 12,
                "\(left.count) left, \(entries.count) entries, \(times.count) times")
        }
    }

    @Test(
        "a push stored and confirmed; older messages in the feed deleted, the rest read and confirmed",
        arguments: [SimResponseCodes.documented, .earlier])
    func reading(codes: SimResponseCodes) async throws {
        let rig = try await PeerRig.make(responseCodes: codes)
        try await tearingDown({ await rig.close() }) {
            let now = Date()
            for (index, minutes) in [2.0, 40].enumerated() {
                let time = now.addingTimeInterval(-minutes * 60)
                await rig.simulator.deliver(
                    try gpsList([(.dGnss, 52 + Double(index), 8, time)]).serializedBytes(), from: rig.harvesterID,
                    to: rig.tractorID, sentAt: time, push: false)
            }
            await rig.reader.connected(now: now)
            try await rig.pumpUntilSettled()
            #expect(
                try await rig.store.history(of: rig.harvesterID).map(\.latitude) == [52],
                "the one in the window read, the older deleted")

            try await rig.publish([(.dRtkFinteger, 52.5, 8.25, Date())])
            try await rig.pumpUntilIdle { try await rig.store.view().machines.first?.lastPosition?.latitude == 52.5 }
            #expect(try await rig.store.view().machines.first?.lastPosition?.status == "D_RTK_FINTEGER")
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty)
            #expect(try await rig.confirmedOnlyAfterStoring())
            #expect(await rig.reader.counters.confirmed == 2)
        }
    }
}
