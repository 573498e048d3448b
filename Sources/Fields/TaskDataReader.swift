import Foundation

/// A partfield left out of an import, and why.
public struct SkippedField: Sendable, Equatable, CustomStringConvertible {
    public var partfieldID: String
    public var name: String
    public var reason: String

    public var description: String { "\(name) (\(partfieldID)): \(reason)" }
}

/// What a TaskData export holds for agrigps: its fields, and the partfields it could not use.
public struct TaskData: Sendable {
    /// VersionMajor.VersionMinor of the root element ("4.2"), if given.
    public var version: String?
    /// ManagementSoftwareManufacturer: which farm software wrote it.
    public var software: String?
    public var fields: [Field] = []
    public var skipped: [SkippedField] = []
}

/// Reads fields from ISO 11783-10 TaskData (ISOXML), versions 3 and 4.
///
/// What is read, by element and attribute letter:
/// - `PFD` partfield: A id, C designator (the name), D area in m², E customer (CTR) ref, F farm (FRM) ref.
/// - `PLN` polygon in a partfield: A type. 1 (partfield boundary) gives the field's outline;
///   3 water surface, 4 building, 5 road and 6 obstacle are not field, so they are cut out as holes.
///   2 (treatment zone), 7 (flag), 8 (other) and the v4 types 9–12 (mainfield, headland, buffer
///   zone, windbreak) lie on or overlap the field and neither make nor cut it, so they are skipped.
/// - `LSG` line string: A type. In a boundary polygon 1 is an outer ring and 2 a hole; in an
///   obstacle polygon its outer ring is the hole. 5 (guidance pattern) in a `GPN` (v4, within a
///   `GGP`) or straight in the `PFD` (v3) is a guidance line.
/// - `PNT` point: C north (latitude), D east (longitude), decimal degrees on WGS84.
/// - `FRM` farm and `CTR` customer: A id, B designator (for a customer the last name; C the first).
/// - `XFR` external file reference (v4): A file name without ".XML", B type (1, XML). Only files
///   holding partfields, farms and customers are opened.
struct TaskDataReader {
    private let limits: TaskDataLimits
    private var result = TaskData()
    private var farms: [String: String] = [:]
    private var customers: [String: String] = [:]
    private var pending: [PendingField] = []
    private var pointsKept = 0
    private var partfields = 0

    init(limits: TaskDataLimits) {
        self.limits = limits
    }

    /// Every field of the export in `package`, farm and customer names resolved.
    static func read(_ package: inout TaskDataPackage, limits: TaskDataLimits = TaskDataLimits()) throws(FieldsError)
        -> TaskData
    {
        var reader = TaskDataReader(limits: limits)
        let external = try reader.parse(try package.main(), fileName: package.mainName, root: "ISO11783_TaskData")
        guard external.count <= limits.maximumExternalFiles else {
            throw FieldsError(
                .tooLarge,
                "\(package.mainName) refers to \(external.count) files, more than the \(limits.maximumExternalFiles) read"
            )
        }
        // External files are named by the standard after the elements they hold (PFD00000 holds
        // partfields), so only those with fields, farms and customers need opening; a file named
        // twice is read once.
        var opened: Set<String> = []
        for name in external
        where ["PFD", "FRM", "CTR"].contains(name.prefix(3).uppercased()) && opened.insert(name.uppercased()).inserted {
            guard let bytes = try package.sibling(name + ".XML") else {
                throw FieldsError(
                    .unreadable,
                    "\(package.mainName) refers to \(name).XML, which is not beside it; copy the whole export, not TASKDATA.XML alone"
                )
            }
            _ = try reader.parse(bytes, fileName: name + ".XML", root: "XFC")
        }
        return reader.finish()
    }

    /// Fields from one XML text: TASKDATA.XML (its external files not followed), or one external
    /// file whose root is XFC.
    static func read(
        xml bytes: [UInt8], fileName: String = "TASKDATA.XML", root: String = "ISO11783_TaskData",
        limits: TaskDataLimits = TaskDataLimits()
    ) throws(FieldsError) -> TaskData {
        var reader = TaskDataReader(limits: limits)
        _ = try reader.parse(bytes, fileName: fileName, root: root)
        return reader.finish()
    }

