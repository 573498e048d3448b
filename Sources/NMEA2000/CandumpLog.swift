/// A recording of a CAN bus as can-utils' `candump` writes it, read into frames. Two forms:
/// - `candump -l` (and `canplayer`'s input): `(1410714882.622188) can0 09F80102#36729A16021AB80D`;
/// - older candump's text, as in canboat's samples: `<0x18eeff01> [8] 05 a0 be 1c 00 a0 a0 c0`.
/// Comments (`#`), blank lines and an `interface = …` header are skipped. Standard (11-bit) frames
/// carry no PGN and are counted, not kept. A line that is neither is counted as unreadable, with the
/// first one kept for the error message: a recording from the field may be cut or mixed.
public struct CandumpLog: Sendable {
    public var frames: [CANFrame] = []
    public var standardFrames = 0
    public var unreadableLines = 0
    /// The first unreadable line's number and why.
    public var firstProblem: String?

    /// Lines longer than this are not a candump line (a CAN FD frame's 64 bytes included).
    public static let longestLine = 300

    public init(text: Substring) {
        var number = 0
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            number += 1
            let trimmed = String(line.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
            if trimmed.isEmpty || trimmed.hasPrefix("#") || trimmed.hasPrefix("interface =") { continue }
            switch Self.read(trimmed) {
            case .frame(let frame): frames.append(frame)
            case .standard: standardFrames += 1
            case .unreadable(let why):
                unreadableLines += 1
                if firstProblem == nil { firstProblem = "line \(number): \(why)" }
            }
        }
    }

    public init(text: String) { self.init(text: text[...]) }

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
        guard fields.count == 3, fields[0].hasSuffix(")"), let time = Double(fields[0].dropFirst().dropLast()), time.isFinite, time >= 0 else {
            return .unreadable("expected \"(seconds) interface ID#DATA\"")
        }
        let parts = fields[2].split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[1].hasPrefix("#") else { return .unreadable("not a classic CAN frame (no ID#DATA, or CAN FD's ##)") }
        if parts[0].count == 3 { return .standard }
        guard parts[0].count == 8, let identifier = UInt32(parts[0], radix: 16), parts[1].count % 2 == 0,
              let data = hexBytes(parts[1]), let frame = CANFrame(time: time, identifier: identifier, data: data) else {
            return .unreadable("an identifier of 8 hex digits and at most 8 data bytes in hex were expected")
        }
        return .frame(frame)
    }

    /// `<0xID> [n] b0 b1 …`, the byte count checked against the bytes given.
    private static func bracketed(_ line: String) -> Line {
        let fields = line.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count >= 2, fields[0].hasSuffix(">"), let identifier = UInt32(fields[0].dropFirst(3).dropLast(), radix: 16),
              fields[1].hasPrefix("["), fields[1].hasSuffix("]"), let count = Int(fields[1].dropFirst().dropLast()),
              count == fields.count - 2, let data = hexBytes(fields.dropFirst(2).joined()), fields.dropFirst(2).allSatisfy({ $0.count == 2 }) else {
            return .unreadable("expected \"<0xID> [n]\" and n bytes in hex")
        }
        if identifier <= 0x7FF, fields[0].count <= 7 { return .standard }
        guard let frame = CANFrame(identifier: identifier, data: data) else { return .unreadable("more than 8 data bytes or an identifier above 29 bits") }
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
