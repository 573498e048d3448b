import Foundation
import GNSS
import StateDirectory
import TestSupport
import Testing

@testable import Gateway

@Suite struct HeartbeatWriterTests {
    private func sample(_ state: FixState, at time: Date) -> PositionSample {
        let report =
            state.hasPosition ? PositionReport(time: time, gpsdMode: 3, gpsdStatus: 1, latitude: 52, longitude: 8) : nil
        return PositionSample(sampledAt: time, state: state, report: report)
    }

    @Test(
        "a change of state is written at once; the same state again waits for the gap (virtual time), and the quiet since the last acknowledgement follows the monotonic clock"
    )
    func writesOnChangeOrAfterTheGap() async throws {
        let directory = TemporaryDirectory("heartbeat")
        let path = directory.file("heartbeat.json")
        let time = ManualClock()
        let writer = HeartbeatWriter(path: path, environment: nil, monotonic: time.clock, minimumGap: 60)
        // the file keeps whole seconds
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))

        await writer.sampled(sample(.fix(.threeD, .autonomous), at: now))
        #expect(Heartbeat.read(from: path)?.lastSample?.state == "fix_3d_autonomous", "the first sample is a change")
        time.advance(by: 59)
        await writer.sampled(sample(.fix(.threeD, .autonomous), at: now.addingTimeInterval(1)))
        #expect(
            Heartbeat.read(from: path)?.lastSample?.sampledAt == now, "the same state within the gap is not written")
        time.advance(by: 1)
        await writer.sampled(sample(.fix(.threeD, .autonomous), at: now.addingTimeInterval(2)))
        #expect(
            Heartbeat.read(from: path)?.lastSample?.sampledAt == now.addingTimeInterval(2),
            "the same state is written once the gap is out")
        #expect(Heartbeat.read(from: path)?.quietSeconds == 60, "nothing acknowledged in the minute since the start")
        await writer.acknowledged(at: now)
        time.advance(by: 1)
        await writer.sampled(sample(.noFix, at: now.addingTimeInterval(3)))
        #expect(Heartbeat.read(from: path)?.lastSample?.state == "no_fix", "losing the fix is written at once")
        #expect(Heartbeat.read(from: path)?.lastFix?.latitude == 52)
        #expect(Heartbeat.read(from: path)?.quietSeconds == 1, "a second since the acknowledgement")
        await writer.beat()
        #expect(Heartbeat.read(from: path)?.updatedAt ?? .distantPast >= now)
    }

    @Test(
        "the file is written in place, group-readable whatever the umask, with nothing beside it; a torn write reads as none, an old whole file as itself"
    )
    func writesTheFileInPlaceForTheGroup() throws {
        let scratch = TemporaryDirectory("heartbeat")
        let directory = scratch.path
        let path = scratch.file("heartbeat.json")
        let old = umask(0o077)
        defer { umask(old) }
        var heartbeat = Heartbeat(onboarded: false)
        heartbeat.lastError = String(repeating: "long ", count: 100)
        try heartbeat.write(to: path)
        let inode = try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int
        heartbeat.lastError = "second"
        try heartbeat.write(to: path)
        // Shorter than before: spaces cover the rest, and the same inode holds it (no new file, no rename).
        #expect(Heartbeat.read(from: path)?.lastError == "second")
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.systemFileNumber] as? Int == inode)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o640)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory) == ["heartbeat.json"])

        // A write caught half done: the text no longer matches its digest.
        var bytes = try #require(FileManager.default.contents(atPath: path))
        let good = bytes
        let at = try #require(bytes.firstIndex(of: UInt8(ascii: "s")))
        bytes[at] = UInt8(ascii: "S")
        try bytes.write(to: URL(fileURLWithPath: path))
        #expect(Heartbeat.read(from: path) == nil)
        // As versions before this one wrote it: the JSON alone, replaced whole.
        try good.prefix { $0 != UInt8(ascii: "\n") }.write(to: URL(fileURLWithPath: path))
        #expect(Heartbeat.read(from: path)?.lastError == "second")
        try heartbeat.write(to: path)
        #expect(Heartbeat.read(from: path)?.lastError == "second")
        #expect(throws: HeartbeatWriteError.self) { try heartbeat.write(to: directory + "/missing/heartbeat.json") }
    }
}
