import GNSS
import Testing

@Suite("Distance and bearing")
struct GeodesyTests {
    @Test("one degree of longitude on the equator, due east")
    func equator() {
        let origin = Coordinate(latitude: 0, longitude: 0)
        #expect(abs(origin.distance(to: Coordinate(latitude: 0, longitude: 1)) - 111_195.08) < 0.01)
        #expect(origin.bearing(to: Coordinate(latitude: 0, longitude: 1)) == 90)
        #expect(origin.bearing(to: Coordinate(latitude: -1, longitude: 0)) == 180)
        #expect(origin.bearing(to: Coordinate(latitude: 0, longitude: -1)) == 270)
    }

    @Test("London to New York, and a tractor next door")
    func knownPairs() {
        let london = Coordinate(latitude: 51.5007, longitude: -0.1246)
        let newYork = Coordinate(latitude: 40.6892, longitude: -74.0445)
        #expect(abs(london.distance(to: newYork) / 1000 - 5574.85) < 0.01)
        #expect(abs(london.bearing(to: newYork) - 288.34) < 0.01)
        let field = Coordinate(latitude: 52, longitude: 8)
        #expect(abs(field.distance(to: Coordinate(latitude: 52.006, longitude: 8.009)) - 908.12) < 0.01)
        #expect(field.distance(to: field) == 0)
    }

    @Test(
        "compass points",
        arguments: [
            (0.0, "N"), (22.4, "N"), (22.6, "NE"), (90, "E"), (200, "S"), (337.6, "N"), (359.9, "N"), (315, "NW"),
        ])
    func compass(bearing: Double, point: String) {
        #expect(Coordinate.compassPoint(bearing) == point)
    }
}
