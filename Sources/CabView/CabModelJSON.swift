import StateDirectory
import StateView

/// The model as JSON, written straight out: the page's stream sends it at every sample, and
/// JSONEncoder took about 0.1 ms for its 500 bytes, 9 % of the page process's CPU. The text is byte
/// for byte JSONEncoder's with sorted keys and unescaped slashes; a property test holds the two
/// together, so a field added to the model and not here fails it.
extension CabModel {
    var json: String {
        var out = JSONWriter()
        out.object { o in
            o.field("field", field)
            o.field("fieldsKnown", fieldsKnown)
            o.field("fieldsVersion", fieldsVersion)
            o.field("health", health)
            o.field("lastUpdate", lastUpdate)
            o.array("others", others) { $0.object($1.write) }
            if let own { o.object("own", own.write) }
            o.array("reasons", reasons) { $0.string($1) }
            o.object("settings", settings.write)
            o.object("sharing", sharing.write)
            o.field("staleAfterSeconds", staleAfterSeconds)
            o.field("takenAt", takenAt)
            o.object("work", work.write)
        }
        return out.text
    }
}

extension CabModel.Work {
    func write(_ o: inout JSONWriter.Object) {
        if let bus { o.object("bus", bus.write) }
        o.field("state", state)
        o.field("switchCounts", switchCounts)
        if let switchOn { o.field("switchOn", switchOn) }
        if let width { o.field("width", width) }
        o.field("widthConfigured", widthConfigured)
    }
}

extension Heartbeat.MachineStatus {
    func write(_ o: inout JSONWriter.Object) {
        o.field("busProblem", busProblem)
        o.field("engine", engine)
        o.array("notHeard", notHeard) { $0.string($1) }
        o.array("signals", signals) { $0.object($1.write) }
        o.field("tractorECU", tractorECU)
        o.field("work", work)
    }
}

extension Heartbeat.MachineStatus.Signal {
    func write(_ o: inout JSONWriter.Object) {
        o.field("ageSeconds", ageSeconds)
        o.field("signal", signal)
        o.field("source", source)
        o.field("value", value)
    }
}

extension CabModel.Own {
    func write(_ o: inout JSONWriter.Object) {
        o.field("fix", fix)
        o.field("fixText", fixText)
        o.field("hdop", hdop)
        o.field("heading", heading)
        o.field("latitude", latitude)
        o.field("longitude", longitude)
        o.field("old", old)
        o.field("satellites", satellites)
        o.field("speed", speed)
        o.field("time", time)
    }
}

extension CabModel.Other {
    func write(_ o: inout JSONWriter.Object) {
        o.field("age", age)
        o.field("ageSeconds", ageSeconds)
        o.field("bearing", bearing)
        o.field("direction", direction)
        o.field("distance", distance)
        o.field("distanceMetres", distanceMetres)
        o.field("field", field)
        o.field("fix", fix)
        o.field("fixText", fixText)
        o.field("id", id)
        o.field("latitude", latitude)
        o.field("longitude", longitude)
        o.field("name", name)
        o.field("positionTime", positionTime)
        o.field("state", state)
    }
}

extension CabModel.Settings {
    func write(_ o: inout JSONWriter.Object) {
        o.field("certificateValidUntil", certificateValidUntil)
        o.field("endpointName", endpointName)
        o.field("environment", environment)
        o.array("environments", environments) { $0.string($1) }
        o.field("onboarded", onboarded)
        o.field("waitingForGateway", waitingForGateway)
    }
}

extension SharingIndicator {
    func write(_ o: inout JSONWriter.Object) {
        o.field("kept", kept)
        o.field("pausedSince", pausedSince)
        o.field("since", since)
        o.field("state", state.rawValue)
        o.field("text", text)
        o.field("waiting", waiting)
    }
}

/// JSON text as JSONEncoder writes it (no spaces, slashes as they are, nil fields left out), for
/// types that write their own fields in sorted order. Built as UTF-8 bytes: a String sliced at an
/// escape could split a character ("\r\n" is one).
struct JSONWriter {
    private var bytes: [UInt8] = []

    init() { bytes.reserveCapacity(1024) }

    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// The fields of one object; each key once, in ascending order.
    struct Object {
        fileprivate var writer: JSONWriter
        private var first = true

        fileprivate init(_ writer: JSONWriter) { self.writer = writer }

        private mutating func key(_ key: StaticString) {
            writer.bytes.append(first ? UInt8(ascii: "\"") : UInt8(ascii: ","))
            if !first { writer.bytes.append(UInt8(ascii: "\"")) }
            first = false
            // The keys are this file's own, with nothing to escape.
            key.withUTF8Buffer { writer.bytes.append(contentsOf: $0) }
            writer.bytes.append(UInt8(ascii: "\""))
            writer.bytes.append(UInt8(ascii: ":"))
        }

        mutating func field(_ name: StaticString, _ value: String?) {
            guard let value else { return }
            key(name)
            writer.string(value)
        }

        mutating func field(_ name: StaticString, _ value: Double?) {
            guard let value else { return }
            key(name)
            writer.number(value)
        }

        mutating func field(_ name: StaticString, _ value: Int?) {
            guard let value else { return }
            key(name)
            writer.bytes.append(contentsOf: String(value).utf8)
        }

        mutating func field(_ name: StaticString, _ value: Bool) {
            key(name)
            writer.bytes.append(contentsOf: (value ? "true" : "false").utf8)
        }

        mutating func object(_ name: StaticString, _ body: (inout Object) -> Void) {
            key(name)
            writer.object(body)
        }

        mutating func array<Element>(
            _ name: StaticString, _ elements: [Element], _ write: (inout JSONWriter, Element) -> Void
        ) {
            key(name)
            writer.bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { writer.bytes.append(UInt8(ascii: ",")) }
                write(&writer, element)
            }
            writer.bytes.append(UInt8(ascii: "]"))
        }
    }

    mutating func object(_ body: (inout Object) -> Void) {
        var object = Object(self)
        bytes = []  // the object holds the bytes while it is written: one buffer, no copy
        object.writer.bytes.append(UInt8(ascii: "{"))
        body(&object)
        object.writer.bytes.append(UInt8(ascii: "}"))
        self = object.writer
    }

    /// As JSONEncoder does: quote, backslash and control characters escaped, the rest as it is.
    mutating func string(_ value: String) {
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

    /// The shortest text that reads back as the same number, without a trailing ".0"; JSON has no
    /// NaN or infinity, so those are null (JSONEncoder refuses the whole model for them).
    mutating func number(_ value: Double) {
        guard value.isFinite else {
            bytes.append(contentsOf: "null".utf8)
            return
        }
        let written = value.description.utf8
        bytes.append(
            contentsOf: written.count > 2 && written.suffix(2).elementsEqual(".0".utf8)
                ? written.dropLast(2) : written[...])
    }
}
