import Bounds

/// The part of TOML that agrigps's configuration uses, read by a parser that cannot abort the
/// process: `[section]` headers, `key = value` lines, comments, and values that are a string, a
/// number, a boolean or a one-line array of strings. Anything else (other arrays, inline tables,
/// dates, dotted keys, multi-line strings) is refused with the line it is on and what to write instead. A NUL byte or a file
/// larger than `maximumBytes` is refused before anything is parsed.
///
/// It replaces a general TOML library whose C++ core aborted the process on some inputs (`[[[`):
/// a configuration file is input like any other, and a bad one must give a clear error.
enum ConfigurationText {
    enum Value: Sendable, Equatable {
        case string(String)
        case integer(Int)
        case float(Double)
        case boolean(Bool)
        case strings([String])

        /// The number, whether written as an integer or a float.
        var number: Double? {
            switch self {
            case .integer(let value): return Double(value)
            case .float(let value): return value
            default: return nil
            }
        }
    }

    struct ParseError: Error, Sendable, Equatable {
        var line: Int
        var reason: String
    }

    /// Larger than any configuration agrigps could need, by far.
    static let maximumBytes = 65_536

    /// Values by section, then key, in the order of the file.
    static func parse(_ bytes: [UInt8]) throws(ParseError) -> [(section: String, key: String, value: Value, line: Int)]
    {
        guard bytes.count <= maximumBytes else {
            throw ParseError(
                line: 0, reason: "the file is \(bytes.count) bytes; a configuration file is at most \(maximumBytes)")
        }
        if let nul = bytes.firstIndex(of: 0) {
            throw ParseError(
                line: bytes[..<nul].count { $0 == UInt8(ascii: "\n") } + 1,
                reason: "a NUL byte: the file is damaged or not text")
        }
        guard var text = String(validating: bytes, as: UTF8.self) else {
            throw ParseError(line: 0, reason: "not UTF-8 text")
        }
        // A byte-order mark, as Windows editors save UTF-8: it says nothing in UTF-8, so it is skipped.
        if text.unicodeScalars.first == "\u{FEFF}" { text = String(text.unicodeScalars.dropFirst()) }
        var entries: [(section: String, key: String, value: Value, line: Int)] = []
        var section: String?
        var seenSections: Set<String> = []
        var seenKeys: Set<String> = []
        // Split by scalars: Swift counts "\r\n" as one Character, so a file saved with Windows line
        // ends would not split on "\n" at all.
        for (index, scalars) in text.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated()
        {
            let number = index + 1
            let rawLine = String(String.UnicodeScalarView(scalars.last == "\r" ? scalars.dropLast() : scalars))
            var line = Scanner(Substring(rawLine), line: number)
            line.skipSpace()
            if line.atEndOrComment { continue }
            if line.peek == "[" {
                let name = try line.sectionHeader()
                guard seenSections.insert(name).inserted else {
                    throw ParseError(line: number, reason: "section [\(name)] appears twice")
                }
                section = name
                continue
            }
            let key = try line.bareKey()
            guard let section else {
                throw ParseError(
                    line: number,
                    reason:
                        "\(TerminalText.safe(key, limit: 40)) is outside any section; put it under its section, e.g. [sampling]"
                )
            }
            guard seenKeys.insert(section + "." + key).inserted else {
                throw ParseError(line: number, reason: "[\(section)] \(TerminalText.safe(key, limit: 40)) is set twice")
            }
            line.skipSpace()
            guard line.take("=") else {
                throw ParseError(line: number, reason: "expected = after \(TerminalText.safe(key, limit: 40))")
            }
            line.skipSpace()
            let value = try line.value()
            line.skipSpace()
            guard line.atEndOrComment else {
                throw ParseError(
                    line: number, reason: "unexpected \(TerminalText.safe(line.rest, limit: 30)) after the value")
            }
            entries.append((section, key, value, number))
        }
        return entries
    }