    // MARK: - Parsing

    /// A partfield as read so far.
    private struct PendingField {
        var id: String
        var name: String
        var declaredArea: Double?
        var customerRef: String?
        var farmRef: String?
        var boundaries: [Ring] = []
        var holes: [Ring] = []
        var guidance: [GuidanceLine] = []
        var problem: String?
    }

    /// What a line string being read will become.
    private enum LineRole {
        case outer, hole, guidance(name: String?), ignored
    }

    /// Parses one file; returns the external files it names (XFR), for the root file.
    private mutating func parse(_ bytes: [UInt8], fileName: String, root: String) throws(FieldsError) -> [String] {
        var scanner = try XMLScanner(bytes, fileName: fileName, limits: limits)
        var external: [String] = []
        var field: PendingField?
        var polygonType: Int?
        var polygonPoints = 0
        var polygonNumber = 0
        var role: LineRole?
        var points: [GeoPoint] = []
        var patternName: String?
        var first = true
        var events = 0
        while let event = try scanner.next() {
            // A shutdown need not wait for a large export to be read to its end.
            events &+= 1
            if events & 0xFFF == 0, Task.isCancelled {
                throw FieldsError(.interrupted, "reading \(fileName) was stopped for a shutdown; nothing was changed")
            }
            switch event {
            case let .start(name, attributes, position):
                let path = scanner.path
                let parent = path.count >= 2 ? path[path.count - 2] : nil
                func value(_ letter: String) -> String? { attributes.first { $0.name == letter }?.value }
                if first {
                    first = false
                    guard name == root else {
                        throw FieldsError(
                            .invalidData,
                            "\(fileName) starts with <\(name)> where <\(root)> belongs; it is not ISO 11783-10 TaskData"
                        )
                    }
                    if name == "ISO11783_TaskData" {
                        result.version =
                            both(value("VersionMajor"), value("VersionMinor")).map { "\($0).\($1)" } ?? result.version
                        result.software = value("ManagementSoftwareManufacturer") ?? result.software
                    }
                    continue
                }
                // Partfields, farms and customers are children of the root; anything of the same
                // name deeper down (inside a task, say) is something else.
                if path.count == 2 {
                    switch name {
                    case "PFD":
                        partfields += 1
                        guard partfields <= limits.maximumFields else {
                            throw FieldsError(
                                .tooLarge,
                                "\(fileName) has more than \(limits.maximumFields) partfields, more than any farm's; "
                                    + "export the farm's fields only, or fewer at a time")
                        }
                        let id = value("A") ?? "PFD#\(result.fields.count + pending.count + result.skipped.count + 1)"
                        let designator = value("C").flatMap {
                            $0.trimmingCharacters(in: .whitespaces).isEmpty ? nil : $0
                        }
                        field = PendingField(
                            id: id, name: designator ?? id,
                            declaredArea: value("D").flatMap(Self.decimal).flatMap(Self.plausibleArea),
                            customerRef: value("E"), farmRef: value("F"))
                        polygonNumber = 0
                    case "FRM":
                        if let id = value("A"), let designator = value("B") { farms[id] = designator }
                    case "CTR":
                        if let id = value("A") {
                            let name = [value("C"), value("B")].compactMap { $0 }.filter { !$0.isEmpty }.joined(
                                separator: " ")
                            if !name.isEmpty { customers[id] = name }
                        }
                    case "XFR":
                        // B 1 is XML; other kinds (binary) hold nothing read here.
                        if let file = value("A"), value("B") ?? "1" == "1" { external.append(file) }
                    default:
                        break
                    }
                    continue
                }
                guard field != nil, path.count >= 3, path[1] == "PFD" else { continue }
                switch name {
                case "PLN" where parent == "PFD":
                    polygonType = value("A").flatMap { Int($0) }
                    polygonPoints = 0
                    polygonNumber += 1
                case "LSG":
                    let type = value("A").flatMap { Int($0) }
                    switch (parent, polygonType, type) {
                    case ("PLN"?, 1?, 1?): role = .outer
                    case ("PLN"?, 1?, 2?): role = .hole
                    case ("PLN"?, (3...6)?, 1?): role = .hole
                    case ("GPN"?, _, 5?): role = .guidance(name: patternName ?? value("B"))
                    case ("PFD"?, _, 5?): role = .guidance(name: value("B"))
                    default: role = .ignored
                    }
                    // A pattern's line lies in PFD > GGP > GPN > LSG at the deepest; one deeper
                    // belongs to something else.
                    if case .guidance = role, path.count > 5 { role = .ignored }
                    points = []
                case "GPN" where parent == "GGP":
                    patternName = value("B").flatMap { $0.isEmpty ? nil : $0 }
                case "PNT" where parent == "LSG":
                    guard let role, !Self.isIgnored(role) else { continue }
                    try addPoint(value, to: &points, field: &field, role: role, position: position, fileName: fileName)
                    if case .guidance = role {
                    } else {
                        polygonPoints += 1
                        if polygonPoints > limits.maximumPointsPerPolygon, let current = field {
                            throw FieldsError(
                                .tooLarge,
                                "field '\(current.name)' (\(current.id)): polygon \(polygonNumber) has more than "
                                    + "\(limits.maximumPointsPerPolygon) points; simplify the boundary in the farm software"
                            )
                        }
                    }
                default:
                    break
                }
            case let .end(name):
                let depth = scanner.path.count  // the element just closed is no longer on the path
                if depth == 1, name == "PFD", let done = field {
                    pending.append(done)
                    field = nil
                    continue
                }
                guard field != nil else { continue }
                switch name {
                case "LSG":
                    defer {
                        role = nil
                        points = []
                    }
                    guard let current = role else { continue }
                    switch current {
                    case .outer:
                        if let ring = Ring(closing: points) {
                            field?.boundaries.append(ring)
                        } else if field?.problem == nil {
                            field?.problem =
                                "its boundary (polygon \(polygonNumber)) has \(Set(points).count) distinct point\(Set(points).count == 1 ? "" : "s"); "
                                + "a ring needs at least 3"
                        }
                    case .hole:
                        // A degenerate hole has no area to cut out; the field stands without it.
                        if let ring = Ring(closing: points) { field?.holes.append(ring) }
                    case let .guidance(name):
                        if !points.isEmpty { field?.guidance.append(GuidanceLine(name: name, points: points)) }
                    case .ignored:
                        break
                    }
                case "PLN":
                    polygonType = nil
                case "GPN":
                    patternName = nil
                default:
                    break
                }
            }
        }
        return external
    }

