import Foundation
import StateFiles

/// A recorded NMEA log, checked and prepared for feeding to gpsd the way gpsfake feeds it:
/// comment lines are dropped except `# Date:` (gpsd's date context), and `# EOF` is appended so
/// that gpsd closes the device at the end.
public struct NMEALog: Sendable {
    /// One line to send, and how long to wait before it when replaying in real time.
    struct FeedLine: Sendable {
        var bytes: [UInt8]
        var delayBefore: Double
    }

    /// Bytes of a fed line that are not NMEA text, replaced by NUL before gpsd sees them.
    public struct ReplacedBytes: Sendable, Equatable {
        public var count: Int
        /// Offset in the log file of the first one, counted from 0.
        public var firstOffset: Int
    }

    public let path: String
    /// Lines that start with `$` or `!`.
    public let sentenceCount: Int
    /// What was replaced by NUL, if anything: the caller should say so, the log is damaged there.
    public let replacedBytes: ReplacedBytes?
    let lines: [FeedLine]

    public static let endOfFeed = Array("# EOF\n".utf8)

    public init(contentsOf path: String) throws(ReplayError) {
        try self.init(contentsOf: path, replacingNonText: true)
    }

    /// `replacingNonText: false` feeds the bytes as they are; only tests want that, to make gpsd
    /// take part of a log for binary data.
    init(contentsOf path: String, replacingNonText: Bool) throws(ReplayError) {
        let bytes = try Self.read(path)
        guard bytes.contains(where: { !Self.isSpace($0) }) else { throw .logEmpty(path) }
        if let offset = Self.binaryOffset(in: bytes) { throw .logBinary(path, offset: offset) }
        var lines: [FeedLine] = []
        var sentences = 0
        var replaced: ReplacedBytes?
        var clock = EpochClock()
        // Slices keep the indices of `bytes`, so a line's indices are offsets in the file.
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let first = line.first else { continue }
            if first == UInt8(ascii: "#") && !line.starts(with: Array("# Date:".utf8)) { continue }
            if first == UInt8(ascii: "$") || first == UInt8(ascii: "!") { sentences += 1 }
            var fed = Array(line)
            if replacingNonText { Self.replaceNonText(in: &fed, from: line.startIndex, noting: &replaced) }
            lines.append(FeedLine(bytes: fed + [UInt8(ascii: "\n")], delayBefore: clock.delay(before: line)))
        }
        guard sentences > 0 else { throw .logHasNoSentences(path) }
        self.path = path
        self.sentenceCount = sentences
        self.replacedBytes = replaced
        self.lines = lines
    }

    init(path: String, sentenceCount: Int, replacedBytes: ReplacedBytes?, lines: [FeedLine]) {
        self.path = path
        self.sentenceCount = sentenceCount
        self.replacedBytes = replacedBytes
        self.lines = lines
    }

    /// Bytes gpsd reads as NMEA, or skips harmlessly: printable ASCII, TAB, CR, and NUL (a receiver
    /// that reboots mid-sentence writes runs of NUL). Any other control byte can start a binary
    /// frame in gpsd's packet sniffer: DLE (0x10) followed by a byte from 0x13 up opens a TSIP frame
    /// of up to 255 bytes, which swallows our `# EOF`, and the replay would never end.
    static func isText(_ byte: UInt8) -> Bool {
        (0x20...0x7E).contains(byte) || byte == 0x09 || byte == 0x0D || byte == 0x00
    }

    private static func replaceNonText(in line: inout [UInt8], from offset: Int, noting replaced: inout ReplacedBytes?)
    {
        for index in line.indices where !isText(line[index]) {
            line[index] = 0
            if replaced == nil { replaced = ReplacedBytes(count: 0, firstOffset: offset + index) }
            replaced?.count += 1
        }
    }

    /// The largest log a replay reads: a day of a 10 Hz receiver's sentences is about half of it.
    /// The whole log is held while it plays.
    public static let largestLog = 512 << 20

    /// Only a regular file, opened without blocking: a FIFO's open would wait for a writer for ever,
    /// and /dev/zero would be read until memory ran out.
    private static func read(_ path: String) throws(ReplayError) -> [UInt8] {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw .logIsDirectory(path)
        }
        let read: [UInt8]?
        do throws(StateFileError) {
            read = try StateFile.read(path, limit: largestLog, followingLinks: true)
        } catch {
            if error.notRegular { throw .logNotRegular(path) }
            if error.code == EFBIG { throw .logTooLarge(path, limit: largestLog) }
            throw .logUnreadable(path, reason: String(cString: strerror(error.code)))
        }
        guard let read else { throw .logNotFound(path) }
        return read
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// More than one byte in ten that no text log has marks a binary file. A stray NUL does not:
    /// a receiver that reboots mid-sentence writes a run of them (gp-320fw coldboot log).
    static func binaryOffset(in bytes: [UInt8]) -> Int? {
        let isOdd: (UInt8) -> Bool = { ($0 < 0x20 && !isSpace($0)) || $0 == 0x7F || $0 >= 0x80 }
        let odd = bytes.reduce(0) { $0 + (isOdd($1) ? 1 : 0) }
        guard odd * 10 > bytes.count else { return nil }
        return bytes.firstIndex(where: isOdd)
    }
}

/// Works out real-time pacing from the UTC time fields of GGA, RMC, GLL, ZDA and GNS sentences.
struct EpochClock {
    private var current: Double?

    mutating func delay(before line: ArraySlice<UInt8>) -> Double {
        guard let time = Self.timeOfDay(in: line) else { return 0 }
        defer { current = time }
        guard let current, time != current else { return 0 }
        var step = time - current
        if step < 0 { step += 86_400 }  // across midnight
        // Garbage times (cold starts, reboots) must not stall a replay.
        return step <= 5 ? step : 1
    }

    static func timeOfDay(in line: ArraySlice<UInt8>) -> Double? {
        guard line.count > 7, line.first == UInt8(ascii: "$") else { return nil }
        let fields = line.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: false)
        let type = String(decoding: fields[0].suffix(3), as: UTF8.self)
        let index: Int
        switch type {
        case "GGA", "RMC", "ZDA", "GNS": index = 1
        case "GLL": index = 5
        default: return nil
        }
        guard fields.count > index else { return nil }
        return secondsOfDay(String(decoding: fields[index], as: UTF8.self))
    }

    /// An NMEA time field, `hhmmss[.ss]`, as seconds since midnight; nil if it is not one.
    static func secondsOfDay(_ text: String) -> Double? {
        guard text.count >= 6, let value = Double(text), value >= 0 else { return nil }
        let hours = (value / 10_000).rounded(.down)
        let minutes = ((value - hours * 10_000) / 100).rounded(.down)
        let seconds = value - hours * 10_000 - minutes * 100
        guard hours < 24, minutes < 60, seconds < 61 else { return nil }
        return hours * 3600 + minutes * 60 + seconds
    }
}