    /// One line, read character by character.
    private struct Scanner {
        private var rest_: Substring
        let line: Int

        init(_ text: Substring, line: Int) {
            rest_ = text
            self.line = line
        }

        var rest: Substring { rest_ }
        var peek: Character? { rest_.first }
        var atEndOrComment: Bool { rest_.isEmpty || rest_.first == "#" }

        mutating func skipSpace() {
            rest_ = rest_.drop { $0 == " " || $0 == "\t" }
        }

        mutating func take(_ character: Character) -> Bool {
            guard rest_.first == character else { return false }
            rest_.removeFirst()
            return true
        }

        func fail(_ reason: String) -> ParseError { ParseError(line: line, reason: reason) }

        static func isBare(_ character: Character) -> Bool {
            character.isASCII && (character.isLetter || character.isNumber || character == "_" || character == "-")
        }

        mutating func bareKey() throws(ParseError) -> String {
            let key = rest_.prefix(while: Self.isBare)
            guard !key.isEmpty else {
                if rest_.first == "\"" || rest_.first == "'" {
                    throw fail("quoted keys are not used here; write the key bare, e.g. interval = 1")
                }
                throw fail("expected a key, found \(TerminalText.safe(rest_, limit: 30))")
            }
            rest_ = rest_.dropFirst(key.count)
            if rest_.first == "." {
                throw fail("dotted keys are not used here; write [section] on its own line, then key = value")
            }
            return String(key)
        }

        mutating func sectionHeader() throws(ParseError) -> String {
            _ = take("[")
            if rest_.first == "[" {
                throw fail("arrays of tables ([[...]]) are not used here; write a plain [section]")
            }
            skipSpace()
            let name = rest_.prefix(while: Self.isBare)
            rest_ = rest_.dropFirst(name.count)
            skipSpace()
            guard !name.isEmpty, take("]") else {
                throw fail(
                    "a section header is [name] with letters, digits, _ or -; found \(TerminalText.safe(rest_, limit: 30))"
                )
            }
            skipSpace()
            guard atEndOrComment else {
                throw fail("unexpected \(TerminalText.safe(rest_, limit: 30)) after [\(name)]")
            }
            return String(name)
        }

        mutating func value() throws(ParseError) -> Value {
            switch rest_.first {
            case "\"":
                if rest_.hasPrefix("\"\"\"") {
                    throw fail("multi-line strings are not used here; keep the value on one line")
                }
                return .string(try basicString())
            case "'":
                if rest_.hasPrefix("'''") {
                    throw fail("multi-line strings are not used here; keep the value on one line")
                }
                rest_.removeFirst()
                guard let end = rest_.firstIndex(of: "'") else { throw fail("the string has no closing '") }
                let text = rest_[..<end]
                rest_ = rest_[rest_.index(after: end)...]
                return .string(String(text))
            case "[": return .strings(try strings())
            case "{": throw fail("inline tables are not used here; give one value")
            case nil: throw fail("a value is missing after =")
            default:
                let word = rest_.prefix { !" \t#".contains($0) }
                rest_ = rest_.dropFirst(word.count)
                if word == "true" { return .boolean(true) }
                if word == "false" { return .boolean(false) }
                if let number = Self.number(word) { return number }
                throw fail(
                    "\(TerminalText.safe(word, limit: 40)) is not a value; write a number, true/false, or text in double quotes"
                )
            }
        }

        /// `["a", 'b']` on one line; a trailing comma is allowed, as TOML allows it.
        private mutating func strings() throws(ParseError) -> [String] {
            rest_.removeFirst()
            var items: [String] = []
            while true {
                skipSpace()
                if rest_.first == "]" {
                    rest_.removeFirst()
                    return items
                }
                guard rest_.first == "\"" || rest_.first == "'" else {
                    throw fail("an array here is text in quotes on one line, such as [\"gps_info\", \"efdi\"]")
                }
                guard case .string(let item) = try value() else { throw fail("an array here holds text only") }
                items.append(item)
                skipSpace()
                if rest_.first == "," {
                    rest_.removeFirst()
                } else if rest_.first != "]" {
                    throw fail("expected , or ] after \"\(TerminalText.safe(item, limit: 30))\" in the array")
                }
            }
        }

