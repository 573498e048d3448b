import Foundation
import TestSupport
import Testing

@testable import GPSDReplay

@Suite struct NMEALogTests {
    @Test func missingLog() {
        #expect(throws: ReplayError.logNotFound("/nonexistent/x.log")) { try NMEALog(contentsOf: "/nonexistent/x.log") }
        #expect(ReplayError.logNotFound("x").exitCode == 66)
    }

    @Test func directoryIsNotALog() {
        #expect(throws: ReplayError.logIsDirectory("/tmp")) { try NMEALog(contentsOf: "/tmp") }
    }

    @Test func emptyAndBlankLogs() throws {
        for content in ["", "\n\r\n  \n"] {
            let scratch = TemporaryDirectory()
            let path = try scratch.write("test.log", Array(content.utf8))
            #expect(throws: ReplayError.logEmpty(path)) { try NMEALog(contentsOf: path) }
        }
    }

    @Test func binaryFileIsRejected() throws {
        var generator = SystemRandomNumberGenerator()
        let scratch = TemporaryDirectory()
        let path = try scratch.write("test.log", (0..<4096).map { _ in UInt8.random(in: 0...255, using: &generator) })
        #expect {
            try NMEALog(contentsOf: path)
        } throws: { error in
            guard case .logBinary(let reported, _) = error as? ReplayError else { return false }
            return reported == path
        }
        #expect(throws: ReplayError.self) { try NMEALog(contentsOf: "/bin/true") }
    }

    @Test func textWithoutSentencesIsRejected() throws {
        let scratch = TemporaryDirectory()
        let path = try scratch.write("test.log", Array("just some notes\nno sentences here\n".utf8))
        #expect(throws: ReplayError.logHasNoSentences(path)) { try NMEALog(contentsOf: path) }
    }

    @Test func receiverRebootNoiseIsStillALog() throws {
        // This capture holds NUL runs where the receiver rebooted mid-sentence.
        let log = try NMEALog(contentsOf: Fixtures.log("gp-320fw-2019-04-07-coldboot"))
        #expect(log.sentenceCount > 100)
    }

    @Test("bytes that are not NMEA text are fed as NUL, counted, and the first located")
    func nonTextBytesBecomeNUL() throws {
        // DLE then ',' would open a TSIP frame in gpsd; 0xFF and ESC are just as foreign to NMEA.
        let text: [UInt8] =
            Array("# Notes: \u{1}\n$GPGGA,1".utf8) + [0x10] + Array(",2\r\n$GPRMC,\t".utf8) + [0xFF, 0x1B, 0x00]
            + Array("*00\n".utf8)
            + Array(String(repeating: "$GPGSV,1,1,00*79\n", count: 3).utf8)  // under one odd byte in ten
        let scratch = TemporaryDirectory()
        let path = try scratch.write("test.log", text)
        let log = try NMEALog(contentsOf: path)
        #expect(
            log.lines.prefix(2).map(\.bytes) == [Array("$GPGGA,1\0,2\r\n".utf8), Array("$GPRMC,\t\0\0\0*00\n".utf8)])
        // The comment line is not fed, so its byte does not count; NUL is left as it is.
        #expect(log.replacedBytes == NMEALog.ReplacedBytes(count: 3, firstOffset: 19))
        #expect(text[19] == 0x10)
        let raw = try NMEALog(contentsOf: path, replacingNonText: false)
        #expect(
            raw.lines.prefix(2).map(\.bytes) == [
                Array("$GPGGA,1".utf8) + [0x10] + Array(",2\r\n".utf8),
                Array("$GPRMC,\t".utf8) + [0xFF, 0x1B, 0x00] + Array("*00\n".utf8),
            ])
        #expect(raw.replacedBytes == nil)
    }

    @Test("a clean log replaces nothing, and a log of mostly odd bytes is still refused")
    func cleanLogsAndBinaryFiles() throws {
        #expect(try NMEALog(contentsOf: Fixtures.log("ublox-lea-4h")).replacedBytes == nil)
        // NULs only
        #expect(try NMEALog(contentsOf: Fixtures.log("gp-320fw-2019-04-07-coldboot")).replacedBytes == nil)
        let scratch = TemporaryDirectory()
        let path = try scratch.write("test.log", Array("$GPGGA,1,2\n".utf8) + [UInt8](repeating: 0x10, count: 3))
        #expect(throws: ReplayError.logBinary(path, offset: 11)) { try NMEALog(contentsOf: path) }
    }

    @Test func commentsAreDroppedExceptDate() throws {
        let text =
            "# Provenance: x\n# Date: 2006-08-10\n$GPGGA,030807,4907.8533,N,12243.1974,W,0,00,,,M,,M,,*64\n# Notes: $GLGSV\n"
        let scratch = TemporaryDirectory()
        let path = try scratch.write("test.log", Array(text.utf8))
        let log = try NMEALog(contentsOf: path)
        let fed = log.lines.map { String(decoding: $0.bytes, as: UTF8.self) }
        #expect(fed == ["# Date: 2006-08-10\n", "$GPGGA,030807,4907.8533,N,12243.1974,W,0,00,,,M,,M,,*64\n"])
        #expect(log.sentenceCount == 1)
    }

    @Test func realTimePacingFollowsSentenceTimes() {
        var clock = EpochClock()
        let lines = [
            "$GPGGA,235958.0,x", "$GPRMC,235958.0,x", "$GPGSV,1,1", "$GPGGA,235959.5,x",
            "$GPGGA,000000.5,x", "$GPGGA,120000,x", "$GPGLL,4916.45,N,12311.12,W,120001.00,A",
        ]
        let delays = lines.map { clock.delay(before: ArraySlice(Array($0.utf8))) }
        #expect(delays == [0, 0, 0, 1.5, 1.0, 1, 1])  // midnight wraps; a 12 h jump is capped to 1 s
    }
}

