import AgrirouterWire
import Foundation
import StateDirectory
import SwiftProtobuf
import TestSupport
import Testing

@testable import Gateway

/// A TimeLog from `sender`, one `Time` per (status, latitude, longitude, time), as a terminal sends it.
func timeLog(
    id: String = UUID().uuidString.lowercased(), from sender: String,
    _ times: [(Efdi_Position.PositionStatus, Double, Double, Date)]
) -> ReceivedFeedMessage {
    var log = Efdi_TimeLog()
    log.time = times.map { status, latitude, longitude, time in
        var entry = Efdi_Time()
        entry.start = Google_Protobuf_Timestamp(date: time)
        entry.type = .dEffective
        entry.positionStart.positionStatus = status
        entry.positionStart.positionNorth = latitude
        entry.positionStart.positionEast = longitude
        return entry
    }
    return ReceivedFeedMessage(
        messageID: id, senderID: sender, technicalMessageType: TechnicalMessageType.timeLog,
        sentAt: times.last?.3, content: try! log.serializedBytes())
}

func deviceDescription(from sender: String, designator: String) -> ReceivedFeedMessage {
    var taskData = Efdi_ISO11783_TaskData()
    var device = Efdi_Device()
    device.deviceDesignator = designator
    taskData.device = [device]
    return ReceivedFeedMessage(
        messageID: UUID().uuidString.lowercased(), senderID: sender,
        technicalMessageType: TechnicalMessageType.deviceDescription,
        sentAt: nil, content: try! taskData.serializedBytes())
}

@Suite("Other machines from EFDI")
struct OthersFromEFDITests {
    let scratch = TemporaryDirectory("others-efdi")
    var directory: String { scratch.path }
    let t0 = Date(timeIntervalSince1970: 1_790_000_000)

