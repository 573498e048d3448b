import Foundation
import Testing

@testable import Fields

private let a = 6_378_137.0
private let f = 1 / 298.257223563
private let e2 = f * (2 - f)
private let radians = Double.pi / 180

private func ring(_ points: [(Double, Double)]) -> Ring {
    Ring(closing: points.map { GeoPoint(latitude: $0.0, longitude: $0.1) })!
}

/// The area between two parallels over one radian of longitude, by Simpson's rule over the
/// ellipsoid's area element M·N·cos φ (meridional and prime-vertical radii of curvature): no
/// authalic latitude, no closed form.
private func zoneArea(from south: Double, to north: Double, steps: Int = 2_000) -> Double {
    func element(_ phi: Double) -> Double {
        let w = 1 - e2 * sin(phi) * sin(phi)
        let m = a * (1 - e2) / pow(w, 1.5)
        let n = a / w.squareRoot()
        return m * n * cos(phi)
    }
    let h = (north - south) * radians / Double(steps)
    var sum = element(south * radians) + element(north * radians)
    for index in 1..<steps { sum += element(south * radians + Double(index) * h) * (index % 2 == 1 ? 4 : 2) }
    return sum * h / 3
}

/// A polygon's area by another road: every vertex to Earth-centred coordinates, then onto the plane
/// tangent to the ellipsoid at the first vertex, and the plane's shoelace. Over a few km the tangent
/// plane and the ellipsoid differ in area by parts in 10⁸.
private func tangentPlaneArea(_ points: [(Double, Double)]) -> Double {
    func ecef(_ latitude: Double, _ longitude: Double) -> (Double, Double, Double) {
        let (phi, lambda) = (latitude * radians, longitude * radians)
        let n = a / (1 - e2 * sin(phi) * sin(phi)).squareRoot()
        return (n * cos(phi) * cos(lambda), n * cos(phi) * sin(lambda), n * (1 - e2) * sin(phi))
    }
    let (phi0, lambda0) = (points[0].0 * radians, points[0].1 * radians)
    let origin = ecef(points[0].0, points[0].1)
    let east = (-sin(lambda0), cos(lambda0), 0.0)
    let north = (-sin(phi0) * cos(lambda0), -sin(phi0) * sin(lambda0), cos(phi0))
    let plane = points.map { point -> (Double, Double) in
        let p = ecef(point.0, point.1)
        let d = (p.0 - origin.0, p.1 - origin.1, p.2 - origin.2)
        return (d.0 * east.0 + d.1 * east.1 + d.2 * east.2, d.0 * north.0 + d.1 * north.1 + d.2 * north.2)
    }
    var twice = 0.0
    for index in plane.indices {
        let (p, q) = (plane[index], plane[(index + 1) % plane.count])
        twice += p.0 * q.1 - q.0 * p.1
    }
    return abs(twice / 2)
}

@Suite("areas on the ellipsoid and which field a position lies in")
struct GeometryTests {
    @Test(
        "a 3 by 3 km block between parallels: the equal-area sum matches a numeric integration",
        arguments: [0.0, 48.0, -33.9, 69.5])
    func block(latitude: Double) {
        let (south, north, west, east) = (latitude, latitude + 0.027, 15.0, 15.0 + 0.027 / cos(latitude * radians))
        let expected = zoneArea(from: south, to: north) * (east - west) * radians
        let computed = ring([(south, west), (south, east), (north, east), (north, west)]).area
        #expect(abs(computed - expected) / expected < 1e-7, "\(computed) m² against \(expected) m²")
    }

    @Test(
        "irregular fields up to a few km: within 0.01 % of the tangent-plane area",
        arguments: [
            [(48.1255, 15.1447), (48.1271, 15.1530), (48.1290, 15.1510), (48.1288, 15.1489), (48.1302, 15.1460)],
            [(45.528, 9.575), (45.5277, 9.5956), (45.54, 9.60), (45.552, 9.59), (45.55, 9.58), (45.54, 9.585)],
            [(-34.60, -58.40), (-34.62, -58.38), (-34.63, -58.41), (-34.61, -58.43)],
        ])
    func irregular(points: [(Double, Double)]) {
        let computed = ring(points).area
        let expected = tangentPlaneArea(points)
        #expect(abs(computed - expected) / expected < 1e-4, "\(computed) m² against \(expected) m²")
    }

