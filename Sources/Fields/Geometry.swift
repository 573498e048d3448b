import Foundation

/// A point on the WGS84 ellipsoid, in decimal degrees, as ISOXML gives it (PNT's C and D).
public struct GeoPoint: Sendable, Hashable, Codable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    public var isValid: Bool {
        latitude.isFinite && longitude.isFinite && (-90...90).contains(latitude) && (-180...180).contains(longitude)
    }
}

/// A closed ring of at least three distinct points, kept without the closing repeat of the first.
public struct Ring: Sendable, Hashable {
    public let points: [GeoPoint]

    /// The ring made from a line string as exported: the closing point dropped (ISOXML v3 leaves it
    /// out, v4 repeats it), repeated neighbours merged. Nil with fewer than three distinct points.
    public init?(closing points: [GeoPoint]) {
        var kept: [GeoPoint] = []
        kept.reserveCapacity(points.count)
        for point in points where kept.last != point { kept.append(point) }
        while kept.count > 1, kept.first == kept.last { kept.removeLast() }
        guard Set(kept).count >= 3 else { return nil }
        self.points = kept
    }

    /// The area it encloses on the ellipsoid, in square metres.
    public var area: Double { abs(Ellipsoid.signedArea(points)) }
}

/// A line to drive along, from a guidance pattern (GPN, or an LSG of type 5 in v3).
public struct GuidanceLine: Sendable, Hashable {
    public var name: String?
    public var points: [GeoPoint]

    public init(name: String?, points: [GeoPoint]) {
        self.name = name
        self.points = points
    }
}

/// A field as the farm software knows it: an ISOXML partfield (PFD) with its boundary.
public struct Field: Sendable, Hashable {
    /// The partfield's id in its file (PFD A, "PFD1"); unique within one export only.
    public var partfieldID: String
    /// What the farmer calls it (PFD C), else its id.
    public var name: String
    public var farm: String?
    public var customer: String?
    /// The area the file states (PFD D), in square metres, unchecked against the boundary.
    public var declaredArea: Double?
    /// The outer rings (PLN type 1, LSG type 1); a field may have more than one part.
    public var boundaries: [Ring]
    /// What is not field inside them: interior rings, water, buildings, roads, obstacles.
    public var holes: [Ring]
    public var guidanceLines: [GuidanceLine]

    public init(
        partfieldID: String, name: String, farm: String? = nil, customer: String? = nil, declaredArea: Double? = nil,
        boundaries: [Ring], holes: [Ring] = [], guidanceLines: [GuidanceLine] = []
    ) {
        self.partfieldID = partfieldID
        self.name = name
        self.farm = farm
        self.customer = customer
        self.declaredArea = declaredArea
        self.boundaries = boundaries
        self.holes = holes
        self.guidanceLines = guidanceLines
    }

    /// The area inside the boundaries less the holes, in square metres, on the WGS84 ellipsoid.
    public var area: Double { max(0, boundaries.reduce(0) { $0 + $1.area } - holes.reduce(0) { $0 + $1.area }) }

    public var hectares: Double { area / 10_000 }

    /// Points of the boundaries and holes (guidance lines aside).
    public var pointCount: Int { (boundaries + holes).reduce(0) { $0 + $1.points.count } }
}

/// The WGS84 ellipsoid and areas on it.
///
/// A ring's area comes from the ellipsoid's cylindrical equal-area map: longitude against the
/// authalic quantity q(φ). That map keeps areas exactly, so the shoelace sum over the mapped
/// vertices is the ellipsoidal area of the ring whose edges are straight on the map. True geodesic
/// edges bow away from those by centimetres over a field's few hundred metres; for a 3 km edge at
/// 45° the difference is about 0.005 % of the field, well inside the 0.1 % wanted.
public enum Ellipsoid {
    public static let semiMajorAxis = 6_378_137.0
    public static let flattening = 1 / 298.257223563
    static let eccentricitySquared = flattening * (2 - flattening)
    static let eccentricity = eccentricitySquared.squareRoot()

    /// The authalic quantity q(φ): the ellipsoid's area from the equator to latitude φ, per radian
    /// of longitude, is a²·q(φ)/2.
    static func q(_ latitude: Double) -> Double {
        let sine = sin(latitude)
        let eSine = eccentricity * sine
        return (1 - eccentricitySquared)
            * (sine / (1 - eSine * eSine) - log((1 - eSine) / (1 + eSine)) / (2 * eccentricity))
    }