    private static func isIgnored(_ role: LineRole) -> Bool {
        if case .ignored = role { return true }
        return false
    }

    /// A point checked: both coordinates present, numbers, and on the globe. A point the field
    /// cannot be drawn without is an error naming the field; the import stops before anything is
    /// stored, so no field is half right.
    private mutating func addPoint(
        _ value: (String) -> String?, to points: inout [GeoPoint], field: inout PendingField?,
        role: LineRole, position: TextPosition, fileName: String
    ) throws(FieldsError) {
        guard let current = field else { return }
        let place = "field '\(current.name)' (\(current.id)), \(fileName) \(position)"
        guard let north = value("C"), let east = value("D") else {
            // v4 lets points live in a binary file (PNT J and K) instead of C and D.
            if value("J") != nil {
                if field?.problem == nil {
                    field?.problem = "its points are in a binary file (PNT with J), which is not read yet"
                }
                return
            }
            throw FieldsError(
                .invalidData,
                "\(place): a point without \(value("C") == nil ? "latitude (C)" : "longitude (D)"); correct the field in the farm software and export again"
            )
        }
        guard let latitude = Self.decimal(north), latitude.isFinite, (-90...90).contains(latitude) else {
            throw FieldsError(
                .invalidData,
                "\(place): latitude \(Self.quoted(north)) is not a number from -90 to 90; correct the field in the farm software and export again"
            )
        }
        guard let longitude = Self.decimal(east), longitude.isFinite, (-180...180).contains(longitude) else {
            throw FieldsError(
                .invalidData,
                "\(place): longitude \(Self.quoted(east)) is not a number from -180 to 180; correct the field in the farm software and export again"
            )
        }
        pointsKept += 1
        guard pointsKept <= limits.maximumPoints else {
            throw FieldsError(
                .tooLarge,
                "the export has more than \(limits.maximumPoints) points in its fields; import fewer fields at a time")
        }
        points.append(GeoPoint(latitude: latitude, longitude: longitude))
    }

