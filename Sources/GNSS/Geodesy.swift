import Foundation

/// A point on the WGS84 ellipsoid, in degrees.
public struct Coordinate: Sendable, Equatable, Codable {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// The mean Earth radius (IUGG). A sphere is within 0.5 % of the ellipsoid, which is plenty for
    /// telling which tractor is nearer.
    static let earthRadius = 6_371_008.8

    /// Great-circle distance in metres (haversine, which stays accurate for a few metres apart).
    public func distance(to other: Coordinate) -> Double {
        let φ1 = latitude * .pi / 180, φ2 = other.latitude * .pi / 180
        let Δφ = φ2 - φ1, Δλ = (other.longitude - longitude) * .pi / 180
        let a = sin(Δφ / 2) * sin(Δφ / 2) + cos(φ1) * cos(φ2) * sin(Δλ / 2) * sin(Δλ / 2)
        return 2 * Self.earthRadius * atan2(a.squareRoot(), (1 - a).squareRoot())
    }

    /// Initial bearing towards `other`, degrees clockwise from true north in [0, 360).
    public func bearing(to other: Coordinate) -> Double {
        let φ1 = latitude * .pi / 180, φ2 = other.latitude * .pi / 180
        let Δλ = (other.longitude - longitude) * .pi / 180
        let y = sin(Δλ) * cos(φ2)
        let x = cos(φ1) * sin(φ2) - sin(φ1) * cos(φ2) * cos(Δλ)
        let degrees = atan2(y, x) * 180 / .pi
        return (degrees + 360).truncatingRemainder(dividingBy: 360)
    }

    /// The nearest of the 8 compass points for a bearing: N, NE, E, …
    public static func compassPoint(_ bearing: Double) -> String {
        let points = ["N", "NE", "E", "SE", "S", "SW", "W", "NW"]
        guard bearing.isFinite else { return "?" }
        let index = Int((bearing.truncatingRemainder(dividingBy: 360) / 45).rounded()) % 8
        return points[(index + 8) % 8]
    }
}
