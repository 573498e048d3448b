import Foundation
import GNSS
import NMEA2000
import TestSupport
import Testing

/// The recorded buses in Fixtures/can: frames read, the receiver found by its address, and its
/// positions where gpsd's expected output puts them.
@Suite
struct RecordedBusTests {
    static func log(_ name: String) throws -> CandumpLog {
        CandumpLog(text: try String(contentsOfFile: Fixtures.can(name), encoding: .utf8))
    }

    static func finder(_ log: CandumpLog) -> ReceiverFinder {
        var finder = ReceiverFinder()
        log.frames.forEach { finder.add($0) }
        return finder
    }

    @Test("gpsd's recording: every frame read; the Garmin at address 2, with 129029 and 129539, the only receiver")
    func gpsdRecording() throws {
        let log = try Self.log("logfile_20140914_365495765_can.log")
        #expect(
            log.frames.count == 10_495 && log.unreadableLines == 0 && log.standardFrames == 0,
            "\(log.firstProblem ?? "")")
        let finder = Self.finder(log)
        let chosen = try #require(finder.chosen)
        #expect(chosen.address == 2 && finder.receivers.count == 1)
        #expect(chosen.positionData == 200 && chosen.dops == 206 && chosen.missing.isEmpty)
        #expect(finder.summary == "GNSS receiver at address 2", "\(finder.summary)")
    }

    @Test("gpsd's recording: each 129029 position is one gpsd 3.22 reports in the same second")
    func gpsdPositions() throws {
        let log = try Self.log("logfile_20140914_365495765_can.log")
        var joiner = FastPacketJoiner()
        let positions = log.frames.filter { $0.source == 2 && $0.pgn == GNSSPGN.positionData }.compactMap {
            joiner.add($0)
        }.compactMap(GNSSPositionData.init)
        let expected = try Fixtures.lines(of: Fixtures.can("logfile_20140914_365495765_can.tpv.jsonl")).map {
            try TPVFields(json: $0)
        }
        let bySecond = Dictionary(grouping: expected) { $0.time ?? "" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        // The capture lost frames: of 203 messages begun, 200 are whole, and 7 frames belong to none.
        #expect(
            positions.count == 200 && joiner.dropped == 7,
            "\(positions.count) positions, \(joiner.dropped) frames dropped")
        var matched = 0
        for position in positions {
            let time = try #require(position.time)
            let second = formatter.string(from: Date(timeIntervalSince1970: time.rounded(.down)))
            let candidates = bySecond[second] ?? []
            if candidates.contains(where: {
                abs(($0.lat ?? 0) - (position.latitude ?? 99)) < 1e-9
                    && abs(($0.lon ?? 0) - (position.longitude ?? 999)) < 1e-9
            }) {
                matched += 1
            }
            #expect(
                position.method == .gnss && position.quality == .autonomous, "gpsd's Garmin reports a plain GNSS fix")
        }
        #expect(matched == positions.count, "\(matched) of \(positions.count) positions where gpsd puts them")
    }

    @Test(
        "canboat's power-up: the first frames are other senders'; the receiver is found at address 0, a Garmin by its NAME"
    )
    func powerUp() throws {
        let log = try Self.log("candumpSample1.txt")
        #expect(log.unreadableLines == 0 && log.frames.count > 6000, "\(log.firstProblem ?? "")")
        #expect(log.frames.first?.source != 0, "gpsd without an address would take this sender")
        let finder = Self.finder(log)
        let chosen = try #require(finder.chosen)
        #expect(chosen.address == 0 && chosen.name?.manufacturer == "Garmin" && chosen.positionData > 0)
        #expect(finder.summary.hasPrefix("GNSS receiver at address 0 (Garmin)"), "\(finder.summary)")
    }

    @Test("canboat's 129025-only bus: a receiver without fix quality or mode, and the status line says so")
    func rapidOnly() throws {
        let log = try Self.log("candumpSample3.txt")
        let finder = Self.finder(log)
        let chosen = try #require(finder.chosen)
        #expect(chosen.address == 0x2B && chosen.positionData == 0 && chosen.positionRapid > 100)
        #expect(chosen.missing == ["129029 (fix quality)", "129539 (fix mode)"])
        #expect(
            finder.summary == "GNSS receiver at address 43; it sends no 129029 (fix quality) and no 129539 (fix mode)",
            "\(finder.summary)")
    }
}