    /// Points of a hole tried against the outline.
    static let holeSample = 32

    /// Up to `count` points spread evenly along `points`, the first among them.
    static func spread(_ points: [GeoPoint], count: Int) -> [GeoPoint] {
        guard points.count > count else { return points }
        return (0..<count).map { points[$0 * points.count / count] }
    }

    /// The first ring of the field that cannot be used, said as the reason it is skipped.
    private static func ringProblem(_ field: PendingField) -> String? {
        for (index, ring) in field.boundaries.enumerated() {
            if let problem = RingCheck.problem(ring) {
                return "its boundary\(field.boundaries.count > 1 ? " \(index + 1)" : ""): \(problem)"
            }
        }
        for (index, ring) in field.holes.enumerated() {
            if let problem = RingCheck.problem(ring) { return "its hole \(index + 1): \(problem)" }
        }
        return nil
    }

    /// A coordinate as ISO 11783-10 writes it (xs:decimal, an exponent tolerated): digits, one
    /// point, a sign. Swift's own parser would also take hexadecimal ("0x1p5" is 32), "inf" and "nan".
    static func decimal(_ text: String) -> Double? {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 64 else { return nil }
        var digits = 0
        var sawPoint = false
        var sawExponent = false
        var previous: UInt8 = 0
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
            case UInt8(ascii: "."):
                guard !sawPoint, !sawExponent else { return nil }
                sawPoint = true
            case UInt8(ascii: "e"), UInt8(ascii: "E"):
                guard digits > 0, !sawExponent else { return nil }
                sawExponent = true
            case UInt8(ascii: "+"), UInt8(ascii: "-"):
                guard previous == 0 || previous == UInt8(ascii: "e") || previous == UInt8(ascii: "E") else {
                    return nil
                }
            default: return nil
            }
            previous = byte
        }
        guard digits > 0 else { return nil }
        return Double(text)
    }

    /// File text quoted in a message: printable, and short.
    static func quoted(_ text: String) -> String {
        let kept = text.prefix(40).unicodeScalars.map {
            $0.properties.generalCategory == .control || $0.value == 0x7F ? "?" : String($0)
        }.joined()
        return kept + (text.count > 40 ? "…" : "")
    }

    /// PFD D is a whole number of m² (0 to 4,294,967,294 by the standard); 0 means "not given".
    private static func plausibleArea(_ area: Double) -> Double? {
        area.isFinite && area > 0 && area <= 4_294_967_294 ? area : nil
    }

    /// Farm and customer names resolved, and each partfield kept or put aside with its reason.
    private mutating func finish() -> TaskData {
        for pending in pending {
            if let problem = pending.problem {
                result.skipped.append(SkippedField(partfieldID: pending.id, name: pending.name, reason: problem))
                continue
            }
            guard !pending.boundaries.isEmpty else {
                result.skipped.append(
                    SkippedField(
                        partfieldID: pending.id, name: pending.name,
                        reason: "it has no boundary (no polygon of type 1 with an outer ring)"))
                continue
            }
            if let problem = Self.ringProblem(pending) {
                result.skipped.append(SkippedField(partfieldID: pending.id, name: pending.name, reason: problem))
                continue
            }
            // A hole counts only inside the field's outline: one outside would take area it never had.
            // Judged by a few of its points spread along it, so the check costs the outline's points
            // times a constant, not times the hole's points.
            let holes = pending.holes.filter { hole in
                let sample = Self.spread(hole.points, count: Self.holeSample)
                let inside = sample.filter { point in pending.boundaries.contains { $0.contains(point) } }.count
                return inside * 2 > sample.count
            }
            result.fields.append(
                Field(
                    partfieldID: pending.id, name: pending.name, farm: pending.farmRef.flatMap { farms[$0] },
                    customer: pending.customerRef.flatMap { customers[$0] }, declaredArea: pending.declaredArea,
                    boundaries: pending.boundaries, holes: holes, guidanceLines: pending.guidance))
        }
        return result
    }
}

/// Both values, or nil if either is missing.
private func both<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
