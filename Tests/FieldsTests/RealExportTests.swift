import Foundation
import TestSupport
import Testing

@testable import Fields

private func read(_ path: String, limits: TaskDataLimits = TaskDataLimits()) throws -> (TaskData, TaskDataPackage) {
    var package = try TaskDataPackage(path: path, limits: limits)
    return (try TaskDataReader.read(&package, limits: limits), package)
}

@Suite("real ISOXML exports from farm software")
struct RealExportTests {
    @Test("the FarmFacts/Topcon zip (ISOXML 4.2, external files): 9 fields with boundaries, 6 partfields without")
    func farmFacts() throws {
        let started = ContinuousClock.now
        let (content, package) = try read(ISOXMLFixtures.farmFactsZip)
        let elapsed = ContinuousClock.now - started
        print("FarmFacts zip read in \(elapsed)")
        #expect(package.kind == .zip)
        #expect(content.version == "4.2")
        #expect(content.software == "FarmFacts")
        #expect(content.fields.count == 9)
        #expect(content.skipped.count == 6)
        #expect(content.skipped.allSatisfy { $0.reason.contains("no boundary") }, "\(content.skipped)")
        #expect(Set(content.skipped.map(\.partfieldID)) == ["PFD-1", "PFD-2", "PFD-3", "PFD-4", "PFD-5", "PFD-6"])
        #expect(content.fields.map(\.name).contains("24 Concordia  2019"))
        #expect(content.fields.allSatisfy { $0.farm == "Betrieb Cesana" && $0.customer == "Betrieb Cesana" })
        // The software's own areas (PFD D, m²) agree with the boundaries' to a square metre or two.
        for field in content.fields where field.holes.isEmpty {
            let declared = try #require(field.declaredArea)
            #expect(
                abs(field.area - declared) <= max(2, declared * 1e-4),
                "\(field.name): \(field.area) m² against \(declared) m² declared")
        }
        let concordia = try #require(content.fields.first { $0.partfieldID == "PFD2" })
        #expect(abs(concordia.hectares - 14.1839) < 0.001, "\(concordia.hectares)")
        // "9 Test G-SDS 2019" gives its hole as a second type-1 polygon holding only an interior ring.
        // Its declared area is the outer ring's, before the hole.
        let withHole = try #require(content.fields.first { $0.partfieldID == "PFD9" })
        #expect(withHole.boundaries.count == 1)
        #expect(withHole.holes.count == 1)
        #expect(abs(withHole.area - (6745.2 - 455.4)) < 1, "\(withHole.area)")
        #expect(withHole.declaredArea == 6745)
        let total = content.fields.reduce(0) { $0 + $1.guidanceLines.count }
        #expect(total == 7, "guidance patterns of type 5")
        #expect(content.fields.first { $0.partfieldID == "PFD1" }?.guidanceLines.first?.name == "TestTrans_AB_2")
        #expect(elapsed < .seconds(2))
    }

    @Test("the Deutz-Fahr terminal's folder (ISOXML 4.2, external files): TESTFELD with its 34-point closed boundary")
    func deutz() throws {
        let (content, package) = try read(ISOXMLFixtures.deutzFolder)
        #expect(package.kind == .folder)
        let field = try #require(content.fields.first)
        #expect(content.fields.count == 1)
        #expect(field.name == "TESTFELD")
        #expect(field.farm == "Training Nutzer")
        #expect(field.customer == nil)
        // 34 points with the first repeated at the end: 33 distinct corners.
        #expect(field.boundaries[0].points.count == 33)
        #expect(field.declaredArea == 21_340)
        #expect(abs(field.area - 21_340) / 21_340 < 0.01, "\(field.area)")
    }

    @Test("geo-bird's ISOXML 3.3: an open ring is closed, and the v3 guidance line in the partfield is read")
    func geobirdVersion3() throws {
        let (content, package) = try read(ISOXMLFixtures.geobirdV3)
        #expect(package.kind == .xml)
        #expect(content.version == "3.3")
        let field = try #require(content.fields.first)
        #expect(field.name == "test")
        #expect(field.boundaries[0].points.count == 9)
        #expect(field.declaredArea == nil, "D=\"0\" means not given")
        #expect(field.hectares > 5 && field.hectares < 50, "\(field.hectares)")
        #expect(field.guidanceLines.count == 1)
        #expect(field.guidanceLines.first?.name == "Set_31024_test3")
        #expect(field.guidanceLines.first?.points.count == 2)
    }

    @Test("FarmDok's one-file ISOXML 4.3: Lagerfeld of farm Josephinum")
    func farmdoc() throws {
        let (content, _) = try read(ISOXMLFixtures.farmdocXML)
        let field = try #require(content.fields.first)
        #expect(field.name == "Lagerfeld")
        #expect(field.farm == "Josephinum")
        #expect(field.boundaries[0].points.count == 30)
        #expect(abs(field.area - 64_104) / 64_104 < 0.01, "\(field.area)")
    }

    @Test("a folder whose TASKDATA.XML lies in a TASKDATA subfolder, named in lower case")
    func nestedFolder() throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        _ = try scratch.write(
            "export/TASKDATA/taskdata.xml", Array(try Data(contentsOf: URL(fileURLWithPath: ISOXMLFixtures.farmdocXML)))
        )
        let (content, package) = try read(scratch.file("export"))
        #expect(package.kind == .folder)
        #expect(package.sourceName == "file: export")
        #expect(content.fields.map(\.name) == ["Lagerfeld"])
    }

    @Test("a zip made without deflate, TASKDATA.XML at its top in another case, reads the same")
    func storedZip() throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let xml = Array(try Data(contentsOf: URL(fileURLWithPath: ISOXMLFixtures.farmdocXML)))
        let zip = try scratch.write(
            "fields.zip", ZipMaker.archive([.stored("readme.txt", Array("hello".utf8)), .stored("TaskData.xml", xml)]))
        let (content, package) = try read(zip)
        #expect(package.kind == .zip)
        #expect(content.fields.map(\.name) == ["Lagerfeld"])
    }
}
