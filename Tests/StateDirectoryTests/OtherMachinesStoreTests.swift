import AgrirouterWire
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

@testable import StateDirectory

@Suite("Store of other machines")
struct OtherMachinesStoreTests {
    let scratch = TemporaryDirectory("others")
    var directory: String { scratch.path }
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    func store(historyWindow: Double = 24 * 3600) -> OtherMachinesStore {
        var configuration = OtherMachinesStore.Configuration()
        configuration.historyWindow = historyWindow
        return OtherMachinesStore(path: directory + "/others.sqlite", configuration: configuration)
    }

    @Test("the same message twice is stored once, and both deliveries may be confirmed")
    func deduplicates() async throws {
        let store = store()
        let message = gpsInfo(from: "peer", [(.dRtkFinteger, 52.1, 8.2, t0)])
        let first = try await store.record([message], ownEndpointID: "me", receivedAt: t0)
        let second = try await store.record([message], ownEndpointID: "me", receivedAt: t0.addingTimeInterval(5))
        #expect(first.stored == 1 && first.duplicates == 0)
        #expect(second.stored == 0 && second.duplicates == 1)
        #expect(first.confirmable == [message.messageID] && second.confirmable == [message.messageID])
        #expect(try await store.history(of: "peer").count == 1)
    }

    @Test("an older report arriving later does not move a machine back in time, but joins its history")
    func outOfOrder() async throws {
        let store = store()
        _ = try await store.record(
            [gpsInfo(from: "peer", [(.dGnss, 52.2, 8.2, t0.addingTimeInterval(10))])], ownEndpointID: "me",
            receivedAt: t0)
        _ = try await store.record(
            [gpsInfo(from: "peer", [(.dDgnss, 52.1, 8.1, t0)])], ownEndpointID: "me",
            receivedAt: t0.addingTimeInterval(1))
        let machine = try #require(try await store.view(now: t0).machines.first)
        #expect(machine.lastReport?.gnssTime == t0.addingTimeInterval(10))
        #expect(machine.lastPosition?.latitude == 52.2 && machine.lastReport?.status == "D_GNSS")
        #expect(machine.lastReceivedAt == t0.addingTimeInterval(1))
        #expect(try await store.history(of: "peer").map(\.latitude) == [52.1, 52.2])
    }

    @Test("a report without a fix is the machine's state, while its last position stays")
    func noFixKeepsLastPosition() async throws {
        let store = store()
        _ = try await store.record(
            [gpsInfo(from: "peer", [(.dRtkFloat, 52.1, 8.1, t0), (.dNoGps, 0, 0, t0.addingTimeInterval(1))])],
            ownEndpointID: "me", receivedAt: t0)
        let machine = try #require(try await store.view(now: t0).machines.first)
        #expect(machine.lastReport?.status == "D_NO_GPS" && machine.lastReport?.hasPosition == false)
        #expect(machine.lastPosition?.status == "D_RTK_FLOAT" && machine.lastPosition?.latitude == 52.1)
        #expect(machine.lastPosition?.altitude == 123.456)
    }

    @Test("our own messages, other types and unreadable content are confirmed but not stored")
    func confirmsWhatItCannotUse() async throws {
        let store = store()
        let own = gpsInfo(from: "me", [(.dGnss, 1, 1, t0)])
        var other = gpsInfo(from: "peer", [(.dGnss, 1, 1, t0)])
        other.technicalMessageType = "iso:11783:-10:taskdata:zip"
        let garbage = ReceivedFeedMessage(
            messageID: "broken", senderID: "peer", technicalMessageType: TechnicalMessageType.gpsInfo,
            sentAt: t0, content: Data([0xFF, 0xFF, 0xFF]))
        let recorded = try await store.record([own, other, garbage], ownEndpointID: "me", receivedAt: t0)
        #expect(recorded.confirmable == [own.messageID, other.messageID, "broken"])
        #expect(recorded.stored == 0 && recorded.refused.keys.sorted() == ["broken"])
        #expect(try await store.view(now: t0).machines.isEmpty)
    }

    @Test("stale after the threshold by local receive time, whatever the sender's clock says")
    func staleness() async throws {
        let store = store()
        // The sender's GNSS time is a day ahead: it must not keep the machine live.
        _ = try await store.record(
            [gpsInfo(from: "peer", [(.dGnss, 52, 8, t0.addingTimeInterval(86400))])], ownEndpointID: "me",
            receivedAt: t0)
        #expect(
            try await store.view(now: t0.addingTimeInterval(299), staleAfter: 300).machines.first?.activity == .active)
        #expect(
            try await store.view(now: t0.addingTimeInterval(301), staleAfter: 300).machines.first?.activity == .stale)
        #expect(try await store.view(now: t0.addingTimeInterval(61), staleAfter: 60).count(.stale) == 1)
    }

    @Test("the endpoint list names machines, leaves us out, and marks those who left as gone")
    func endpointList() async throws {
        let store = store()
        let unnamed = try await store.record(
            [gpsInfo(from: "peer", [(.dGnss, 52, 8, t0)])], ownEndpointID: "me", receivedAt: t0)
        #expect(unnamed.unnamedSenders == ["peer"])
        try await store.applyEndpointList(
            [("me", "Tractor"), ("peer", "Harvester"), ("quiet", "Sprayer")], ownEndpointID: "me", at: t0)
        var view = try await store.view(now: t0)
        #expect(view.ownName == "Tractor")
        #expect(view.machines.map(\.name) == ["Harvester", "Sprayer"])
        #expect(view.machines.map(\.activity) == [.active, .silent])
        let named = try await store.record(
            [gpsInfo(from: "peer", [(.dGnss, 52, 8, t0)])], ownEndpointID: "me", receivedAt: t0)
        #expect(named.unnamedSenders.isEmpty)

        try await store.applyEndpointList(
            [("me", "Tractor"), ("peer", "Combine 7")], ownEndpointID: "me", at: t0.addingTimeInterval(300))
        view = try await store.view(now: t0)
        #expect(view.machines.map(\.name) == ["Combine 7", "Sprayer"])
        #expect(view.machines.map(\.activity) == [.active, .gone])
        try await store.applyEndpointList([("quiet", "Sprayer")], ownEndpointID: "me", at: t0.addingTimeInterval(600))
        #expect(try await store.view(now: t0).machines.map(\.activity) == [.gone, .silent])
    }

    @Test("history older than the window is pruned, but a machine's last position is kept")
    func historyWindow() async throws {
        let store = store(historyWindow: 3600)
        _ = try await store.record([gpsInfo(from: "old", [(.dGnss, 50, 7, t0)])], ownEndpointID: "me", receivedAt: t0)
        _ = try await store.record(
            [gpsInfo(from: "peer", [(.dGnss, 52, 8, t0), (.dGnss, 52.001, 8, t0.addingTimeInterval(1))])],
            ownEndpointID: "me", receivedAt: t0)
        let later = t0.addingTimeInterval(7200)
        _ = try await store.record(
            [gpsInfo(from: "peer", [(.dGnss, 52.002, 8, later)])], ownEndpointID: "me", receivedAt: later)
        #expect(try await store.history(of: "peer").map(\.latitude) == [52.002])
        #expect(try await store.history(of: "old").map(\.latitude) == [50])
        #expect(
            try await store.view(now: later).machines.first { $0.endpointID == "old" }?.lastPosition?.latitude == 50)
    }

    @Test("a store that was never written reads as empty and creates no file")
    func absentFile() async throws {
        let store = store()
        #expect(try await store.view().machines.isEmpty)
        #expect(!store.exists)
    }
}
