import Foundation
import TestSupport
import Testing

@testable import Fields

/// A cycle of a few points repeated `count` points long: what a hostile export needs to make a
/// quadratic check take minutes, in a zip of a few kilobytes.
private func repeatingCycle(_ count: Int, around centre: (Double, Double), size: Double) -> [(Double, Double)] {
    let cycle = [
        (centre.0 - size, centre.1 - size), (centre.0 - size, centre.1 + size), (centre.0 + size, centre.1 + size),
        (centre.0 + size, centre.1 - size),
    ]
    return (0..<count).map { cycle[$0 % cycle.count] }
}

/// `count` points on a circle: a boundary logged densely, as RTK guidance records them.
private func circle(_ count: Int, around centre: (Double, Double), radius: Double) -> [(Double, Double)] {
    (0..<count).map { index in
        let angle = 2 * Double.pi * Double(index) / Double(count)
        return (centre.0 + radius * sin(angle), centre.1 + radius * 1.5 * cos(angle))
    }
}

private func parse(_ body: String, limits: TaskDataLimits = TaskDataLimits()) throws(FieldsError) -> TaskData {
    try TaskDataReader.read(xml: Array(TaskDataText.document(body).utf8), limits: limits)
}

@Suite("TaskData costs what its size allows, and a ring that cannot be a field says why", .timeLimit(.minutes(2)))
struct BoundedTaskDataTests {
    private static let square = [(48.0, 15.0), (48.0, 15.01), (48.01, 15.01), (48.01, 15.0)]

    @Test(
        "a 100,000-point boundary that repeats one cycle, with a 99,999-point hole, is skipped with its reason in linear time"
    )
    func repeatingCycleIsSkipped() throws {
        let body =
            TaskDataText.partfield(
                "PFD1", "Loop", ring: repeatingCycle(100_000, around: (48.0, 15.0), size: 0.001),
                holes: [repeatingCycle(99_999, around: (48.0, 15.0), size: 0.0005)])
            + TaskDataText.partfield("PFD2", "Good", ring: Self.square)
        let content = try parse(body)
        #expect(content.fields.map(\.name) == ["Good"])
        let skipped = try #require(content.skipped.first)
        #expect(skipped.reason.contains("passes through the same point twice (points 1 and 5 of 100000)"), "\(skipped)")
    }

    @Test("a dense 100,000-point boundary with a 99,999-point hole inside is read whole, its area right")
    func denseRingsAreKept() throws {
        let body = TaskDataText.partfield(
            "PFD1", "Dense", ring: circle(100_000, around: (48.0, 15.0), radius: 0.01),
            holes: [circle(99_999, around: (48.0, 15.0), radius: 0.002)])
        let content = try parse(body)
        let field = try #require(content.fields.first)
        #expect(field.holes.count == 1, "the hole lies inside, so it is cut out")
        #expect(field.boundaries[0].points.count == 100_000)
        // An ellipse of 0.01° by 0.015° at 48° N, less one a fifth of its size: π·a·b·(1 − 0.04).
        let a = 0.01 * 111_132.0, b = 0.015 * 111_320.0 * cos(48.0 * .pi / 180)
        let expected = Double.pi * a * b * 0.96
        #expect(abs(field.area - expected) / expected < 0.01, "\(field.area) m² against \(expected)")
    }

