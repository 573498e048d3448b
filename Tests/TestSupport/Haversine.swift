import Foundation

/// Great-circle distance in metres, written out here rather than taken from the code under test, so
/// that the tests check distances against a sum they compute themselves.
public func independentHaversine(_ a: (latitude: Double, longitude: Double), _ b: (latitude: Double, longitude: Double))
    -> Double
{
    let rad = Double.pi / 180
    let h =
        pow(sin((b.latitude - a.latitude) * rad / 2), 2)
        + cos(a.latitude * rad) * cos(b.latitude * rad) * pow(sin((b.longitude - a.longitude) * rad / 2), 2)
    return 2 * 6_371_008.8 * asin(min(1, h.squareRoot()))
}
