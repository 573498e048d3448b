import Foundation
import JSONText
import PropertyBased
import TestSupport
import Testing

@Suite("JSON written straight out")
struct JSONWriterTests {
    static let pieces = [
        "", "a", "Nordacker", "\"", "\\", "/", "\n", "\r\n", "\t", "\u{0}", "\u{8}", "\u{c}", "\u{1f}", "\u{7f}", "é",
        "e\u{301}", "\u{2028}", "😀", "Ölmühle", " ", "{}", "null",
    ]

    static func number(_ random: inout SplitMix64) -> Double {
        let special: [Double] = [
            0, -0.0, 1, 92, 0.1, 1e-5, 1e16, 1e21, 5e-324, .greatestFiniteMagnitude, -93.750558641,
        ]
        if random.chance(40) { return random.pick(special) }
        let bits = Double(bitPattern: random.next())
        return bits.isFinite ? bits : Double(random.below(1_000_000)) / 1000
    }

    /// What JSONEncoder writes for one value, taken out of the array it needs around it.
    static func encoded(_ value: some Encodable) throws -> String {
        String(try JSONWriter.encode([value]).dropFirst().dropLast())
    }

    @Test("strings and shortest numbers are JSONEncoder's, byte for byte")
    func sameAsJSONEncoder() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var random = SplitMix64(seed: UInt64(seed))
            let text = (0..<random.below(6)).map { _ in random.pick(Self.pieces) }.joined()
            let number = Self.number(&random)
            var writer = JSONWriter()
            writer.number(number)
            #expect(JSONWriter.quoted(text) == (try? Self.encoded(text)), "seed \(seed)")
            #expect(writer.text == (try? Self.encoded(number)), "seed \(seed): \(number)")
        }
    }

    @Test("keeping the point writes a number as Swift prints it, as the sample lines always have")
    func keepingPoint() {
        var writer = JSONWriter(numbers: .keepingPoint)
        writer.array([92, 0.5, -0.0, 1e16, .nan]) { $0.number($1) }
        #expect(writer.text == "[92.0,0.5,-0.0,1e+16,null]")
        var shortest = JSONWriter()
        shortest.array([92, 0.5, .infinity]) { $0.number($1) }
        #expect(shortest.text == "[92,0.5,null]")
    }

    @Test("a field left nil is left out, a nullable one is null, in the order given")
    func fieldsInOrder() throws {
        var writer = JSONWriter()
        writer.object { o in
            o.field("z", "last first")
            o.field("absent", nil as String?)
            o.nullable("unknown", nil as Double?)
            o.nullable("count", 3)
            o.field("on", true)
            o.object("inner") { $0.field("a/b", "c/d") }
            o.array("list", [1, 2]) { $0.integer($1) }
        }
        #expect(
            writer.text == #"{"z":"last first","unknown":null,"count":3,"on":true,"inner":{"a/b":"c/d"},"list":[1,2]}"#)
        #expect(try JSONSerialization.jsonObject(with: Data(writer.text.utf8)) is [String: Any])
    }

    @Test("the shared encoder: sorted keys, plain slashes unless asked, pretty on request")
    func encoderOptions() throws {
        let value = ["b": "x/y", "a": "1"]
        #expect(try JSONWriter.encode(value) == #"{"a":"1","b":"x/y"}"#)
        let escaped = try JSONWriter.encoder(escapingSlashes: true).encode(value)
        #expect(String(decoding: escaped, as: UTF8.self) == #"{"a":"1","b":"x\/y"}"#)
        let pretty = try JSONWriter.encoder(pretty: true).encode(value)
        #expect(String(decoding: pretty, as: UTF8.self).contains("\n"))
    }
}
