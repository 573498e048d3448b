import GNSS
import NMEA2000
import Testing

/// Frames built here, for what the recordings do not hold: RTK, two receivers, and broken input.
@Suite
struct BuiltFramesTests {
    /// A 129029 of 43 bytes with `method`, at 52.5°N 13.25°E, 1 Jan 2026 08:00:01.5 UTC, as fast-packet frames.
    static func positionData(method: UInt8, from source: UInt8, sequence: UInt8 = 1, latitude: Double = 52.5)
        -> [CANFrame]
    {
        var bytes = [UInt8](repeating: 0, count: 43)
        func put<T: FixedWidthInteger>(_ value: T, at offset: Int) {
            withUnsafeBytes(of: value.littleEndian) {
                for (index, byte) in $0.enumerated() { bytes[offset + index] = byte }
            }
        }
        put(UInt16(20_454), at: 1)  // days since 1970: 2026-01-01
        put(UInt32(288_015_000), at: 3)  // 08:00:01.5 in 0.0001 s
        put(Int64((latitude * 1e16).rounded()), at: 7)  // 52.5° in 1e-16
        put(Int64(132_500_000_000_000_000), at: 15)  // 13.25°
        put(Int64(61_000_000), at: 23)  // 61 m in 1e-6
        bytes[31] = method << 4 | 0x01  // method, GNSS type GLONASS
        bytes[33] = 14
        put(Int16(80), at: 34)
        put(Int16(140), at: 36)
        var frames: [[UInt8]] = [[sequence << 5, 43] + bytes[0..<6]]
        var offset = 6
        var counter: UInt8 = 1
        while offset < bytes.count {
            let chunk = Array(bytes[offset..<min(offset + 7, bytes.count)])
            frames.append([sequence << 5 | counter] + chunk + [UInt8](repeating: 0xFF, count: 7 - chunk.count))
            offset += 7
            counter += 1
        }
        return frames.map { CANFrame(identifier: 0x0DF8_0500 | UInt32(source), data: $0)! }
    }

    @Test(
        "129029's method becomes the fix quality, RTK included, where gpsd 3.22 reports a plain fix",
        arguments: [
            (UInt8(4), FixQuality.rtkFixed), (5, .rtkFloat), (2, .dgps), (1, .autonomous), (3, .autonomous),
            (6, .deadReckoning), (7, .manual), (8, .simulated),
        ])
    func methods(method: UInt8, quality: FixQuality) throws {
        var joiner = FastPacketJoiner()
        let bytes = try #require(Self.positionData(method: method, from: 7).compactMap { joiner.add($0) }.first)
        let data = try #require(GNSSPositionData(bytes))
        #expect(data.quality == quality)
        #expect(data.latitude == 52.5 && data.longitude == 13.25 && data.altitude == 61 && data.satellites == 14)
        #expect(data.hdop == 0.8 && data.pdop == 1.4 && data.time == 1_767_254_401.5)
    }

    @Test("no GNSS, an error, not available: no fix; a reserved method: not a message")
    func noFix() throws {
        for method: UInt8 in [0, 14, 15] {
            var joiner = FastPacketJoiner()
            let bytes = try #require(Self.positionData(method: method, from: 7).compactMap { joiner.add($0) }.first)
            #expect(GNSSPositionData(bytes)?.quality == nil)
        }
        var joiner = FastPacketJoiner()
        let reserved = try #require(Self.positionData(method: 10, from: 7).compactMap { joiner.add($0) }.first)
        #expect(GNSSPositionData(reserved) == nil)
    }

    @Test("two receivers: the RTK one is chosen, and the status line names the other")
    func twoReceivers() {
        var finder = ReceiverFinder()
        for _ in 0..<3 { Self.positionData(method: 1, from: 3).forEach { finder.add($0) } }
        Self.positionData(method: 4, from: 28).forEach { finder.add($0) }
        #expect(finder.receivers.map(\.address) == [28, 3])
        #expect(
            finder.summary.hasPrefix(
                "GNSS receiver at address 28; it sends no 129539 (fix mode); also sending positions: 3, not read"),
            "\(finder.summary)")
    }

    @Test("fast packets: a lost frame, frames out of order, a length beyond 223 and interleaved senders")
    func fastPackets() {
        let frames = Self.positionData(method: 4, from: 7)
        var lost = FastPacketJoiner()
        #expect((frames[0..<3] + frames[4...]).compactMap { lost.add($0) }.isEmpty && lost.dropped == 3)
        var swapped = FastPacketJoiner()
        #expect([frames[0], frames[2], frames[1]].compactMap { swapped.add($0) }.isEmpty && swapped.dropped == 1)
        var long = FastPacketJoiner()
        #expect(
            long.add(CANFrame(identifier: 0x0DF8_0507, data: [0x20, 224, 1, 2, 3, 4, 5, 6])!) == nil
                && long.dropped == 1)
        var two = FastPacketJoiner()
        let other = Self.positionData(method: 5, from: 9)
        let joined = zip(frames, other).flatMap { [$0, $1] }.compactMap { two.add($0) }.compactMap(
            GNSSPositionData.init)
        #expect(joined.map(\.method) == [.rtkFixed, .rtkFloat] && two.dropped == 0)
    }

    @Test("candump lines: both forms read, standard frames counted, broken lines counted with the first named")
    func candumpLines() {
        let log = CandumpLog(
            text: """
                # a comment
                (1410714882.622188) can0 09F80102#36729A16021AB80D
                <0x18eeff00> [8] f2 62 aa 1c 00 91 78 c0
                (1410714882.700000) can0 123#DEADBEEF
                (1410714882.800000) can0 09F80102#36729A16021AB80D00
                (1410714882.900000) can0 09F80102##0011223344
                (nan) can0 09F80102#00
                <0x18eeff00> [3] f2 62
                can0  09F80102   [8]  36 72 9A 16 02 1A B8 0D
                (1410714883.000000) can0 3FFFFFFF#00
                """)
        #expect(log.frames.count == 2 && log.standardFrames == 1 && log.unreadableLines == 6)
        #expect(
            log.firstProblem == "line 5: an identifier of 8 hex digits and at most 8 data bytes in hex were expected")
        #expect(log.frames.map(\.pgn) == [129_025, 60_928] && log.frames.map(\.source) == [2, 0])
        #expect(log.frames[0].time == 1_410_714_882.622188 && log.frames[1].time == nil)
        #expect(DeviceName(log.frames[1].data)?.manufacturer == "Garmin")
    }

    @Test("a PDU1 frame's destination is not part of its PGN")
    func addressed() {
        let request = CANFrame(identifier: 0x18EA_2301, data: [0x00, 0xEE, 0x00])!  // ISO Request from 1 to 0x23
        #expect(request.pgn == 59_904 && request.destination == 0x23 && request.source == 1 && request.priority == 6)
        #expect(
            CANFrame(identifier: 0x2000_0000, data: []) == nil
                && CANFrame(identifier: 1, data: [UInt8](repeating: 0, count: 9)) == nil)
    }
}
