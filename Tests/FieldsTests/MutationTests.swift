import Foundation
import TestSupport
import Testing

@testable import Fields

/// Damaged copies of real exports: whatever a byte flip, a cut or a repeated stretch does, the
/// reader answers with fields or with a FieldsError, and never traps (a trap would end the test run).
@Suite("mutated exports never crash the reader")
struct MutationTests {
    private static func mutate(_ bytes: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<(1 + random.below(4)) {
            guard !bytes.isEmpty else { break }
            let at = random.below(bytes.count)
            switch random.below(5) {
            case 0: bytes[at] = UInt8(truncatingIfNeeded: random.next())
            case 1: bytes.removeSubrange(at..<min(bytes.count, at + random.below(64)))
            case 2:
                bytes.insert(
                    contentsOf: bytes[at..<min(bytes.count, at + random.below(64))], at: random.below(bytes.count))
            case 3: bytes[at] = random.pick(Array("<>/=\"'&;!?-".utf8))
            default: bytes = Array(bytes.prefix(at))
            }
        }
        return bytes
    }

    @Test("2,000 mutations of TaskData XML, v3 and v4")
    func xml() throws {
        let sources = try [
            ISOXMLFixtures.geobirdV3, ISOXMLFixtures.farmdocXML, ISOXMLFixtures.deutzFolder + "/PFD00000.XML",
        ].map {
            Array(try Data(contentsOf: URL(fileURLWithPath: $0)))
        }
        var random = SplitMix64(seed: 0x15_0_11783)
        var (read, refused) = (0, 0)
        for round in 0..<2_000 {
            let mutated = Self.mutate(sources[round % sources.count], &random)
            do {
                let external = round % sources.count == 2
                _ = try TaskDataReader.read(
                    xml: mutated, fileName: external ? "PFD00000.XML" : "TASKDATA.XML",
                    root: external ? "XFC" : "ISO11783_TaskData")
                read += 1
            } catch {
                refused += 1
                #expect(!error.description.isEmpty)
            }
        }
        print("mutated XML: \(read) read, \(refused) refused")
        #expect(read > 0 && refused > 0)
    }

    @Test("500 mutations of the FarmFacts zip")
    func zip() throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let original = Array(try Data(contentsOf: URL(fileURLWithPath: ISOXMLFixtures.farmFactsZip)))
        var random = SplitMix64(seed: 0x21)
        var outcomes: [String: Int] = [:]
        for round in 0..<500 {
            let path = try scratch.write("m\(round % 4).zip", Self.mutate(original, &random))
            do {
                var package = try TaskDataPackage(path: path)
                let content = try TaskDataReader.read(&package)
                outcomes["read \(content.fields.count)", default: 0] += 1
            } catch {
                outcomes["\(error.kind)", default: 0] += 1
            }
        }
        print("mutated zips: \(outcomes.sorted { $0.key < $1.key })")
        #expect(outcomes.count > 1)
    }
}
