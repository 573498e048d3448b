import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Fields
import Foundation
import GNSS
import Spool
import StateDirectory
import SwiftProtobuf
import TestSupport
import Testing

@testable import Gateway

/// Two endpoints at one simulator: "Tractor", which reads its feed into a store, and "Harvester",
/// a peer that publishes. Both have sent capabilities and subscription.
struct PeerRig {
    let simulator: AgrirouterSimulator
    let tractor: AgrirouterConnection
    let harvester: AgrirouterConnection
    let store: OtherMachinesStore
    let reader: FeedReader
    /// The rig's state directory, removed with the rig.
    let scratch: TemporaryDirectory
    var directory: String { scratch.path }
    /// The reader's imports, run as the daemon runs them beside its loop; ended by `close`.
    let importing: Task<Void, Never>?

    var tractorID: String { tractor.endpoint.deviceAlternateId }
    var harvesterID: String { harvester.endpoint.deviceAlternateId }

    static func make(
        configure: (inout FeedReader.Configuration) -> Void = { _ in }, extraTANs: [String: String] = [:],
        readingTaskData: Bool = false, responseCodes: SimResponseCodes = .documented,
        importGate: (@Sendable () async -> Void)? = nil
    ) async throws -> PeerRig {
        var simulatorConfiguration = SimConfiguration(
            tans: ["TAN0000001": "Tractor", "TAN0000002": "Harvester"].merging(extraTANs) { first, _ in first })
        simulatorConfiguration.responseCodes = responseCodes
        let simulator = try await AgrirouterSimulator.start(simulatorConfiguration)
        var connections: [AgrirouterConnection] = []
        for (tan, id) in [("TAN0000001", "urn:agrigps:tractor"), ("TAN0000002", "urn:agrigps:harvester")] {
            let endpoint = try await simulator.onboard(tan: tan, externalID: id)
            let connection = try AgrirouterConnection(
                endpoint: endpoint, trustedCAPEM: simulator.caCertificatePEM, minimumSpacing: 0.01, timeout: 10)
            try await EndpointSetup(applicationID: "app", certificationVersionID: "v", answerTimeout: 10).run(
                on: connection)
            connections.append(connection)
        }
        let scratch = TemporaryDirectory("feed")
        let directory = scratch.path
        let store = OtherMachinesStore(path: directory + "/others.sqlite")
        var configuration = FeedReader.Configuration()
        configure(&configuration)
        let reader = FeedReader(
            store: store, connection: connections[0], ownEndpointID: connections[0].endpoint.deviceAlternateId,
            configuration: configuration,
            fields: readingTaskData ? FieldStore(path: directory + "/fields.sqlite") : nil,
            importGate: importGate)
        return PeerRig(
            simulator: simulator, tractor: connections[0], harvester: connections[1], store: store, reader: reader,
            scratch: scratch,
            importing: readingTaskData ? Task { await reader.runImports() } : nil)
    }

    func close() async {
        importing?.cancel()
        await importing?.value
        await simulator.shutdown()
        scratch.remove()
    }

    /// The daemon's loop for the tractor, reduced to reading: poll, hand over, make the next request.
    /// Stops when `done` holds, or after `passes`.
    func pump(passes: Int = 60, until done: () async throws -> Bool) async throws {
        for _ in 0..<passes {
            let (responses, _) = try await tractor.fetchOutbox()
            _ = await reader.absorb(responses)
            if try await done() { return }
            try await reader.step()
        }
    }

    /// Pumps until `done` holds and the reader has nothing left to send, wait for or import.
    func pumpUntilIdle(_ done: @escaping () async throws -> Bool) async throws {
        try await pump {
            let busy = await reader.isBusy, importing = await reader.importsInProgress > 0
            let finished = try await done()
            return !busy && !importing && finished
        }
    }

    /// Pumps until nothing is left to send or wait for, and the tractor's feed is empty.
    func pumpUntilSettled() async throws {
        try await pump {
            let busy = await reader.isBusy, importing = await reader.importsInProgress > 0
            let feed = await simulator.feed(endpoint: tractorID)
            return !busy && !importing && feed.isEmpty
        }
    }

    /// Connected and caught up, then one position from the harvester, pushed and stored: its
    /// confirm is due, and sent by no one yet.
    func pushStored() async throws {
        await reader.connected()
        try await pumpUntilSettled()
        try await publish([(.dGnss, 52.5, 8.25, Date())])
        try await pump { try await store.view().machines.first?.lastPosition != nil }
    }

