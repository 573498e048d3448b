/// Text from outside (names, ids, codes, configuration values, error details) made safe for a
/// terminal or a log line: control characters are shown as escapes, so an ESC cannot move the
/// cursor or recolour the screen and a newline cannot forge a second log line, and the length is
/// capped, so a million-character value cannot flood the screen.
public enum TerminalText {
    /// The longest text shown as it is; the rest is cut and counted.
    public static let defaultLimit = 120

    public static func safe(_ text: some StringProtocol, limit: Int = defaultLimit) -> String {
        var out = ""
        var shown = 0
        var cut = 0
        for scalar in text.unicodeScalars {
            if shown >= limit {
                cut += 1
                continue
            }
            shown += 1
            if let escape = escape(scalar) {
                out += escape
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        if cut > 0 { out += "…(\(cut) more)" }
        return out
    }

    /// Whether the text would be shown as it is (nothing escaped, nothing cut).
    public static func isSafe(_ text: some StringProtocol, limit: Int = defaultLimit) -> Bool {
        text.unicodeScalars.count <= limit && !text.unicodeScalars.contains { escape($0) != nil }
    }

    private static func escape(_ scalar: Unicode.Scalar) -> String? {
        switch scalar.value {
        case 0x09: return "\\t"
        case 0x0A: return "\\n"
        case 0x0D: return "\\r"
        case 0x00...0x1F, 0x7F...0x9F: return "\\x" + hex(scalar.value, digits: 2)
        // Bidirectional overrides and isolates reorder what follows them on screen.
        // Invisible ones (a byte-order mark, zero-width spaces and joiners) hide what a message names.
        case 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C,
            0xFEFF, 0x200B...0x200D, 0x2060...0x2064:
            return "\\u{" + hex(scalar.value, digits: 4) + "}"
        default: return nil
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