@Suite struct RetimingTests {
    private func log(_ text: String) throws -> NMEALog {
        let scratch = TemporaryDirectory("retime")
        let path = scratch.file("retime.log")
        try text.write(toFile: path, atomically: true, encoding: .ascii)
        return try NMEALog(contentsOf: path)
    }

    private func checksumIsValid(_ line: String) -> Bool {
        guard let star = line.lastIndex(of: "*") else { return false }
        let body = line[line.index(after: line.startIndex)..<star]
        return UInt8(line[line.index(after: star)...].prefix(2), radix: 16) == body.utf8.reduce(0, ^)
    }

    @Test("times and dates move to the start given, gaps close up as the feed paces them, checksums stay valid")
    func movesTimesAndDates() throws {
        let original = try log(
            """
            # Date: 2014-12-31
            $GPGGA,235958.50,5540.1955,N,01241.0967,E,1,08,1.0,10.0,M,40.0,M,,*57
            $GPRMC,235958.50,A,5540.1955,N,01241.0967,E,0.0,0.0,311214,,,A*5D
            $GPGGA,235959.50,5540.1955,N,01241.0967,E,1,08,1.0,10.0,M,40.0,M,,*56
            $GPGGA,000100.50,5540.1955,N,01241.0967,E,1,08,1.0,10.0,M,40.0,M,,*56
            $GPZDA,000100.50,01,01,2015,00,00*64
            $GPGGA,000101.50,5540.1955,N,01241.0967,E,1,08,1.0,10.0,M,40.0,M,,*99
            $GPGSV,1,1,00*79

            """)
        // 2026-11-23T10:00:00Z
        let moved = try original.retimed(startingAt: Date(timeIntervalSince1970: 1_795_428_000.3))
        let lines = moved.lines.map { String(decoding: $0.bytes, as: UTF8.self).trimmingCharacters(in: .newlines) }
        #expect(lines[0] == "# Date: 2026-11-23")
        #expect(lines[1].hasPrefix("$GPGGA,100000.50,5540.1955,N"))
        #expect(lines[2].hasPrefix("$GPRMC,100000.50,A,") && lines[2].contains(",231126,"))
        #expect(lines[3].hasPrefix("$GPGGA,100001.50,"))
        // 61 s of recording fed as 1 s (over 5 s): the moved times follow the feed, not the recording.
        #expect(lines[4].hasPrefix("$GPGGA,100002.50,"))
        #expect(lines[5].hasPrefix("$GPZDA,100002.50,23,11,2026,"))
        #expect(lines[1...5].allSatisfy(checksumIsValid))
        // A sentence whose checksum was already wrong, and one without a time, are fed as they were.
        #expect(lines[6] == "$GPGGA,000101.50,5540.1955,N,01241.0967,E,1,08,1.0,10.0,M,40.0,M,,*99")
        #expect(lines[7] == "$GPGSV,1,1,00*79")
        #expect(moved.lines.map(\.delayBefore) == original.lines.map(\.delayBefore))
    }

    @Test func aLogWithoutTimesCannotBeRetimed() throws {
        let original = try log("$GPGSV,1,1,00*79\n")
        #expect(throws: ReplayError.logHasNoTimes(original.path)) { try original.retimed(startingAt: Date()) }
        #expect(ReplayError.logHasNoTimes("x").exitCode == 65)
    }
}