    /// The harvester publishes a GPSList, as a gateway does.
    func publish(_ entries: [(GPSEntry.PositionStatus, Double, Double, Date)]) async throws {
        try await harvester.send(TechnicalMessageType.gpsInfo, mode: .publish, payload: gpsList(entries))
    }

    /// Every confirmed message was stored before its confirm arrived.
    func confirmedOnlyAfterStoring() async throws -> Bool {
        let stored = try await store.storedMessages()
        let confirmations = await simulator.confirmations(endpoint: tractorID)
        return !confirmations.isEmpty
            && confirmations.allSatisfy { confirmation in
                stored[confirmation.messageID].map { $0 <= confirmation.at } ?? false
            }
    }
}

@Suite("Reading the others through agrirouter", .serialized)
struct FeedReaderTests {
    @Test("a push from the peer is stored under its name and confirmed, and nothing is confirmed before it is stored")
    func push() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            await rig.reader.connected()
            try await rig.pumpUntilSettled()
            try await rig.publish([(.dRtkFinteger, 52.5, 8.25, Date())])
            try await rig.pumpUntilIdle { try await rig.store.view().machines.first?.lastPosition != nil }
            let machine = try #require(try await rig.store.view().machines.first)
            #expect(machine.endpointID == rig.harvesterID && machine.name == "Harvester")
            #expect(machine.lastPosition?.status == "D_RTK_FINTEGER" && machine.lastPosition?.latitude == 52.5)
            #expect(try await rig.store.view().ownName == "Tractor")
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty)
            #expect(try await rig.confirmedOnlyAfterStoring())
        }
    }

    @Test(
        "a confirm rides in the publisher's request: one request carries the samples and the confirm, and its answer reaches the reader"
    )
    func confirmRidesAlong() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            // The push is stored, so its confirm is due; the reader makes no request of its own for it.
            try await rig.pushStored()
            let (busy, busyButConfirms) = (await rig.reader.isBusy, await rig.reader.isBusy(confirmsRideAlong: true))
            #expect(busy && !busyButConfirms)
            #expect(try await !rig.reader.step(confirming: false), "nothing but the confirm was due")
            var configuration = SpoolConfiguration()
            configuration.wireSize = GPSEntry.wireSize(of:)
            configuration.outputs = [.gpsInfo]
            let spool = Spool(path: rig.directory + "/spool.sqlite", configuration: configuration)
            await spool.append(sample(1, state: .fix(.threeD, .rtkFixed)))
            let publisher = Publisher(spool: spool, connection: rig.tractor)
            let before = await rig.simulator.requestCount(endpoint: rig.tractorID)
            let along = try #require(await rig.reader.confirmToRideAlong())
            #expect(await rig.reader.confirmToRideAlong() == nil, "one at a time")
            let report = await publisher.cycle(along: [along])
            await rig.reader.rodeAlong(sent: report.alongSent)
            #expect(report.published == 1 && report.alongSent && report.error == nil)
            #expect(await rig.simulator.requestCount(endpoint: rig.tractorID) == before + 1)
            let sent = await rig.simulator.sentMessages(endpoint: rig.tractorID).suffix(2).map(
                \.envelope.technicalMessageType)
            #expect(sent == [TechnicalMessageType.gpsInfo, TechnicalMessageType.feedConfirm])
            try await rig.pumpUntilIdle { await rig.simulator.feed(endpoint: rig.tractorID).isEmpty }
            #expect(await rig.reader.counters.confirmed == 1)
        }
    }

    @Test("a confirm that could not ride along waits, first in line, for the next request")
    func confirmThatDidNotGo() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            try await rig.pushStored()
            _ = try #require(await rig.reader.confirmToRideAlong())
            await rig.reader.rodeAlong(sent: false)
            #expect(try await rig.reader.step(confirming: true))
            #expect(
                await rig.simulator.sentMessages(endpoint: rig.tractorID).last?.envelope.technicalMessageType
                    == TechnicalMessageType.feedConfirm)
            try await rig.pumpUntilSettled()
            #expect(await rig.reader.counters.confirmed == 1)
        }
    }

    @Test("a peer's EFDI arrives through agrirouter: its description names it, its TimeLog places it")
    func efdi() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            await rig.reader.connected()
            try await rig.pumpUntilSettled()
            let description = DeviceDescription(
                endpointID: rig.harvesterID, softwareVersion: "1.0", name: "Harvester 7")
            let (log, _) = Efdi_TimeLog.of([
                PositionSample(
                    sampledAt: Date(), state: .fix(.threeD, .rtkFloat),
                    report: PositionReport(time: Date(), gpsdMode: 3, gpsdStatus: 5, latitude: 52.75, longitude: 8.5))
            ])
            try await rig.harvester.send([
                .init(
                    TechnicalMessageType.deviceDescription, mode: .publish, payload: description.taskData,
                    teamSetContextID: description.teamSetContextID),
                .init(
                    TechnicalMessageType.timeLog, mode: .publish, payload: log,
                    teamSetContextID: description.teamSetContextID),
            ])
            try await rig.pumpUntilIdle { try await rig.store.view().machines.first?.lastPosition != nil }
            let machine = try #require(try await rig.store.view().machines.first)
            #expect(
                machine.endpointID == rig.harvesterID && machine.name == "Harvester 7",
                "the designator before the endpoint list's name")
            #expect(machine.lastPosition?.status == "D_RTK_FLOAT" && machine.lastPosition?.latitude == 52.75)
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty, "both confirmed")
        }
    }

    @Test("started after the peer has sent, it reads the last 15 minutes page by page and deletes what is older")
    func catchUp() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            let now = Date()
            // 30 messages in the window (two pages of 25) and 2 older ones, none pushed.
            for index in 0..<30 {
                let time = now.addingTimeInterval(-600 + Double(index))
                let list = gpsList([(.dGnss, 52 + Double(index) / 1000, 8, time)])
                await rig.simulator.deliver(
                    try list.serializedBytes(), from: rig.harvesterID, to: rig.tractorID, sentAt: time, push: false)
            }
            for minutes in [20.0, 60] {
                let time = now.addingTimeInterval(-minutes * 60)
                await rig.simulator.deliver(
                    try gpsList([(.dGnss, 1, 1, time)]).serializedBytes(), from: rig.harvesterID, to: rig.tractorID,
                    sentAt: time, push: false)
            }
            await rig.reader.connected(now: now)
            try await rig.pumpUntilSettled()
            let history = try await rig.store.history(of: rig.harvesterID)
            #expect(history.count == 30)
            #expect(history.last?.latitude == 52.029)
            #expect(await rig.reader.counters.queries == 2)
            #expect(await rig.reader.counters.confirmed == 30)
            #expect(
                await rig.simulator.feed(endpoint: rig.tractorID).isEmpty, "older entries deleted, the rest confirmed")
            #expect(try await rig.confirmedOnlyAfterStoring())
        }
    }

    @Test("the same message by push and by query counts once")
    func pushAndQuery() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            try await rig.publish([(.dDgnss, 52.5, 8.25, Date())])
            // The list and the feed query go out before the outbox is read: the message then arrives
            // twice in one poll, as a push and in the query's page.
            await rig.reader.connected()
            let listed = try await rig.reader.step()
            let queried = try await rig.reader.step()
            #expect(listed && queried)
            try await rig.pumpUntilSettled()
            #expect(await rig.reader.counters.stored == 1)
            #expect(await rig.reader.counters.duplicates == 1)
            #expect(try await rig.store.history(of: rig.harvesterID).count == 1)
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty)
        }
    }

    @Test("an out-of-order push does not move the peer back in time")
    func outOfOrderPush() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            await rig.reader.connected()
            try await rig.pumpUntilSettled()
            let now = Date()
            try await rig.publish([(.dGnss, 52.2, 8.2, now)])
            try await rig.publish([(.dGnss, 52.1, 8.1, now.addingTimeInterval(-30))])
            try await rig.pumpUntilIdle { try await rig.store.history(of: rig.harvesterID).count == 2 }
            let machine = try #require(try await rig.store.view().machines.first)
            #expect(machine.lastPosition?.latitude == 52.2)
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty)
        }
    }

    @Test("a message that cannot be read is logged, confirmed, and does not stop the next one")
    func undecodable() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            await rig.reader.connected()
            try await rig.pumpUntilSettled()
            let broken = await rig.simulator.deliver(
                Data([0x0A, 0xFF, 0xFF]), from: rig.harvesterID, to: rig.tractorID)
            try await rig.publish([(.dGnss, 52.2, 8.2, Date())])
            try await rig.pumpUntilIdle { try await rig.store.view().machines.first?.lastPosition != nil }
            #expect(await rig.reader.counters.refused == 1)
            #expect(await rig.simulator.confirmations(endpoint: rig.tractorID).contains { $0.messageID == broken })
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty)
        }
    }

    @Test(
        "hostile gps:info from another machine is refused, confirmed once and counted; the reader keeps going and stores the next"
    )
    func hostile() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            await rig.reader.connected()
            try await rig.pumpUntilSettled()
            // Through the simulator's publish path, as another gateway would send them.
            var extreme = gpsList([(.dGnss, 52.2, 8.2, Date())])
            extreme.gpsEntries[0].gpsUtcTimestamp.seconds = .min
            try await rig.harvester.send(TechnicalMessageType.gpsInfo, mode: .publish, payload: extreme)
            try await rig.publish([(.dGnss, 91, 200, Date())])
            try await rig.publish([(.dGnss, .infinity, 8, Date())])
            // A header time no agrirouter sends: the message itself is fine and is stored.
            let headerOnly = await rig.simulator.deliver(
                try gpsList([(.dGnss, 52.3, 8.3, Date())]).serializedBytes(),
                from: rig.harvesterID, to: rig.tractorID, sentSeconds: .max)
            try await rig.pumpUntilIdle { try await rig.store.view().refusedMessages == 3 }
            try await rig.publish([(.dGnss, 52.2, 8.2, Date())])
            try await rig.pumpUntilIdle { try await rig.store.view().machines.first?.lastPosition?.latitude == 52.2 }
            let view = try await rig.store.view()
            #expect(view.refusedMessages == 3)
            #expect(await rig.reader.counters.refused == 3)
            #expect(view.lastRefusal?.contains("position_north") == true)
            #expect(try await rig.store.history(of: rig.harvesterID).map(\.latitude) == [52.3, 52.2])
            let confirmed = await rig.simulator.confirmations(endpoint: rig.tractorID).map(\.messageID)
            #expect(confirmed.count == 5 && Set(confirmed).count == 5 && confirmed.contains(headerOnly))
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty)
        }
    }

    @Test("names follow a rename in agrirouter, and a deleted endpoint is gone")
    func renameAndDelete() async throws {
        let rig = try await PeerRig.make { $0.endpointRefresh = 0.3 }
        try await tearingDown({ await rig.close() }) {
            await rig.reader.connected()
            try await rig.publish([(.dGnss, 52.2, 8.2, Date())])
            try await rig.pump { try await rig.store.view().machines.first?.name == "Harvester" }
            await rig.simulator.rename(endpoint: rig.harvesterID, to: "Combine 7")
            try await rig.pump { try await rig.store.view().machines.first?.name == "Combine 7" }
            #expect(try await rig.store.view().machines.first?.name == "Combine 7")
            await rig.simulator.delete(endpoint: rig.harvesterID)
            try await rig.pump { try await rig.store.view().machines.first?.activity == .gone }
            #expect(try await rig.store.view().machines.first?.activity == .gone)
        }
    }
}

