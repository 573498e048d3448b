import AgrirouterWire
import Foundation
import GNSS
import Logging
import Spool
import StateDirectory
import StateView
import SwiftProtobuf
import TestSupport
import Testing

@testable import CabView

/// The announcements the page shows and the journal keeps, from what the store of other machines says.
@Suite("Cab view events")
struct CabMonitorTests {
    func message(from sender: String, latitude: Double, longitude: Double = 8.5, at time: Date) throws
        -> ReceivedFeedMessage
    {
        var list = Agrirouter_Technicalmessagetype_GPSList()
        var entry = GPSEntry()
        entry.positionStatus = .dGnss
        entry.positionNorth = latitude
        entry.positionEast = longitude
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: time)
        list.gpsEntries = [entry]
        return ReceivedFeedMessage(
            messageID: UUID().uuidString.lowercased(), senderID: sender,
            technicalMessageType: TechnicalMessageType.gpsInfo,
            sentAt: time, content: try list.serializedBytes())
    }

    @Test("stale, back, standing still, and gone: each announced once, in order")
    func announcements() async throws {
        let temporary = TemporaryDirectory("events")
        let directory = temporary.path
        let paths = StatusSnapshot.Paths(
            stateDirectory: directory, spool: directory + "/spool.sqlite", others: directory + "/others.sqlite",
            heartbeat: directory + "/heartbeat.json")
        let store = OtherMachinesStore(path: paths.others)
        let start = Date().addingTimeInterval(-3600)
        try await store.applyEndpointList([(id: "peer", name: "Sprayer")], ownEndpointID: "me", at: start)
        _ = try await store.record(
            [try message(from: "peer", latitude: 52.0, at: start)], ownEndpointID: "me", receivedAt: start)
        var thresholds = StatusThresholds()
        thresholds.staleAfter = 10
        var settings = CabMonitor.Settings(paths: paths, thresholds: thresholds, environments: ["qa"])
        settings.notMovingAfter = 60
        let monitor = CabMonitor(settings: settings, logger: Logger(label: "test"))

        await monitor.refreshIfChanged(now: start.addingTimeInterval(1))
        #expect(await monitor.notices.isEmpty, "a first look announces nothing")
        await monitor.refreshIfChanged(now: start.addingTimeInterval(20))
        _ = try await store.record(
            [try message(from: "peer", latitude: 52.0, at: start.addingTimeInterval(25))], ownEndpointID: "me",
            receivedAt: start.addingTimeInterval(25))
        await monitor.refreshIfChanged(now: start.addingTimeInterval(26))
        _ = try await store.record(
            [try message(from: "peer", latitude: 52.0, at: start.addingTimeInterval(64))], ownEndpointID: "me",
            receivedAt: start.addingTimeInterval(64))
        await monitor.refreshIfChanged(now: start.addingTimeInterval(65))
        await monitor.refreshIfChanged(now: start.addingTimeInterval(71))  // still standing, but that was said already
        try await store.applyEndpointList([], ownEndpointID: "me", at: start.addingTimeInterval(80))
        await monitor.refreshIfChanged(now: start.addingTimeInterval(81))
        let notices = await monitor.notices
        let kinds = notices.map(\.kind)
        #expect(kinds == ["stale", "back", "still", "gone"], "\(notices.map(\.text))")
        #expect(notices.first?.text == "Nothing received from Sprayer for 20 s")
        #expect(notices.contains { $0.text == "Sprayer has not moved for 64 s" })
        #expect(await monitor.notices(after: 2).map(\.kind) == ["still", "gone"])
        #expect(notices.last?.text == "Sprayer is gone from agrirouter")
    }

    /// A state directory of its own, and a monitor on it.
    func scratchMonitor() throws -> (paths: StatusSnapshot.Paths, monitor: CabMonitor, cleanUp: () -> Void) {
        let temporary = TemporaryDirectory("events")
        let directory = temporary.path
        let paths = StatusSnapshot.Paths(
            stateDirectory: directory, spool: directory + "/spool.sqlite", others: directory + "/others.sqlite",
            heartbeat: directory + "/heartbeat.json")
        let monitor = CabMonitor(
            settings: CabMonitor.Settings(paths: paths, thresholds: StatusThresholds(), environments: ["qa"]),
            logger: Logger(label: "test"))
        return (paths, monitor, { temporary.remove() })  // the closure keeps the directory until then
    }

    func fix(
        latitude: Double = 52, longitude: Double = 8.5, speed: Double? = 2, track: Double? = 90.4,
        at time: Date = Date()
    ) -> PositionSample {
        Samples.fix(latitude: latitude, longitude: longitude, at: time, speed: speed, track: track)
    }

    @Test("this machine's trail is the last hour before its newest position, whatever the clock says now")
    func trailOfTheLastHour() async throws {
        let (paths, monitor, cleanUp) = try scratchMonitor()
        defer { cleanUp() }
        let spool = Spool(path: paths.spool)
        // Two hours at one position every 10 s, ending a day ago (a box whose clock ran ahead since).
        let end = Date().addingTimeInterval(-86_400)
        await spool.append(
            (0..<720).map { index in
                fix(latitude: 52 + Double(index) * 1e-5, at: end.addingTimeInterval(Double(index - 719) * 10))
            })
        await monitor.refreshIfChanged(now: Date())
        let trail = await monitor.track
        #expect(trail.count == 361, "an hour and its first point: \(trail.count)")
        #expect(
            trail.last == [52 + 719 * 1e-5, 8.5] && trail.first == [52 + 359 * 1e-5, 8.5],
            "\(String(describing: trail.first)) … \(String(describing: trail.last))")
        // Ten more minutes: the oldest ten fall away.
        await spool.append(
            (720..<780).map { index in
                fix(latitude: 52 + Double(index) * 1e-5, at: end.addingTimeInterval(Double(index - 719) * 10))
            })
        await monitor.refreshIfChanged(now: Date().addingTimeInterval(10))
        #expect(await monitor.track.count == 361)
        #expect(await monitor.track.first == [52 + 419 * 1e-5, 8.5])
    }

    @Test("sharing again after a pause is announced once, with the positions the pause kept")
    func resumeNotice() async throws {
        let (paths, monitor, cleanUp) = try scratchMonitor()
        defer { cleanUp() }
        let spool = Spool(path: paths.spool)
        await spool.append(fix())
        var now = Date()
        func look() async {
            now.addTimeInterval(10)  // past the refresh interval: every look builds a model
            await monitor.refreshIfChanged(now: now)
        }
        await look()
        for (round, kept) in [3, 1].enumerated() {
            try await spool.setSharing(paused: true)
            await spool.append((0..<kept).map { _ in fix() })
            await look()
            await look()
            #expect(await monitor.notices.filter { $0.kind == "resumed" }.count == round, "no notice while paused")
            try await spool.setSharing(paused: false)
            await look()
            await look()
        }
        let resumed = await monitor.notices.filter { $0.kind == "resumed" }
        #expect(
            resumed.map(\.text) == [
                "Sharing again · 3 positions from the pause stay here",
                "Sharing again · 1 position from the pause stays here",
            ], "\(resumed)")
    }

    @Test(
        "work starting and stopping is announced once each, with the field; a state not known in between changes nothing"
    )
    func workNotices() async throws {
        let (paths, monitor, cleanUp) = try scratchMonitor()
        defer { cleanUp() }
        let spool = Spool(path: paths.spool)
        var now = Date()
        for work in [MachineReading.Work.notWorking, .working, .working, .unknown, .working, .notWorking, .notWorking] {
            var sample = fix()
            sample.machine = MachineReading(work: work)
            await spool.append(sample)
            now.addTimeInterval(10)
            await monitor.refreshIfChanged(now: now)
        }
        let notices = await monitor.notices.filter { $0.kind.hasPrefix("work-") }
        #expect(notices.map(\.text) == ["Work started", "Work stopped"], "\(notices)")
        #expect(notices.map(\.key) == ["notice.workStarted", "notice.workStopped"])
        #expect(await monitor.model?.work.state == "not-working")
    }

    @Test("our heading: whole degrees while moving on a current fix; none standing, slow, or on an old position")
    func ownHeading() throws {
        let moving = try #require(CabModel.Own(fix(speed: 2, track: 359.7), old: false))
        #expect(moving.heading == 0)
        #expect(CabModel.Own(fix(speed: 0.5, track: 90.4), old: false)?.heading == 90)
        #expect(
            CabModel.Own(fix(speed: 0.49, track: 90.4), old: false)?.heading == nil,
            "a standing machine's track is noise")
        #expect(CabModel.Own(fix(speed: nil, track: 90.4), old: false)?.heading == nil)
        #expect(CabModel.Own(fix(speed: 2, track: nil), old: false)?.heading == nil)
        #expect(CabModel.Own(fix(speed: 2, track: 90.4), old: true)?.heading == nil, "an old position has no heading")
    }

    @Test(
        "another machine's bearing and direction from ours, as agrigps others writes them; the heading with the daemon running"
    )
    func othersDirection() async throws {
        let (paths, monitor, cleanUp) = try scratchMonitor()
        defer { cleanUp() }
        try Heartbeat(pid: getpid(), startedAt: Date().addingTimeInterval(-60), onboarded: true).write(
            to: paths.heartbeat)
        let now = Date()
        await Spool(path: paths.spool).append(fix(at: now))
        let store = OtherMachinesStore(path: paths.others)
        try await store.applyEndpointList(
            [(id: "north-east", name: "Sprayer"), (id: "nowhere", name: "Baler")], ownEndpointID: "me", at: now)
        _ = try await store.record(
            [try message(from: "north-east", latitude: 52.01, longitude: 8.52, at: now)], ownEndpointID: "me",
            receivedAt: now)
        await monitor.refreshIfChanged(now: now)
        let model = try #require(await monitor.model)
        #expect(model.own?.heading == 90)
        let sprayer = try #require(model.others.first { $0.id == "north-east" })
        #expect(sprayer.bearing == 51 && sprayer.direction == "NE 51°", "\(sprayer)")
        let baler = try #require(model.others.first { $0.id == "nowhere" })
        #expect(baler.bearing == nil && baler.direction == nil, "no position, no direction")
        let json = try #require(try JSONSerialization.jsonObject(with: JSONEncoder().encode(model)) as? [String: Any])
        let others = try #require(json["others"] as? [[String: Any]])
        #expect(others.contains { $0["direction"] as? String == "NE 51°" && $0["bearing"] as? Double == 51 })
        #expect((json["own"] as? [String: Any])?["heading"] as? Double == 90)
    }
}
