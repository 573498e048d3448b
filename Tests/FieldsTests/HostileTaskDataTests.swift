import Foundation
import TestSupport
import Testing

@testable import Fields

private let square = [(48.0, 15.0), (48.0, 15.01), (48.01, 15.01), (48.01, 15.0)]

private func parse(_ text: String, limits: TaskDataLimits = TaskDataLimits()) throws(FieldsError) -> TaskData {
    try TaskDataReader.read(xml: Array(text.utf8), limits: limits)
}

/// The FieldsError `body` throws; nil (and the test's #require fails) if it throws none or another.
private func failure(_ body: () throws -> Void) -> FieldsError? {
    do {
        try body()
        return nil
    } catch {
        return error as? FieldsError
    }
}

@Suite("hostile and broken TaskData")
struct HostileTaskDataTests {
    @Test("a DOCTYPE with an external entity is refused before anything in it is read")
    func doctypeWithEntity() throws {
        let text = """
            <?xml version="1.0"?>
            <!DOCTYPE ISO11783_TaskData [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
            <ISO11783_TaskData VersionMajor="4"><PFD A="PFD1" C="&xxe;"/></ISO11783_TaskData>
            """
        let error = try #require(failure { _ = try parse(text) })
        #expect(error.kind == .malformedXML)
        #expect(error.description.contains("<!DOCTYPE declaration is refused"), "\(error)")
        #expect(error.description.contains("line 2, column 1"), "\(error)")
    }

    @Test("an entity reference without any declaration is refused, not left or expanded")
    func undeclaredEntity() throws {
        let error = try #require(failure { _ = try parse(TaskDataText.document(#"<FRM A="FRM1" B="&lol9;"/>"#)) })
        #expect(error.kind == .malformedXML)
        #expect(error.description.contains("&lol9;"), "\(error)")
        // The predefined ones and numeric references are text.
        let content = try parse(
            TaskDataText.document(
                TaskDataText.partfield("PFD1", "Kurze &amp; Lange &#x2013; &lt;1&gt; &#228;", ring: square)))
        #expect(content.fields.first?.name == "Kurze & Lange – <1> ä")
    }

