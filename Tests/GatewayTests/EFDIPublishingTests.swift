import AgrirouterSim
import AgrirouterWire
import Foundation
import GNSS
import Spool
import TestSupport
import Testing

@testable import Gateway

/// gps:info and EFDI from one spool to the local agrirouter: the description first, TimeLogs under
/// its team set, both in the same requests, and each output's refusals its own.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct EFDIPublishingTests {
    let states: [FixState] = [
        .fix(.threeD, .rtkFixed), .noFix, .fix(.threeD, .dgps), .noReceiver(.removed), .gpsdUnreachable,
    ]

    @Test func theDescriptionGoesFirstThenEverySampleArrivesOnceInBothFormatsInTheSameRequests() async throws {
        let rig = try await Rig.make(outputs: [.gpsInfo, .efdi])
        try await tearingDown({ await rig.close() }) {
            let samples = (0..<30).map { sample($0, state: states[$0 % states.count]) }
            await rig.spool.append(samples)
            let requestsBefore = await rig.simulator.gatewayRequestArrivals().count
            let first = await rig.cycle()
            #expect(first.error == nil)
            // One send, the description and the gps:info batch together, and the poll for their
            // answers. No TimeLog before the description is taken.
            #expect(await rig.simulator.gatewayRequestArrivals().count == requestsBefore + 2)
            let description = try #require(await rig.sent(TechnicalMessageType.deviceDescription).first)
            let teamSet = DeviceDescription(
                endpointID: rig.connection.endpoint.deviceAlternateId, softwareVersion: "9.9.9"
            ).teamSetContextID
            #expect(description.envelope.teamSetContextID == teamSet && description.envelope.mode == .publish)
            #expect(
                try Efdi_ISO11783_TaskData(serializedBytes: description.payload).device.first?.deviceDesignator
                    == "agrigps GNSS")
            let timeLogs = await rig.sent(TechnicalMessageType.timeLog)
            let entriesSent = try await rig.publishedEntries()
            #expect(timeLogs.isEmpty && entriesSent.count == 30)

            _ = await rig.drain()
            // Nobody receives descriptions at this agrirouter: VAL_000004, which counts as taken.
            #expect(await rig.publisher.descriptionState?.acceptedAt != nil)
            let logs = await rig.sent(TechnicalMessageType.timeLog)
            #expect(
                !logs.isEmpty
                    && logs.allSatisfy { $0.envelope.teamSetContextID == teamSet && $0.envelope.mode == .publish })
            let times = try await rig.publishedTimes()
            #expect(times.count == 30)
            let entries = samples.map { GPSEntry($0) }
            #expect(
                zip(times, entries).allSatisfy { time, entry in
                    time.positionStart.positionStatus.rawValue == entry.positionStatus.rawValue
                        && time.positionStart.positionNorth == entry.positionNorth
                        && abs(time.start.date.timeIntervalSince(entry.gpsUtcTimestamp.date)) <= 0.002
                })
            #expect(try await rig.publishedEntries().count == 30, "gps:info sent each sample once")
            #expect(try await rig.spool.allSamples().isEmpty)
            // The description was sent once: it is not due again for an hour.
            #expect(await rig.sent(TechnicalMessageType.deviceDescription).count == 1)
        }
    }

    @Test func aRefusalOfGPSInfoNeitherHoldsBackNorDuplicatesEFDI() async throws {
        let rig = try await Rig.make(
            outputs: [.gpsInfo, .efdi],
            spool: {
                $0.retryDelay = 0.5
                $0.maximumRetryDelay = 0.5
            })
        try await tearingDown({ await rig.close() }) {
            await rig.spool.append(sample(0, state: .fix(.threeD, .rtkFixed)))
            _ = await rig.drain()  // the description is taken, the first sample is through
            let samples = (1...10).map { sample($0, state: states[$0 % states.count]) }
            await rig.spool.append(samples)
            await rig.simulator.inject(.refuse(technicalMessageType: TechnicalMessageType.gpsInfo, code: "VAL_000301"))
            let refused = await rig.cycle()  // sent, and its answers fetched
            #expect(refused.error == nil)
            let status = await rig.spool.status()
            #expect(
                status.byOutput == ["gps_info": ["failed": 10], "efdi": ["acknowledged": 10]], "\(status.byOutput)")
            try await Task.sleep(for: .milliseconds(600))
            _ = await rig.drain()
            #expect(try await rig.publishedTimes().count == 11, "EFDI sent each sample once")
            #expect(try await rig.publishedEntries().count == 21, "gps:info sent the refused ten again")
            #expect(try await rig.spool.allSamples().isEmpty)
        }
    }

    @Test func anUnknownTeamSetSendsTheDescriptionAgainBeforeTheNextTimeLog() async throws {
        let rig = try await Rig.make(
            outputs: [.efdi],
            spool: {
                $0.retryDelay = 0.01
                $0.maximumRetryDelay = 0.01
            })
        try await tearingDown({ await rig.close() }) {
            await rig.spool.append(sample(0, state: .fix(.threeD, .rtkFixed)))
            _ = await rig.drain()
            #expect(await rig.sent(TechnicalMessageType.deviceDescription).count == 1)
            await rig.spool.append(sample(1, state: .noFix))
            await rig.simulator.inject(.refuse(technicalMessageType: TechnicalMessageType.timeLog, code: "VAL_000020"))
            // Sent, and refused in the same pass's poll.
            let answered = await rig.cycle()
            #expect(answered.refusals == [["VAL_000020"]])
            try await Task.sleep(for: .milliseconds(20))
            _ = await rig.drain()
            let types = await rig.simulator.sentMessages(endpoint: rig.connection.endpoint.deviceAlternateId).map(
                \.envelope.technicalMessageType
            )
            .filter { $0 == TechnicalMessageType.deviceDescription || $0 == TechnicalMessageType.timeLog }
            #expect(
                types == [
                    TechnicalMessageType.deviceDescription, TechnicalMessageType.timeLog, TechnicalMessageType.timeLog,
                    TechnicalMessageType.deviceDescription, TechnicalMessageType.timeLog,
                ])
            #expect(try await rig.spool.allSamples().isEmpty)
        }
    }

    @Test func aChangedDescriptionGoesUnderItsNewTeamSetBeforeTheNextTimeLog() async throws {
        let rig = try await Rig.make(outputs: [.efdi])
        try await tearingDown({ await rig.close() }) {
            await rig.spool.append(sample(0, state: .fix(.threeD, .rtkFixed)))
            _ = await rig.drain()
            let endpointID = rig.connection.endpoint.deviceAlternateId
            let old = DeviceDescription(endpointID: endpointID, softwareVersion: "9.9.9")
            let renamed = DeviceDescription(endpointID: endpointID, softwareVersion: "9.9.9", name: "Renamed tractor")
            #expect(old.teamSetContextID != renamed.teamSetContextID, "a changed description has a team set of its own")
            await rig.publisher.describe(renamed)
            await rig.publisher.describe(renamed)  // the same again changes nothing
            await rig.spool.append((1...3).map { sample($0, state: .fix(.threeD, .dgps)) })
            _ = await rig.drain()
            let sent = await rig.simulator.sentMessages(endpoint: endpointID)
                .filter {
                    [TechnicalMessageType.deviceDescription, TechnicalMessageType.timeLog].contains(
                        $0.envelope.technicalMessageType)
                }
                .map { ($0.envelope.technicalMessageType, $0.envelope.teamSetContextID) }
            let expected = [
                (TechnicalMessageType.deviceDescription, old.teamSetContextID),
                (TechnicalMessageType.timeLog, old.teamSetContextID),
                (TechnicalMessageType.deviceDescription, renamed.teamSetContextID),
                (TechnicalMessageType.timeLog, renamed.teamSetContextID),
            ]
            #expect(sent.map(\.0) == expected.map(\.0) && sent.map(\.1) == expected.map(\.1), "\(sent)")
            let designator = try await rig.sent(TechnicalMessageType.deviceDescription).last.map {
                try Efdi_ISO11783_TaskData(serializedBytes: $0.payload)
            }
            #expect(designator?.device.first?.deviceDesignator == "Renamed tractor")
            #expect(try await rig.publishedTimes().count == 4)
            #expect(try await rig.spool.allSamples().isEmpty)
        }
    }

    @Test(
        "samples with the machine's reading under a description without the machine (the work switch's first use): their Times carry none of its values; under the machine's description they do"
    )
    func machineValuesOnlyUnderTheirDescription() async throws {
        let rig = try await Rig.make(outputs: [.efdi])
        try await tearingDown({ await rig.close() }) {
            func working(_ index: Int) -> PositionSample {
                var item = sample(index, state: .fix(.threeD, .rtkFixed))
                item.machine = MachineReading(work: .working, engineSpeed: 1_800)
                item.machine?.totals = MachineTotals(effectiveSeconds: Double(index))
                return item
            }
            await rig.spool.append((0..<3).map(working))
            _ = await rig.drain()
            let before = try await rig.publishedTimes()
            #expect(
                before.count == 3
                    && before.allSatisfy { time in
                        time.dataLogValue.allSatisfy { $0.deviceElementIDRef == DeviceDescription.rootElementID }
                    }, "\(before.map(\.dataLogValue))")
            let endpointID = rig.connection.endpoint.deviceAlternateId
            await rig.publisher.describe(
                DeviceDescription(endpointID: endpointID, softwareVersion: "9.9.9", machine: true))
            await rig.spool.append((3..<6).map(working))
            _ = await rig.drain()
            let after = try await rig.publishedTimes().dropFirst(3)
            #expect(
                after.count == 3
                    && after.allSatisfy { time in
                        time.dataLogValue.contains {
                            $0.processDataDdi == 141 && $0.processDataValue == 1
                                && $0.deviceElementIDRef == DeviceDescription.machineElementID
                        }
                    }, "\(after.map(\.dataLogValue))")
        }
    }

    @Test(
        "a refused description holds EFDI back and gps:info goes on; it is sent again after the 300 s wait (virtual time), not before"
    )
    func aRefusedDescriptionHoldsEFDIBackAndGPSInfoGoesOn() async throws {
        let time = ManualClock()
        let rig = try await Rig.make(spacing: 0, monotonic: time.clock, outputs: [.gpsInfo, .efdi])
        try await tearingDown({ await rig.close() }) { () async throws in
            await rig.simulator.inject(
                .refuse(technicalMessageType: TechnicalMessageType.deviceDescription, code: "VAL_000021"))
            await rig.spool.append((0..<3).map { sample($0, state: .fix(.threeD, .dgps)) })
            let answered = await rig.cycle()
            #expect(answered.refusals == [["VAL_000021"]])
            #expect(await rig.publisher.descriptionState?.refusal == ["VAL_000021"])
            var status = await rig.spool.status()
            #expect(status.byOutput == ["gps_info": ["acknowledged": 3], "efdi": ["pending": 3]], "\(status.byOutput)")
            #expect(await rig.sent(TechnicalMessageType.timeLog).isEmpty)
            time.advance(by: 299)
            _ = await rig.cycle()
            #expect(await rig.sent(TechnicalMessageType.deviceDescription).count == 1, "not again within 300 s")
            time.advance(by: 1)
            _ = await rig.drain()
            #expect(await rig.sent(TechnicalMessageType.deviceDescription).count == 2)
            #expect(await rig.publisher.descriptionState?.refusal == nil)
            #expect(try await rig.publishedTimes().count == 3)
            status = await rig.spool.status()
            #expect(status.waiting == 0)
        }
    }

    @Test func bothBatchesTogetherStayWithinThePayloadCap() async throws {
        let rig = try await Rig.make(byteBudget: 20_000, outputs: [.gpsInfo, .efdi])
        try await tearingDown({ await rig.close() }) {
            await rig.spool.append((0..<2_000).map { sample($0, state: .fix(.threeD, .rtkFixed)) })
            _ = await rig.drain(limit: 200)
            #expect(try await rig.spool.allSamples().isEmpty)
            let requests = await rig.simulator.sentMessages(endpoint: rig.connection.endpoint.deviceAlternateId)
            let gps = requests.filter { $0.envelope.technicalMessageType == TechnicalMessageType.gpsInfo }
            let logs = requests.filter { $0.envelope.technicalMessageType == TechnicalMessageType.timeLog }
            // Each request's messages (they share an arrival) stay within the cap together.
            let arrivals = await rig.simulator.arrivals(endpoint: rig.connection.endpoint.deviceAlternateId)
            let byRequest = Dictionary(grouping: zip(arrivals, requests), by: \.0).values
            #expect(byRequest.allSatisfy { $0.reduce(0) { $0 + $1.1.payload.count } <= 20_000 })
            // While both have a backlog they split it; once gps:info has caught up, EFDI takes it all. (In
            // the first request EFDI waits for its description's answer, and gps:info has the cap alone.)
            let shared = byRequest.filter { request in
                request.contains { $0.1.envelope.technicalMessageType == TechnicalMessageType.timeLog }
            }
            let gpsBesideEFDI = shared.flatMap {
                $0.filter { $0.1.envelope.technicalMessageType == TechnicalMessageType.gpsInfo }
            }
            #expect(!gpsBesideEFDI.isEmpty && gpsBesideEFDI.allSatisfy { $0.1.payload.count <= 10_000 })
            #expect(logs.contains { $0.payload.count > 10_000 })
            #expect(gps.count >= 2)
            let (times, entries) = (try await rig.publishedTimes(), try await rig.publishedEntries())
            #expect(times.count == 2_000 && entries.count == 2_000)
        }
    }
}