        private mutating func basicString() throws(ParseError) -> String {
            rest_.removeFirst()
            var out = ""
            while let character = rest_.first {
                rest_.removeFirst()
                switch character {
                case "\"": return out
                case "\\":
                    guard let escape = rest_.first else { throw fail("the string ends in a lone backslash") }
                    rest_.removeFirst()
                    switch escape {
                    case "\"": out.append("\"")
                    case "\\": out.append("\\")
                    case "n": out.append("\n")
                    case "t": out.append("\t")
                    case "r": out.append("\r")
                    case "b": out.append("\u{8}")
                    case "f": out.append("\u{C}")
                    case "u", "U":
                        let digits = rest_.prefix(escape == "u" ? 4 : 8)
                        guard digits.count == (escape == "u" ? 4 : 8), digits.allSatisfy(\.isHexDigit),
                            let code = UInt32(digits, radix: 16),
                            let scalar = Unicode.Scalar(code)
                        else { throw fail("a \\\(escape) escape needs hexadecimal digits of a character") }
                        // A control character is no part of any value here (a NUL would cut a C string short).
                        guard code >= 0x20, code != 0x7F else {
                            throw fail("a \\\(escape) escape of a control character")
                        }
                        rest_ = rest_.dropFirst(digits.count)
                        out.unicodeScalars.append(scalar)
                    default: throw fail("\\\(TerminalText.safe(String(escape), limit: 4)) is not an escape TOML knows")
                    }
                default:
                    if character.unicodeScalars.contains(where: { $0.value < 0x20 && $0 != "\t" || $0.value == 0x7F }) {
                        throw fail("a control character inside a string; write it as an escape such as \\t")
                    }
                    out.append(character)
                }
            }
            throw fail("the string has no closing \"")
        }

        /// TOML's integers (decimal, 0x, 0o, 0b, with _ between digits) and floats (with exponent,
        /// inf and nan). Out of Int's range is refused, never wrapped or trapped.
        static func number(_ word: Substring) -> Value? {
            guard !word.isEmpty, !word.hasPrefix("_"), !word.hasSuffix("_"), !word.contains("__") else { return nil }
            let plain = String(word.filter { $0 != "_" })
            for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] where plain.hasPrefix(prefix) {
                let digits = plain.dropFirst(2)
                guard !digits.isEmpty, digits.allSatisfy({ $0.hexDigitValue.map { $0 < radix } ?? false }) else {
                    return nil
                }
                return Int(digits, radix: radix).map(Value.integer)
            }
            let unsigned = plain.hasPrefix("+") || plain.hasPrefix("-") ? plain.dropFirst() : Substring(plain)
            if unsigned == "inf" { return .float(plain.hasPrefix("-") ? -.infinity : .infinity) }
            if unsigned == "nan" { return .float(.nan) }
            guard let first = unsigned.first, first.isASCII, first.isNumber,
                unsigned.allSatisfy({ $0.isASCII && ($0.isNumber || ".eE+-".contains($0)) })
            else { return nil }
            if unsigned.allSatisfy({ $0.isNumber }) {
                if unsigned.count > 1, unsigned.hasPrefix("0") { return nil }  // TOML forbids leading zeros
                return Int(plain).map(Value.integer)
            }
            // TOML wants a digit on both sides of a point, and after an exponent's e.
            let shape = #/^[+-]?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/#
            guard plain.wholeMatch(of: shape) != nil else { return nil }
            return Double(plain).map(Value.float)
        }
    }
}