    @Test("malformed XML says where: an unclosed element, a mismatched end tag, a second root")
    func malformed() throws {
        let cut = try #require(
            failure { _ = try parse("<?xml version=\"1.0\"?>\n<ISO11783_TaskData>\n  <PFD A=\"PFD1\">\n") })
        #expect(cut.kind == .malformedXML)
        #expect(cut.description.contains("never closed"), "\(cut)")
        let crossed = try #require(
            failure { _ = try parse("<ISO11783_TaskData>\n<PFD A=\"1\">\n</PLN></ISO11783_TaskData>") })
        #expect(crossed.description.contains("line 3, column 1"), "\(crossed)")
        let twice = try #require(failure { _ = try parse("<ISO11783_TaskData/><ISO11783_TaskData/>") })
        #expect(twice.description.contains("second root"), "\(twice)")
        let unquoted = try #require(failure { _ = try parse("<ISO11783_TaskData A=1/>") })
        #expect(unquoted.description.contains("not in quotes"), "\(unquoted)")
    }

    @Test("nesting and size are capped")
    func caps() throws {
        let deep =
            "<ISO11783_TaskData>" + String(repeating: "<A>", count: 100) + String(repeating: "</A>", count: 100)
            + "</ISO11783_TaskData>"
        let tooDeep = try #require(failure { _ = try parse(deep) })
        #expect(tooDeep.kind == .tooLarge)
        #expect(tooDeep.description.contains("nest more than 32"), "\(tooDeep)")

        var small = TaskDataLimits()
        small.maximumXMLBytes = 1_000
        let big = TaskDataText.document("<!--" + String(repeating: "x", count: 2_000) + "-->")
        let tooBig = try #require(failure { _ = try parse(big, limits: small) })
        #expect(tooBig.kind == .tooLarge)

        var fewPoints = TaskDataLimits()
        fewPoints.maximumPointsPerPolygon = 3
        let tooMany = try #require(
            failure {
                _ = try parse(
                    TaskDataText.document(TaskDataText.partfield("PFD1", "Big", ring: square)), limits: fewPoints)
            })
        #expect(tooMany.kind == .tooLarge)
        #expect(tooMany.description.contains("'Big'"), "\(tooMany)")
    }

    struct BadPoint: Sendable, CustomStringConvertible {
        var latitude: String
        var longitude: String
        var named: String
        var description: String { "\(latitude), \(longitude)" }
    }

    @Test(
        "a coordinate off the globe, or not a number, stops the import naming the field",
        arguments: [
            BadPoint(latitude: "95.5", longitude: "15.0", named: "latitude 95.5"),
            BadPoint(latitude: "48.0", longitude: "-180.5", named: "longitude -180.5"),
            BadPoint(latitude: "nan", longitude: "15.0", named: "latitude nan"),
            BadPoint(latitude: "48,1", longitude: "15", named: "latitude 48,1"),
        ])
    func outOfRange(point: BadPoint) throws {
        let (latitude, longitude, named) = (point.latitude, point.longitude, point.named)
        let ring = TaskDataText.partfield("PFD7", "Hinterer Acker", ring: square)
            .replacingOccurrences(of: #"C="48.01" D="15.0""#, with: #"C="\#(latitude)" D="\#(longitude)""#)
        let error = try #require(failure { _ = try parse(TaskDataText.document(ring)) })
        #expect(error.kind == .invalidData)
        #expect(error.description.contains("field 'Hinterer Acker' (PFD7)"), "\(error)")
        #expect(error.description.contains(named), "\(error)")
    }

    @Test("an open ring is closed; a ring of fewer than 3 distinct points skips its field with the reason")
    func rings() throws {
        let open = try parse(TaskDataText.document(TaskDataText.partfield("PFD1", "Open", ring: square)))
        let closed = try parse(
            TaskDataText.document(TaskDataText.partfield("PFD1", "Closed", ring: square + [square[0]])))
        #expect(open.fields.count == 1)
        #expect(open.fields[0].boundaries[0].points.count == 4)
        #expect(open.fields[0].area == closed.fields[0].area)

        let degenerate = [(48.0, 15.0), (48.0, 15.01), (48.0, 15.01), (48.0, 15.0)]
        let content = try parse(
            TaskDataText.document(
                TaskDataText.partfield("PFD1", "Line", ring: degenerate)
                    + TaskDataText.partfield("PFD2", "Good", ring: square)))
        #expect(content.fields.map(\.name) == ["Good"])
        #expect(content.skipped.count == 1)
        #expect(content.skipped.first?.partfieldID == "PFD1")
        #expect(content.skipped.first?.reason.contains("2 distinct points") == true, "\(content.skipped)")
    }

    @Test("a zip bomb that declares its size is refused unopened; one that lies is stopped while inflating")
    func zipBombs() throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        var limits = TaskDataLimits()
        limits.maximumXMLBytes = 1 << 20
        let zeros = ZipMaker.deflatedZeros(8 << 20)
        #expect(zeros.count < 70_000)
        let honest = ZipMaker.Entry(
            name: "TASKDATA/TASKDATA.XML", data: zeros, method: 8, crc: 0, uncompressedSize: 8 << 20)
        let declared = try scratch.write("declared.zip", ZipMaker.archive([honest]))
        let refused = try #require(
            failure {
                var package = try TaskDataPackage(path: declared, limits: limits)
                _ = try package.main()
            })
        #expect(refused.kind == .tooLarge)
        #expect(refused.description.contains("declares 8388608 bytes"), "\(refused)")

        var liar = honest
        liar.uncompressedSize = 2_000
        let lying = try scratch.write("lying.zip", ZipMaker.archive([liar]))
        let stopped = try #require(
            failure {
                var package = try TaskDataPackage(path: lying, limits: limits)
                _ = try package.main()
            })
        #expect(stopped.kind == .tooLarge)
        #expect(stopped.description.contains("inflates to more than the 2000 bytes"), "\(stopped)")
    }

    @Test("an entry declaring 2 GB is refused at once, without reading or allocating it")
    func twoGigabytes() throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let entry = ZipMaker.Entry(
            name: "TASKDATA/TASKDATA.XML", data: Array(repeating: 0, count: 16), method: 8, crc: 0,
            uncompressedSize: 2_147_483_648)
        let path = try scratch.write("huge.zip", ZipMaker.archive([entry]))
        let started = ContinuousClock.now
        let error = try #require(
            failure {
                var package = try TaskDataPackage(path: path)
                _ = try package.main()
            })
        #expect(ContinuousClock.now - started < .seconds(1))
        #expect(error.kind == .tooLarge)
        #expect(error.description.contains("declares 2147483648 bytes"), "\(error)")
        #expect(error.description.contains("refused unopened"), "\(error)")
    }

    @Test("a damaged archive, one without TASKDATA.XML, and a missing external file each say so")
    func damagedArchives() throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let xml = Array(TaskDataText.document(TaskDataText.partfield("PFD1", "A", ring: square)).utf8)
        var bad = ZipMaker.Entry.stored("TASKDATA/TASKDATA.XML", xml)
        bad.crc ^= 1
        let crcPath = try scratch.write("crc.zip", ZipMaker.archive([bad]))
        let crc = try #require(
            failure {
                var package = try TaskDataPackage(path: crcPath)
                _ = try package.main()
            })
        #expect(crc.kind == .archive)
        #expect(crc.description.contains("CRC-32"), "\(crc)")

        let nonePath = try scratch.write("none.zip", ZipMaker.archive([.stored("notes.txt", Array("x".utf8))]))
        let none = try #require(failure { _ = try TaskDataPackage(path: nonePath) })
        #expect(none.description.contains("no TASKDATA.XML"), "\(none)")

        let truncated = try scratch.write(
            "cut.zip", Array(try Data(contentsOf: URL(fileURLWithPath: ISOXMLFixtures.farmFactsZip)).prefix(4_000)))
        let cut = try #require(failure { _ = try TaskDataPackage(path: truncated) })
        #expect(cut.kind == .archive)

        let root =
            #"<?xml version="1.0"?><ISO11783_TaskData VersionMajor="4"><XFR A="PFD00000" B="1"/></ISO11783_TaskData>"#
        let lonely = try scratch.write("lonely/TASKDATA.XML", root)
        let missing = try #require(
            failure {
                var package = try TaskDataPackage(path: lonely)
                _ = try TaskDataReader.read(&package)
            })
        #expect(missing.kind == .unreadable)
        #expect(missing.description.contains("PFD00000.XML"), "\(missing)")
    }
}
