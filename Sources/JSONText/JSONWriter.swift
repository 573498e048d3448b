import Foundation

/// JSON text written straight out, as UTF-8 bytes (a String sliced at an escape could split a
/// character: "\r\n" is one). Strings and the shortest numbers come out byte for byte as Foundation's
/// JSONEncoder writes them with unescaped slashes; a property test holds the two together. Keys are
/// written in the order they are given: sorted where the text must match JSONEncoder's, in a
/// document's own order where the document has always had one (the sample lines).
public struct JSONWriter: Sendable {
    /// How a `Double` is written.
    public enum Numbers: Sendable {
        /// The shortest text that reads back as the same number, without a trailing ".0", as JSONEncoder.
        case shortest
        /// As Swift prints a `Double`, "92.0" with its point: the sample lines and `stats` have always
        /// written whole numbers so, and their readers' scripts see the same bytes.
        case keepingPoint
    }

    private var bytes: [UInt8] = []
    private let numbers: Numbers

    public init(numbers: Numbers = .shortest) {
        self.numbers = numbers
        bytes.reserveCapacity(1024)
    }

    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The fields of one object. Each key once; the caller gives the order.
    public struct Object {
        fileprivate var writer: JSONWriter
        private var first = true

        fileprivate init(_ writer: JSONWriter) { self.writer = writer }

        private mutating func key(_ key: String) {
            if !first { writer.bytes.append(UInt8(ascii: ",")) }
            first = false
            writer.string(key)
            writer.bytes.append(UInt8(ascii: ":"))
        }

        /// A string; nil leaves the key out, as JSONEncoder does.
        public mutating func field(_ name: String, _ value: String?) {
            guard let value else { return }
            key(name)
            writer.string(value)
        }

        /// A number; nil leaves the key out, and a number JSON cannot hold (NaN, infinity) is null.
        public mutating func field(_ name: String, _ value: Double?) {
            guard let value else { return }
            key(name)
            writer.number(value)
        }

        public mutating func field(_ name: String, _ value: Int?) {
            guard let value else { return }
            key(name)
            writer.integer(value)
        }

        public mutating func field(_ name: String, _ value: Bool) {
            key(name)
            writer.bytes.append(contentsOf: (value ? "true" : "false").utf8)
        }

        /// A string, or null for nil: documents whose every line carries every key.
        public mutating func nullable(_ name: String, _ value: String?) {
            key(name)
            if let value { writer.string(value) } else { writer.null() }
        }

        public mutating func nullable(_ name: String, _ value: Double?) {
            key(name)
            if let value { writer.number(value) } else { writer.null() }
        }

        public mutating func nullable(_ name: String, _ value: Int?) {
            key(name)
            if let value { writer.integer(value) } else { writer.null() }
        }

        public mutating func object(_ name: String, _ body: (inout Object) -> Void) {
            key(name)
            writer.object(body)
        }

        public mutating func array<Element>(
            _ name: String, _ elements: some Sequence<Element>, _ write: (inout JSONWriter, Element) -> Void
        ) {
            key(name)
            writer.array(elements, write)
        }
    }

    public mutating func object(_ body: (inout Object) -> Void) {
        var object = Object(self)
        bytes = []  // the object holds the bytes while it is written: one buffer, no copy
        object.writer.bytes.append(UInt8(ascii: "{"))
        body(&object)
        object.writer.bytes.append(UInt8(ascii: "}"))
        self = object.writer
    }

    public mutating func array<Element>(
        _ elements: some Sequence<Element>, _ write: (inout JSONWriter, Element) -> Void
    ) {
        bytes.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            write(&self, element)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    public mutating func null() {
        bytes.append(contentsOf: "null".utf8)
    }

    /// Text that is a JSON value already, such as a coordinate formatted to its precision.
    public mutating func raw(_ json: String) {
        bytes.append(contentsOf: json.utf8)
    }

    /// As JSONEncoder does: quote, backslash and control characters escaped, the rest as it is.
    public mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                bytes.append(UInt8(ascii: "\\"))
                bytes.append(byte)
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case ..<0x20:
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// JSON has no NaN or infinity: those are null (JSONEncoder refuses the whole value for them).
    public mutating func number(_ value: Double) {
        guard value.isFinite else { return null() }
        let written = value.description.utf8
        let pointless = numbers == .shortest && written.count > 2 && written.suffix(2).elementsEqual(".0".utf8)
        bytes.append(contentsOf: pointless ? written.dropLast(2) : written[...])
    }

    public mutating func integer(_ value: Int) {
        bytes.append(contentsOf: String(value).utf8)
    }

    /// `value` as one JSON string, quotes included.
    public static func quoted(_ value: String) -> String {
        var writer = JSONWriter()
        writer.string(value)
        return writer.text
    }
}

extension JSONWriter {
    /// Foundation's encoder as every document, message and state file here is written: sorted keys,
    /// so the same value is always the same bytes, and slashes as they are unless the peer's own
    /// format escapes them.
    public static func encoder(escapingSlashes: Bool = false, pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        var formatting: JSONEncoder.OutputFormatting = [.sortedKeys]
        if !escapingSlashes { formatting.insert(.withoutEscapingSlashes) }
        if pretty { formatting.insert(.prettyPrinted) }
        encoder.outputFormatting = formatting
        return encoder
    }

    /// `value` as one line of JSON with sorted keys and plain slashes.
    public static func encode(_ value: some Encodable) throws -> String {
        String(decoding: try encoder().encode(value), as: UTF8.self)
    }
}