    /// Signed area in square metres, positive when the ring runs anticlockwise seen from above.
    /// Longitudes are taken relative to the first point, so a field across 180° is not torn apart.
    public static func signedArea(_ points: [GeoPoint]) -> Double {
        guard points.count >= 3 else { return 0 }
        let radians = Double.pi / 180
        let origin = points[0]
        let qOrigin = q(origin.latitude * radians)
        // Relative coordinates keep the differences that matter (a few 1e-4) clear of rounding.
        let mapped = points.map { point in
            (x: wrappedDegrees(point.longitude - origin.longitude) * radians, y: q(point.latitude * radians) - qOrigin)
        }
        var twice = 0.0
        for index in mapped.indices {
            let (a, b) = (mapped[index], mapped[(index + 1) % mapped.count])
            twice += a.x * b.y - b.x * a.y
        }
        return twice / 2 * semiMajorAxis * semiMajorAxis / 2
    }

    /// A longitude difference brought into -180..<180.
    static func wrappedDegrees(_ difference: Double) -> Double {
        var value = difference.truncatingRemainder(dividingBy: 360)
        if value >= 180 { value -= 360 }
        if value < -180 { value += 360 }
        return value
    }
}

/// Which field a position lies in, asked once per sample: every field's bounding box first, then
/// ray casting against its rings (outer rings in, holes out) for the few whose box holds the point.
public struct FieldIndex<Value: Sendable>: Sendable {
    private struct Entry: Sendable {
        var value: Value
        var area: Double
        /// Longitudes are kept relative to this one, so a field across 180° has one box.
        var referenceLongitude: Double
        var minimum: (latitude: Double, longitude: Double)
        var maximum: (latitude: Double, longitude: Double)
        var boundaries: [[(x: Double, y: Double)]]
        var holes: [[(x: Double, y: Double)]]
    }

    private let entries: [Entry]

    /// Where fields overlap, the smaller one is found: it is the more particular.
    public init(_ items: [(value: Value, field: Field)]) {
        entries = items.compactMap { value, field in
            guard let reference = field.boundaries.first?.points.first?.longitude else { return nil }
            func unwrap(_ ring: Ring) -> [(x: Double, y: Double)] {
                ring.points.map { (x: reference + Ellipsoid.wrappedDegrees($0.longitude - reference), y: $0.latitude) }
            }
            let boundaries = field.boundaries.map(unwrap)
            let all = boundaries.joined()
            guard let minX = all.map(\.x).min(), let maxX = all.map(\.x).max(),
                let minY = all.map(\.y).min(), let maxY = all.map(\.y).max()
            else { return nil }
            return Entry(
                value: value, area: field.area, referenceLongitude: reference, minimum: (minY, minX),
                maximum: (maxY, maxX),
                boundaries: boundaries, holes: field.holes.map(unwrap))
        }.sorted { $0.area < $1.area }
    }

    public var count: Int { entries.count }

    /// The field the point lies in, or nil. A point exactly on an edge may fall either way.
    public func field(containing latitude: Double, longitude: Double) -> Value? {
        guard latitude.isFinite, longitude.isFinite else { return nil }
        for entry in entries {
            guard latitude >= entry.minimum.latitude, latitude <= entry.maximum.latitude else { continue }
            let x = entry.referenceLongitude + Ellipsoid.wrappedDegrees(longitude - entry.referenceLongitude)
            guard x >= entry.minimum.longitude, x <= entry.maximum.longitude else { continue }
            guard entry.boundaries.contains(where: { ringContains(x, latitude, $0) }) else { continue }
            if entry.holes.contains(where: { ringContains(x, latitude, $0) }) { continue }
            return entry.value
        }
        return nil
    }
}

extension FieldIndex where Value == Field {
    /// An index of bare fields.
    public init(fields: [Field]) {
        self.init(fields.map { (value: $0, field: $0) })
    }
}

/// Crossing number: a ray from the point eastwards crosses the ring an odd number of times.
func ringContains(_ x: Double, _ y: Double, _ ring: [(x: Double, y: Double)]) -> Bool {
    var inside = false
    var previous = ring[ring.count - 1]
    for current in ring {
        if (current.y > y) != (previous.y > y) {
            let crossing = previous.x + (y - previous.y) * (current.x - previous.x) / (current.y - previous.y)
            if x < crossing { inside.toggle() }
        }
        previous = current
    }
    return inside
}

extension Ring {
    /// Whether the point lies inside; longitudes are taken relative to the ring's first point, so
    /// a ring across 180° works too. For drawing (which hole belongs to which boundary), not lookup.
    public func contains(_ point: GeoPoint) -> Bool {
        guard let reference = points.first?.longitude else { return false }
        let ring = points.map { (x: reference + Ellipsoid.wrappedDegrees($0.longitude - reference), y: $0.latitude) }
        return ringContains(reference + Ellipsoid.wrappedDegrees(point.longitude - reference), point.latitude, ring)
    }
}
