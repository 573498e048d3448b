import Foundation
import GNSS
import GPSDReplay
import NMEA2000
import TestSupport
import Testing

@testable import CANBus

/// A candump recording replayed with no interface and no gpsd: agrigps's own reading of the receiver.
@Suite(.timeLimit(.minutes(1)))
struct BusReplayTests {
    static func log(_ name: String) throws -> CandumpLog {
        CandumpLog(text: try String(contentsOfFile: Fixtures.can(name), encoding: .utf8))
    }

    @Test(
        "gpsd's recording: a report for each whole 129029, where gpsd 3.22 puts it, with 129026's speed and course; the end is the log's"
    )
    func gpsdRecording() async throws {
        let watcher = BusWatcher(interface: "recording", address: nil, withoutGPSD: true)
        let stream = BusReplay.stream(
            try Self.log("logfile_20140914_365495765_can.log"), into: watcher, realTime: false)
        var (reports, events): ([PositionReport], [SourceEvent]) = ([], [])
        for await event in stream.events {
            if case .report(let report) = event { reports.append(report) } else { events.append(event) }
        }
        #expect(await stream.ending.value == .endOfLog)
        #expect(
            events == [
                .devices([BusReplay.device]), .deviceActivated(BusReplay.device), .deviceRemoved(BusReplay.device),
            ])
        // 200 whole 129029s in the capture (RecordedBusTests), each a report, in order, none twice.
        #expect(reports.count == 200)
        let times = reports.compactMap { $0.time?.timeIntervalSince1970 }
        #expect(times.count == 200 && zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        let expected = try Fixtures.lines(of: Fixtures.can("logfile_20140914_365495765_can.tpv.jsonl")).map {
            try TPVFields(json: $0)
        }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let bySecond = Dictionary(grouping: expected) { $0.time ?? "" }
        let placed = reports.filter { report in
            let second = formatter.string(
                from: Date(timeIntervalSince1970: (report.time?.timeIntervalSince1970 ?? 0).rounded(.down)))
            return (bySecond[second] ?? []).contains {
                abs(($0.lat ?? 0) - (report.latitude ?? 99)) < 1e-9
                    && abs(($0.lon ?? 0) - (report.longitude ?? 999)) < 1e-9
            }
        }
        #expect(placed.count == 200, "\(placed.count) of 200 where gpsd puts them")
        // The Garmin stands still: 129026 gives a few cm/s, true course.
        #expect(reports.allSatisfy { $0.gpsdMode == 3 && $0.device == BusReplay.device && $0.satellitesUsed == 12 })
        let speeds = reports.compactMap(\.speed)
        #expect(
            speeds.count >= 190 && speeds.allSatisfy { (0...0.5).contains($0) },
            "\(speeds.count) speeds, up to \(speeds.max() ?? -1)")
        #expect(
            watcher.summary
                == "recording: GNSS receiver at address 2; its fixes read by agrigps from the recording, without gpsd",
            "\(watcher.summary)")
    }

    @Test("a replay stopped part way ends as stopped, not as the log's end")
    func stopped() async throws {
        let watcher = BusWatcher(interface: "recording", address: nil, withoutGPSD: true)
        let stream = BusReplay.stream(try Self.log("logfile_20140914_365495765_can.log"), into: watcher, realTime: true)
        var reports = 0
        for await event in stream.events {
            if case .report = event { reports += 1 }
            if reports == 2 { stream.ending.cancel() }
        }
        #expect(await stream.ending.value == .failed("stopped before the end of the recording"))
        #expect(reports >= 2 && reports < 10)
    }

    @Test("129026: true course in degrees and speed; not available, out of range and magnetic course are none")
    func courseAndSpeed() {
        let data: [UInt8] = [0x01, 0xFC, 0x10, 0x3D, 0xF4, 0x01, 0xFF, 0xFF]  // 15632 × 1e-4 rad, 500 × 0.01 m/s
        let read = GNSSCourseAndSpeed(data)
        #expect(read?.speed == 5 && read.map { abs(($0.course ?? 0) - 89.565) < 0.01 } == true)
        #expect(GNSSCourseAndSpeed([0x01, 0xFD, 0x10, 0x3D, 0xF4, 0x01, 0xFF, 0xFF])?.course == nil)  // magnetic
        let unknown = GNSSCourseAndSpeed([0x01, 0xFC, 0xFF, 0xFF, 0xFD, 0xFF, 0xFF, 0xFF])
        #expect(unknown != nil && unknown?.course == nil && unknown?.speed == nil)
        #expect(GNSSCourseAndSpeed([0x01, 0xFC]) == nil)
    }
}
