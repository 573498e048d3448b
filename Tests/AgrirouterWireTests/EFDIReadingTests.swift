import Bounds
import Foundation
import SwiftProtobuf
import Testing

@testable import AgrirouterWire

/// agrirouter's efdi.proto as we wrote it down, and other machines' TimeLogs and descriptions read
/// without trusting them.
@Suite struct EFDIReadingTests {
    let fixTime = Date(timeIntervalSince1970: 1_790_000_000.25)

    @Test func theFieldNumbersAreAgrirouters() throws {
        // TimeLog{time_log_type=1 (1), time (4) {start (1) {seconds=1}, type (4) = D_EFFECTIVE,
        // position_start (5) {position_status (4) = D_RTK_FLOAT}}}, built by hand from efdi.proto.
        var log = Efdi_TimeLog()
        log.timeLogType = .cBinaryTimelog
        var time = Efdi_Time()
        time.start = Google_Protobuf_Timestamp(seconds: 1)
        time.type = .dEffective
        time.positionStart.positionStatus = .dRtkFloat
        log.time = [time]
        let bytes: [UInt8] = try log.serializedBytes()
        #expect(bytes == [0x08, 0x01, 0x22, 0x0A, 0x0A, 0x02, 0x08, 0x01, 0x20, 0x04, 0x2A, 0x02, 0x20, 0x05])
        var taskData = Efdi_ISO11783_TaskData()
        taskData.device = [Efdi_Device()]
        taskData.device[0].deviceDesignator = "x"
        #expect(try taskData.serializedBytes() as [UInt8] == [0x8A, 0x01, 0x03, 0x12, 0x01, 0x78])  // device = 17
    }

    // MARK: - Reading other machines' TimeLogs

    func time(north: Double, east: Double, status: Efdi_Position.PositionStatus, gnss: Date? = nil, start: Date? = nil)
        -> Efdi_Time
    {
        var time = Efdi_Time()
        if let start { time.start = Google_Protobuf_Timestamp(date: start) }
        time.positionStart.positionNorth = north
        time.positionStart.positionEast = east
        time.positionStart.positionStatus = status
        if let gnss { time.positionStart.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: gnss) }
        return time
    }

    @Test func aTerminalsPositionCountsWhateverItsStatusSaysUnlessItIsAnError() throws {
        // As a Krone terminal sends them: valid coordinates with D_NOT_AVAILABLE, the time only in `start`.
        let krone = try #require(
            try ReportedPosition(checking: time(north: 52.25, east: 7.5, status: .dNotAvailable, start: fixTime)))
        #expect(
            krone.latitude == 52.25 && krone.longitude == 7.5 && krone.status == "D_NOT_AVAILABLE"
                && krone.gnssTime == fixTime)
        #expect(try ReportedPosition(checking: time(north: 52.25, east: 7.5, status: .dNoGps))?.hasPosition == true)
        #expect(try ReportedPosition(checking: time(north: 0, east: 0, status: .dRtkFinteger, start: fixTime)) == nil)
        #expect(try ReportedPosition(checking: time(north: 52.25, east: 7.5, status: .dError)) == nil)
        #expect(try ReportedPosition(checking: Efdi_Time()) == nil)
        // The position's own GNSS time wins over the Time's start; a later stop position over the start.
        var both = time(north: 52.25, east: 7.5, status: .dGnss, gnss: fixTime, start: fixTime.addingTimeInterval(-5))
        #expect(try ReportedPosition(checking: both)?.gnssTime == fixTime)
        both.positionStop = both.positionStart
        both.positionStop.positionNorth = 52.5
        #expect(try ReportedPosition(checking: both)?.latitude == 52.5)
    }

    @Test func valuesOutOfRangeRefuseTheTime() {
        #expect(throws: OutOfBounds.self) { try ReportedPosition(checking: time(north: 91, east: 7.5, status: .dGnss)) }
        #expect(throws: OutOfBounds.self) {
            try ReportedPosition(checking: time(north: 52, east: .nan, status: .dGnss))
        }
        var far = time(north: 52, east: 7, status: .dGnss)
        far.positionStart.gpsUtcTimestamp = Google_Protobuf_Timestamp(seconds: Int64.max, nanos: 0)
        #expect(throws: OutOfBounds.self) { try ReportedPosition(checking: far) }
        var deep = time(north: 52, east: 7, status: .dGnss)
        deep.positionStart.positionUp = -5_000_000
        #expect(throws: OutOfBounds.self) { try ReportedPosition(checking: deep) }
    }

    @Test func aDescriptionNamesItsMachineSafelyAndUnreadableContentIsAnError() throws {
        var taskData = Efdi_ISO11783_TaskData()
        #expect(EFDIContent.designator(of: taskData) == nil)
        taskData.device = [Efdi_Device()]
        taskData.device[0].deviceDesignator = "  Fendt 942\u{1B}[2J Vario with a name far longer than ISOXML allows  "
        let name = try #require(EFDIContent.designator(of: EFDIContent.taskData(from: taskData.serializedBytes())))
        #expect(name.count <= 32 && name.count >= 30 && name.hasPrefix("Fendt 942"))
        #expect(throws: CodecError.self) { try EFDIContent.timeLog(from: Data([0x22, 0x05, 0x01])) }
        #expect(throws: CodecError.self) { try EFDIContent.taskData(from: Data([0xFF])) }
    }
}
