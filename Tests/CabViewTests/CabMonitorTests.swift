import AgrirouterWire
import Foundation
import Logging
import StateDirectory
import StateView
import SwiftProtobuf
import Testing
@testable import CabView

/// The announcements the page shows and the journal keeps, from what the store of other machines says.
@Suite("Cab view events")
struct CabMonitorTests {
    func message(from sender: String, latitude: Double, at time: Date) throws -> ReceivedFeedMessage {
        var list = Agrirouter_Technicalmessagetype_GPSList()
        var entry = GPSEntry()
        entry.positionStatus = .dGnss
        entry.positionNorth = latitude
        entry.positionEast = 8.5
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: time)
        list.gpsEntries = [entry]
        return ReceivedFeedMessage(messageID: UUID().uuidString.lowercased(), senderID: sender, technicalMessageType: TechnicalMessageType.gpsInfo,
                                   sentAt: time, content: try list.serializedBytes())
    }

    @Test("stale, back, standing still, and gone: each announced once, in order")
    func announcements() async throws {
        let directory = NSTemporaryDirectory() + "agrigps-events-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let paths = StatusSnapshot.Paths(stateDirectory: directory, spool: directory + "/spool.sqlite", others: directory + "/others.sqlite",
                                         heartbeat: directory + "/heartbeat.json")
        let store = OtherMachinesStore(path: paths.others)
        let start = Date().addingTimeInterval(-3600)
        try await store.applyEndpointList([(id: "peer", name: "Sprayer")], ownEndpointID: "me", at: start)
        _ = try await store.record([try message(from: "peer", latitude: 52.0, at: start)], ownEndpointID: "me", receivedAt: start)
        var thresholds = StatusThresholds()
        thresholds.staleAfter = 10
        var settings = CabMonitor.Settings(paths: paths, thresholds: thresholds, environments: ["qa"])
        settings.notMovingAfter = 60
        let monitor = CabMonitor(settings: settings, logger: Logger(label: "test"))

        await monitor.refreshIfChanged(now: start.addingTimeInterval(1))
        #expect(await monitor.notices.isEmpty, "a first look announces nothing")
        await monitor.refreshIfChanged(now: start.addingTimeInterval(20))
        _ = try await store.record([try message(from: "peer", latitude: 52.0, at: start.addingTimeInterval(25))], ownEndpointID: "me",
                                   receivedAt: start.addingTimeInterval(25))
        await monitor.refreshIfChanged(now: start.addingTimeInterval(26))
        _ = try await store.record([try message(from: "peer", latitude: 52.0, at: start.addingTimeInterval(64))], ownEndpointID: "me",
                                   receivedAt: start.addingTimeInterval(64))
        await monitor.refreshIfChanged(now: start.addingTimeInterval(65))
        await monitor.refreshIfChanged(now: start.addingTimeInterval(71))  // still standing, but that was said already
        try await store.applyEndpointList([], ownEndpointID: "me", at: start.addingTimeInterval(80))
        await monitor.refreshIfChanged(now: start.addingTimeInterval(81))
        let notices = await monitor.notices
        let kinds = notices.map(\.kind)
        #expect(kinds == ["stale", "back", "still", "gone"], "\(notices.map(\.text))")
        #expect(notices.first?.text == "Sprayer went stale: nothing received for 20 s")
        #expect(notices.contains { $0.text == "Sprayer has not moved for 64 s" })
        #expect(await monitor.notices(after: 2).map(\.kind) == ["still", "gone"])
        #expect(notices.last?.text == "Sprayer left the endpoint list")
    }
}