@Suite("The daemon reads the others", .serialized, .timeLimit(.minutes(1)))
struct DaemonFeedTests {
    @Test(
        "a running daemon takes the peer's pushes from its outbox polls, and writes them where others and status look")
    func daemonSeesPush() async throws {
        let rig = try await PeerRig.make()
        try await tearingDown({ await rig.close() }) {
            let spool = Spool(path: rig.directory + "/spool.sqlite")
            var configuration = GatewayDaemon.Configuration()
            configuration.sendInterval = 0.05
            configuration.heartbeatPath = rig.directory + "/heartbeat.json"
            let daemon = GatewayDaemon(
                spool: spool, connection: rig.tractor,
                setup: EndpointSetup(applicationID: "app", certificationVersionID: "v", answerTimeout: 10),
                others: rig.store, configuration: configuration)
            let (events, source) = AsyncStream<SourceEvent>.makeStream()
            let running = Task { await daemon.run(events: events) }
            // Receiver-time intervals: the third report closes the first two.
            let start = Date()
            for second in 0..<3 {
                source.yield(
                    .report(
                        PositionReport(
                            time: start.addingTimeInterval(Double(second)), gpsdMode: 3, gpsdStatus: 1, latitude: 52,
                            longitude: 8)))
            }

            // The daemon names the harvester from the endpoint list once it has connected.
            #expect(try await eventually(within: 20) { try await rig.store.view().machines.first?.name == "Harvester" })
            try await rig.publish([(.dRtkFloat, 52.01, 8.01, Date())])
            #expect(
                try await eventually(within: 20) {
                    try await rig.store.view().machines.first?.lastPosition?.status == "D_RTK_FLOAT"
                })
            #expect(await eventually(within: 20) { await rig.simulator.feed(endpoint: rig.tractorID).isEmpty })
            running.cancel()
            source.finish()
            let summary = await running.value
            #expect(summary.othersStored == 1)
            #expect(Heartbeat.read(from: rig.directory + "/heartbeat.json")?.lastFix?.latitude == 52)
            #expect(await rig.simulator.confirmations(endpoint: rig.tractorID).count == 1)
        }
    }

}