    /// True geodesic areas (edges along geodesics) from GeographicLib 2.1's Polygon.Compute on WGS84,
    /// an implementation of Karney's algorithms, independent of this one.
    @Test(
        "within 0.01 % of GeographicLib's geodesic areas",
        arguments: [
            ([(52.0, 10.0), (52.0, 10.073), (52.045, 10.073), (52.045, 10.0)], 25_090_230.799),
            (
                [(45.528, 9.575), (45.5277, 9.5956), (45.54, 9.60), (45.552, 9.59), (45.55, 9.58), (45.54, 9.585)],
                3_145_488.250
            ),
            // "24 Concordia  2019" of the FarmFacts fixture, whose stated area is 141,837 m².
            (
                [
                    (44.922842849, 11.008286487), (44.916917162, 11.004263173), (44.916689159, 11.006641843),
                    (44.923020024, 11.011147959),
                ], 141_837.248
            ),
        ])
    func geodesic(points: [(Double, Double)], expected: Double) {
        let computed = ring(points).area
        #expect(abs(computed - expected) / expected < 1e-4, "\(computed) m² against \(expected) m²")
    }

    @Test("a field across 180° has the area of the same field elsewhere")
    func antimeridian() {
        let across = ring([(-17.0, 179.99), (-17.0, -179.99), (-16.99, -179.99), (-16.99, 179.99)])
        let inside = ring([(-17.0, 10.0), (-17.0, 10.02), (-16.99, 10.02), (-16.99, 10.0)])
        #expect(abs(across.area - inside.area) / inside.area < 1e-9)
        let index = FieldIndex(fields: [Field(partfieldID: "F", name: "Taveuni", boundaries: [across])])
        #expect(index.field(containing: -16.995, longitude: 179.995)?.name == "Taveuni")
        #expect(index.field(containing: -16.995, longitude: -179.995)?.name == "Taveuni")
        #expect(index.field(containing: -16.995, longitude: 179.98) == nil)
    }

    @Test("a position in the field, in its hole, outside it; the smaller of two overlapping fields wins")
    func lookup() {
        let outer = ring([(48.0, 15.0), (48.0, 15.02), (48.02, 15.02), (48.02, 15.0)])
        let hole = ring([(48.008, 15.008), (48.008, 15.012), (48.012, 15.012), (48.012, 15.008)])
        let pond = Field(partfieldID: "PFD1", name: "Am Teich", boundaries: [outer], holes: [hole])
        let corner = Field(
            partfieldID: "PFD2", name: "Ecke",
            boundaries: [ring([(48.015, 15.015), (48.015, 15.03), (48.03, 15.03), (48.03, 15.015)])])
        let index = FieldIndex(fields: [pond, corner])
        #expect(index.field(containing: 48.002, longitude: 15.002)?.name == "Am Teich")
        #expect(index.field(containing: 48.01, longitude: 15.01) == nil, "in the pond")
        #expect(index.field(containing: 48.05, longitude: 15.01) == nil)
        #expect(index.field(containing: 48.018, longitude: 15.018)?.name == "Ecke", "in both: the smaller")
        #expect(index.field(containing: .nan, longitude: 15.01) == nil)
        #expect(abs(pond.area - (outer.area - hole.area)) < 1e-6)
    }

    @Test("a concave field: the notch is outside it")
    func concave() {
        // A U: the notch in the middle of the north side.
        let u = ring([
            (48.0, 15.0), (48.0, 15.03), (48.02, 15.03), (48.02, 15.02), (48.005, 15.02), (48.005, 15.01),
            (48.02, 15.01), (48.02, 15.0),
        ])
        let index = FieldIndex(fields: [Field(partfieldID: "U", name: "U", boundaries: [u])])
        #expect(index.field(containing: 48.015, longitude: 15.015) == nil)
        #expect(index.field(containing: 48.015, longitude: 15.005)?.name == "U")
        #expect(index.field(containing: 48.002, longitude: 15.015)?.name == "U")
    }

    @Test("a lookup costs little: 100 fields, 20,000 positions")
    func cost() {
        var fields: [Field] = []
        for row in 0..<10 {
            for column in 0..<10 {
                let (lat, lon) = (48 + Double(row) * 0.01, 15 + Double(column) * 0.01)
                let points = (0..<200).map { step -> (Double, Double) in
                    let angle = Double(step) / 200 * 2 * .pi
                    return (lat + 0.004 * sin(angle), lon + 0.004 * cos(angle))
                }
                fields.append(
                    Field(partfieldID: "\(row)-\(column)", name: "\(row)-\(column)", boundaries: [ring(points)]))
            }
        }
        let index = FieldIndex(fields: fields)
        let started = ContinuousClock.now
        var found = 0
        for sample in 0..<20_000 {
            let t = Double(sample) / 20_000
            if index.field(
                containing: 47.995 + t * 0.1, longitude: 14.995 + (t * 37).truncatingRemainder(dividingBy: 1) * 0.1)
                != nil
            {
                found += 1
            }
        }
        let elapsed = ContinuousClock.now - started
        print("20,000 lookups among 100 fields of 200 points: \(elapsed), \(found) inside")
        #expect(found > 0)
        // A debug build on a busy two-core machine: far above the tens of microseconds a lookup takes.
        #expect(elapsed < .seconds(5))
    }
}
