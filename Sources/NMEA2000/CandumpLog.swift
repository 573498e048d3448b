/// A recording of a CAN bus as can-utils' `candump` writes it, read into frames. Two forms:
/// - `candump -l` (and `canplayer`'s input): `(1410714882.622188) can0 09F80102#36729A16021AB80D`;
/// - older candump's text, as in canboat's samples: `<0x18eeff01> [8] 05 a0 be 1c 00 a0 a0 c0`.
/// Comments (`#`), blank lines and an `interface = …` header are skipped. Standard (11-bit) frames
/// carry no PGN and are counted, not kept. A line that is neither is counted as unreadable, with the
/// first one kept for the error message: a recording from the field may be cut or mixed.
/// `CandumpFile` reads a file into one line by line; `init(text:)` reads text already in memory.
public struct CandumpLog: Sendable {
    /// The frames kept: all of them from `init(text:)`, those `CandumpFile` is asked to keep.
    public var frames: [CANFrame] = []
    /// Extended frames read, kept or not.
    public private(set) var framesRead = 0
    public var standardFrames = 0
    public var unreadableLines = 0
    /// The first unreadable line's number and why.
    public var firstProblem: String?
    /// Lines taken so far, blank ones and comments included: the number of the next is one more.
    public private(set) var lines = 0

    /// Lines longer than this are not a candump line (a CAN FD frame's 64 bytes included). It is a
    /// line's length with its blanks: checked before anything is trimmed or copied, so that a line
    /// of many megabytes costs no more than its reading.
    public static let longestLine = 300

    public init() {}

    public init(text: Substring) {
        for line in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: false) {
            let frame =
                line.withContiguousStorageIfAvailable { bytes in
                    take(line: UnsafeBufferPointer(rebasing: bytes.prefix(Self.longestLine)), length: bytes.count)
                }
                ?? Array(line).withUnsafeBufferPointer { bytes in
                    take(line: UnsafeBufferPointer(rebasing: bytes.prefix(Self.longestLine)), length: bytes.count)
                }
            if let frame { frames.append(frame) }
        }
    }

    public init(text: String) { self.init(text: text[...]) }

    /// Lines that were frames, extended or standard.
    public var readLines: Int { framesRead + standardFrames }

    /// Takes the next line, without its line break: `prefix` is its first bytes, all of them unless
    /// `length` says the line was longer than `longestLine`. The extended frame it holds, if any, is
    /// returned and counted, not kept.
    mutating func take(line prefix: UnsafeBufferPointer<UInt8>, length: Int) -> CANFrame? {
        lines += 1
        let trimmed = Self.trimmed(prefix)
        if length > Self.longestLine {
            // Its first bytes still tell a comment, which may be as long as it likes.
            if trimmed.first == UInt8(ascii: "#") { return nil }
            unreadable("longer than \(Self.longestLine) characters (\(length) bytes), skipped")
            return nil
        }
        if trimmed.isEmpty || trimmed.first == UInt8(ascii: "#") || trimmed.starts(with: "interface =".utf8) {
            return nil
        }
        switch Self.read(String(decoding: trimmed, as: UTF8.self)) {
        case .frame(let frame):
            framesRead += 1
            return frame
        case .standard:
            standardFrames += 1
        case .unreadable(let why):
            unreadable(why)
        }
        return nil
    }

    private mutating func unreadable(_ why: String) {
        unreadableLines += 1
        if firstProblem == nil { firstProblem = "line \(lines): \(why)" }
    }

    /// The line without the blanks around it (and a CR before its LF), as a slice: nothing copied.
    static func trimmed(_ line: UnsafeBufferPointer<UInt8>) -> Slice<UnsafeBufferPointer<UInt8>> {
        var start = line.startIndex
        var end = line.endIndex
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        while end > start, line[end - 1] == 0x20 || line[end - 1] == 0x09 || line[end - 1] == 0x0D { end -= 1 }
        return line[start..<end]
    }

    enum Line {
        case frame(CANFrame)
        case standard
        case unreadable(String)
    }

    static func read(_ line: String) -> Line {
        guard line.utf8.count <= longestLine else { return .unreadable("longer than \(longestLine) characters") }
        if line.hasPrefix("(") { return logged(line) }
        if line.hasPrefix("<0x") { return bracketed(line) }
        return .unreadable("neither candump -l's \"(time) iface ID#DATA\" nor \"<0xID> [n] bytes\"")
    }

    /// `(seconds.micros) iface ID#DATA`; a 3-digit ID is a standard frame.
    private static func logged(_ line: String) -> Line {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 3, fields[0].hasSuffix(")"), let time = Double(fields[0].dropFirst().dropLast()),
            time.isFinite, time >= 0
        else {
            return .unreadable("expected \"(seconds) interface ID#DATA\"")
        }
        let parts = fields[2].split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[1].hasPrefix("#") else {
            return .unreadable("not a classic CAN frame (no ID#DATA, or CAN FD's ##)")
        }
        if parts[0].count == 3 { return .standard }
        guard parts[0].count == 8, let identifier = UInt32(parts[0], radix: 16), parts[1].count % 2 == 0,
            let data = hexBytes(parts[1]), let frame = CANFrame(time: time, identifier: identifier, data: data)
        else {
            return .unreadable("an identifier of 8 hex digits and at most 8 data bytes in hex were expected")
        }
        return .frame(frame)
    }

    /// `<0xID> [n] b0 b1 …`, the byte count checked against the bytes given.
    private static func bracketed(_ line: String) -> Line {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 2, fields[0].hasSuffix(">"),
            let identifier = UInt32(fields[0].dropFirst(3).dropLast(), radix: 16),
            fields[1].hasPrefix("["), fields[1].hasSuffix("]"), let count = Int(fields[1].dropFirst().dropLast()),
            count == fields.count - 2, let data = hexBytes(fields.dropFirst(2).joined()),
            fields.dropFirst(2).allSatisfy({ $0.count == 2 })
        else {
            return .unreadable("expected \"<0xID> [n]\" and n bytes in hex")
        }
        if identifier <= 0x7FF, fields[0].count <= 7 { return .standard }
        guard let frame = CANFrame(identifier: identifier, data: data) else {
            return .unreadable("more than 8 data bytes or an identifier above 29 bits")
        }
        return .frame(frame)
    }

    static func hexBytes<S: StringProtocol>(_ text: S) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.count <= 16 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case 0x30...0x39: return digit - 0x30
        case 0x41...0x46: return digit - 0x37
        case 0x61...0x66: return digit - 0x57
        default: return nil
        }
    }
}

extension CandumpLog {
    /// Seconds after a replay began that the frame at `index` is due: at its recorded pace when
    /// `realTime` and the frame has a time no earlier than the first's, else at `rate` frames a second.
    public static func due(_ frame: CANFrame, index: Int, firstTime: Double?, realTime: Bool, rate: Double) -> Double {
        if realTime, let time = frame.time, let firstTime, time >= firstTime { return time - firstTime }
        return Double(index) / rate
    }
}