    @Test("a TimeLog's last position is the machine's, beside gps:info, and its Times are its history")
    func timeLogs() async throws {
        let store = OtherMachinesStore(path: directory + "/others.sqlite")
        // A Krone-like terminal: D_NOT_AVAILABLE with valid coordinates, and a Time with no position at all.
        let log = timeLog(
            from: "mower",
            [
                (.dNotAvailable, 52.1, 7.1, t0), (.dNoGps, 0, 0, t0.addingTimeInterval(1)),
                (.dRtkFinteger, 52.2, 7.2, t0.addingTimeInterval(2)),
            ])
        let recorded = try await store.record(
            [log, gpsInfo(from: "tractor", [(.dGnss, 48, 11, t0)])], ownEndpointID: "me", receivedAt: t0)
        #expect(recorded.stored == 2 && recorded.refused.isEmpty && recorded.unnamedSenders == ["mower", "tractor"])
        let machines = try await store.view(now: t0).machines
        let mower = try #require(machines.first { $0.endpointID == "mower" })
        #expect(
            mower.lastPosition?.latitude == 52.2 && mower.lastReport?.status == "D_RTK_FINTEGER"
                && mower.lastReport?.gnssTime == t0.addingTimeInterval(2))
        #expect(try await store.history(of: "mower").map(\.latitude) == [52.1, 52.2])
        #expect(machines.contains { $0.endpointID == "tractor" })
    }

    @Test("a sender of both formats is read from its TimeLogs; its gps:info again once they stop for 10 minutes")
    func timeLogsFirst() async throws {
        let store = OtherMachinesStore(path: directory + "/others.sqlite")
        // One delivery with the gps:info first, as a poll may bring them: the TimeLog is read, the gps:info passed over.
        let first = try await store.record(
            [
                gpsInfo(from: "both", [(.dGnss, 48.0, 11, t0)]), timeLog(from: "both", [(.dRtkFinteger, 48.1, 11, t0)]),
                gpsInfo(from: "only", [(.dGnss, 50, 9, t0)]),
            ], ownEndpointID: "me", receivedAt: t0)
        #expect(first.stored == 2 && first.passedOver == 1 && first.confirmable.count == 3)
        let later = t0.addingTimeInterval(300)
        let second = try await store.record(
            [gpsInfo(from: "both", [(.dGnss, 48.2, 11, later)])], ownEndpointID: "me", receivedAt: later)
        #expect(second.passedOver == 1 && second.stored == 0, "five minutes after a TimeLog")
        #expect(try await store.history(of: "both").map(\.latitude) == [48.1])
        #expect(
            try await store.view(now: later).machines.first { $0.endpointID == "both" }?.lastReceivedAt == later,
            "still a sign of life")
        let stopped = t0.addingTimeInterval(601)
        let third = try await store.record(
            [gpsInfo(from: "both", [(.dGnss, 48.3, 11, stopped)])], ownEndpointID: "me", receivedAt: stopped)
        #expect(third.stored == 1 && third.passedOver == 0, "its TimeLogs stopped")
        #expect(try await store.history(of: "both").map(\.latitude) == [48.1, 48.3])
        #expect(try await store.history(of: "only").map(\.latitude) == [50])
    }

    @Test("a fix read from gps:info in an earlier poll than its TimeLog is kept once")
    func sameFixInBothFormats() async throws {
        let store = OtherMachinesStore(path: directory + "/others.sqlite")
        let t1 = t0.addingTimeInterval(1)
        let first = try await store.record(
            [gpsInfo(from: "both", [(.dGnss, 48.0, 11, t0)])], ownEndpointID: "me", receivedAt: t0)
        #expect(first.stored == 1, "nothing says yet that it sends TimeLogs")
        let second = try await store.record(
            [timeLog(from: "both", [(.dGnss, 48.0, 11, t0), (.dGnss, 48.1, 11, t1)])], ownEndpointID: "me",
            receivedAt: t1)
        #expect(second.stored == 1 && second.passedOver == 0)
        let again = try await store.record(
            [timeLog(from: "both", [(.dGnss, 48.1, 11, t1)])], ownEndpointID: "me", receivedAt: t1)
        #expect(again.stored == 0 && again.passedOver == 1, "a TimeLog of fixes all known already")
        #expect(try await store.history(of: "both").map(\.latitude) == [48.0, 48.1])
    }

    @Test("a device description names its machine before the endpoint list does")
    func designators() async throws {
        let store = OtherMachinesStore(path: directory + "/others.sqlite")
        try await store.applyEndpointList(
            [("mower", "Krone endpoint"), ("tractor", "Tractor 1")], ownEndpointID: "me", at: t0)
        let recorded = try await store.record(
            [
                deviceDescription(from: "mower", designator: " BiG M 450 "),
                timeLog(from: "mower", [(.dGnss, 52, 7, t0)]),
            ], ownEndpointID: "me", receivedAt: t0)
        #expect(recorded.stored == 2 && recorded.unnamedSenders.isEmpty)
        let names = try await store.view(now: t0).machines.map { "\($0.endpointID)=\($0.name ?? "-")" }
        #expect(names == ["mower=BiG M 450", "tractor=Tractor 1"])
        // A description from a machine the list does not know names it all the same.
        let unlisted = try await store.record(
            [deviceDescription(from: "terminal", designator: "Fendt 942")], ownEndpointID: "me", receivedAt: t0)
        #expect(unlisted.unnamedSenders.isEmpty)
        #expect(try await store.view(now: t0).machines.first { $0.endpointID == "terminal" }?.name == "Fendt 942")
    }

    @Test("an out-of-range Time or unreadable EFDI refuses the message, which is confirmed and counted")
    func refusals() async throws {
        let store = OtherMachinesStore(path: directory + "/others.sqlite")
        let bad = timeLog(id: "bad", from: "mower", [(.dGnss, 52, 7, t0), (.dGnss, 95, 7, t0)])
        let garbage = ReceivedFeedMessage(
            messageID: "garbage", senderID: "mower", technicalMessageType: TechnicalMessageType.deviceDescription,
            sentAt: t0, content: Data([0xFF, 0x01]))
        let recorded = try await store.record([bad, garbage], ownEndpointID: "me", receivedAt: t0)
        #expect(recorded.confirmable == ["bad", "garbage"] && recorded.stored == 0)
        #expect(recorded.refused["bad"]?.hasPrefix("time 2: ") == true)
        #expect(recorded.refused["garbage"] != nil)
        #expect(try await store.view(now: t0).refusedMessages == 2)
    }
}