    @Test("a bow tie is skipped as crossing itself, not kept as 0 ha")
    func bowTie() throws {
        let bowTie = [(48.0, 15.0), (48.01, 15.01), (48.0, 15.01), (48.01, 15.0)]
        let content = try parse(
            TaskDataText.partfield("PFD1", "Bow", ring: bowTie)
                + TaskDataText.partfield("PFD2", "Good", ring: Self.square))
        #expect(content.fields.map(\.name) == ["Good"])
        #expect(
            content.skipped.first?.reason.contains("crosses or touches itself (edges 1 and 3 of 4)") == true,
            "\(content.skipped)")
    }

    @Test("a ring that doubles back on itself is skipped")
    func doublingBack() throws {
        let spike = [(48.0, 15.0), (48.0, 15.01), (48.0, 15.02), (48.0, 15.015), (48.01, 15.0)]
        let content = try parse(TaskDataText.partfield("PFD1", "Spike", ring: spike))
        #expect(content.fields.isEmpty)
        #expect(content.skipped.first?.reason.contains("crosses or touches itself") == true, "\(content.skipped)")
    }

    @Test("a ring round the globe, or wider than a farm, is skipped with its span")
    func wholeGlobe() throws {
        let globe =
            stride(from: -180.0, to: 180.0, by: 10).map { (10.0, $0) }
            + stride(from: 180.0, to: -180.0, by: -10).map { (20.0, $0) }
        let wide = [(48.0, 15.0), (48.0, 16.0), (48.01, 16.0), (48.01, 15.0)]
        let content = try parse(
            TaskDataText.partfield("PFD1", "Globe", ring: globe) + TaskDataText.partfield("PFD2", "Wide", ring: wide))
        #expect(content.fields.isEmpty)
        #expect(content.skipped.count == 2)
        #expect(
            content.skipped.allSatisfy { $0.reason.contains("km, more than the 50 km a field can be") },
            "\(content.skipped)")
    }

    @Test("a hole that crosses itself skips its field; one outside the boundary is left out")
    func holes() throws {
        let bowTieHole = [(48.002, 15.002), (48.004, 15.004), (48.002, 15.004), (48.004, 15.002)]
        let outside = [(49.0, 15.0), (49.0, 15.001), (49.001, 15.001), (49.001, 15.0)]
        let content = try parse(
            TaskDataText.partfield("PFD1", "Crossed", ring: Self.square, holes: [bowTieHole])
                + TaskDataText.partfield("PFD2", "Outside", ring: Self.square, holes: [outside]))
        #expect(content.fields.map(\.name) == ["Outside"])
        #expect(content.fields.first?.holes.isEmpty == true)
        #expect(
            content.skipped.first?.reason.hasPrefix("its hole 1: it crosses or touches itself") == true,
            "\(content.skipped)")
    }

    @Test(
        "coordinates in hexadecimal, infinity or with a trailing sign are refused; decimals with an exponent are read",
        arguments: ["0x1p5", "inf", "+48.0-", "4.8e", "48..0", "--48", "0x30"])
    func notDecimal(_ text: String) throws {
        let ring = TaskDataText.partfield("PFD1", "Hex", ring: Self.square).replacingOccurrences(
            of: #"C="48.01" D="15.0""#, with: #"C="\#(text)" D="15.0""#)
        do {
            _ = try parse(ring)
            Issue.record("\(text) was taken as a number")
        } catch {
            #expect(error.kind == .invalidData)
            #expect(error.description.contains("latitude \(text) is not a number"), "\(error)")
        }
        #expect(TaskDataReader.decimal("4.801e1") == 48.01)
        #expect(TaskDataReader.decimal("-.5") == -0.5)
    }

    @Test("a refusal quotes the file's text printable and short, never its raw bytes")
    func quotedSafely() throws {
        let ring = TaskDataText.partfield("PFD1", "Odd", ring: Self.square)
            .replacingOccurrences(of: #"C="48.01" D="15.0""#, with: #"C="48&#x85;[2J&#x9;" D="15.0""#)
        do {
            _ = try parse(ring)
            Issue.record("a control character was taken")
        } catch {
            #expect(!error.description.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(error)")
            #expect(error.description.contains("latitude 48?[2J? is not a number"), "\(error)")
        }
    }

    @Test("more partfields than any farm has are refused with the cap, before their points are kept")
    func tooManyFields() throws {
        var limits = TaskDataLimits()
        limits.maximumFields = 50
        let body = (1...51).map { #"<PFD A="PFD\#($0)" C="F\#($0)"/>"# }.joined()
        do {
            _ = try parse(body, limits: limits)
            Issue.record("51 partfields were read")
        } catch {
            #expect(error.kind == .tooLarge)
            #expect(error.description.contains("more than 50 partfields"), "\(error)")
        }
        #expect(TaskDataLimits().maximumFields == 5_000)
        #expect(
            try parse(
                (1...50).map { TaskDataText.partfield("PFD\($0)", "F\($0)", ring: Self.square) }.joined(),
                limits: limits
            ).fields.count == 50)
    }

    @Test("ten thousand external files in a 65,000-entry zip are found by name, not by a scan each")
    func manyExternalFiles() throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let count = 10_000
        let references = (0..<count).map { #"<XFR A="FRM\#(String(format: "%05d", $0))" B="1"/>"# }.joined()
        var entries = [
            ZipMaker.Entry.stored(
                "TASKDATA/TASKDATA.XML",
                Array(
                    TaskDataText.document(
                        references
                            + TaskDataText.partfield("PFD1", "Home", ring: Self.square).replacingOccurrences(
                                of: #"D="0">"#, with: #"D="0" F="FRM09999">"#)
                    ).utf8))
        ]
        for index in 0..<count {
            let name = String(format: "FRM%05d", index)
            entries.append(
                .stored("TASKDATA/\(name).XML", Array(#"<XFC><FRM A="\#(name)" B="Farm \#(index)"/></XFC>"#.utf8)))
        }
        for index in 0..<55_000 { entries.append(.stored("TASKDATA/LOG/TLG\(index).BIN", [0])) }
        let zip = try scratch.write("many.zip", ZipMaker.archive(entries))
        let started = ContinuousClock.now
        var package = try TaskDataPackage(path: zip)
        let content = try TaskDataReader.read(&package)
        #expect(content.fields.first?.farm == "Farm 9999")
        print("10,000 external files in a 65,001-entry zip read in \(ContinuousClock.now - started)")
    }

    @Test("TASKDATA.XML uploaded twice replaces itself, and a refusal names the upload, not a folder of the box")
    func uploadedTwice() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let store = FieldStore(path: scratch.file("fields.sqlite"))
        let text = Data(TaskDataText.document(TaskDataText.partfield("PFD1", "Upper", ring: Self.square)).utf8)
        let first = try await store.importTaskData(bytes: text, named: "TASKDATA.XML")
        let second = try await store.importTaskData(bytes: text, named: "TASKDATA.XML")
        #expect(first.source == "file: TASKDATA.XML" && second.source == first.source)
        #expect(second.replaced == 1)
        #expect(try await store.fields().map(\.field.name) == ["Upper"])
        do {
            _ = try await store.importTaskData(bytes: Data("<ISO11783_TaskData>".utf8), named: "TASKDATA.XML")
            Issue.record("a cut file was imported")
        } catch {
            #expect(error.description.hasPrefix("TASKDATA.XML"), "\(error)")
            #expect(
                !error.description.contains(scratch.path) && !error.description.contains("fields-upload"), "\(error)")
        }
    }
}
