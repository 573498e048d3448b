#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The ranges agrigps accepts for numbers that enter from outside: gpsd, agrirouter, other
/// machines, the configuration, flags, and its own files read back. A value outside them is
/// refused where it enters, with a reason, instead of travelling on until a conversion traps.
public enum Bounds {
    /// WGS84 degrees.
    public static let latitude: ClosedRange<Double> = -90...90
    public static let longitude: ClosedRange<Double> = -180...180
    /// Metres. Below the Dead Sea shore (−430 m) with margin for geoid and receiver error, up to the
    /// edge of space: a tractor's receiver reports nothing outside this unless it is broken.
    public static let altitude: ClosedRange<Double> = -1_000...100_000
    /// Dilution of precision. gpsd writes 99.99 for "unknown"; anything above is nonsense.
    public static let dop: ClosedRange<Double> = 0...100
    /// Satellites used in a fix: every GNSS constellation together has fewer than 200.
    public static let satellites: ClosedRange<Int> = 0...255
    /// Metres per second over ground; faster than any aircraft a receiver would be legal in.
    public static let speed: ClosedRange<Double> = 0...600
    /// Degrees from true north.
    public static let track: ClosedRange<Double> = 0...360
    /// Seconds since 1970 that can be a real time: from the GPS epoch (1980-01-06) to 2200. Protobuf
    /// timestamps, stored times and gpsd times outside this are refused, not converted.
    public static let epochSeconds: ClosedRange<Double> = 315_964_800...7_258_118_400
    /// Seconds an age or a skew can be, either way: a century. Beyond that a stored value is damaged.
    public static let duration: ClosedRange<Double> = -3_155_760_000...3_155_760_000
    /// A count kept in a file of ours (dropped samples, refusals).
    public static let count: ClosedRange<Double> = 0...1e15

    /// `value` if it is finite and inside `range`, else nil.
    @inlinable
    public static func check(_ value: Double, in range: ClosedRange<Double>) -> Double? {
        value.isFinite && range.contains(value) ? value : nil
    }

    /// A time from seconds since 1970, if it lies in `epochSeconds`.
    public static func date(secondsSince1970 seconds: Double) -> Date? {
        check(seconds, in: epochSeconds).map(Date.init(timeIntervalSince1970:))
    }

    /// A time from whole seconds and nanoseconds (a protobuf Timestamp), if both are in range.
    /// Converting INT64_MIN seconds to a Date directly traps; here it is refused.
    public static func date(seconds: Int64, nanos: Int32) -> Date? {
        guard (0..<1_000_000_000).contains(nanos), Double(seconds) >= epochSeconds.lowerBound,
            Double(seconds) <= epochSeconds.upperBound
        else { return nil }
        return Date(timeIntervalSince1970: Double(seconds) + Double(nanos) / 1e9)
    }

    /// A whole number for a double, rounded toward zero and clamped to `range`; nil for NaN. Never
    /// traps, whatever the double (±inf included): the one conversion from Double to Int here.
    public static func clamped(_ value: Double, to range: ClosedRange<Int>) -> Int? {
        guard !value.isNaN else { return nil }
        if value >= Double(range.upperBound) { return range.upperBound }
        if value <= Double(range.lowerBound) { return range.lowerBound }
        return Int(value)
    }

    /// A whole number for a double, rounded toward zero and clamped to Int's range; nil for NaN.
    /// For showing and counting numbers that have already been range-checked: it never traps.
    public static func whole(_ value: Double) -> Int? {
        clamped(value, to: Int.min...Int.max)
    }

    /// A count read back from a file: a whole number from 0 to 10^15, else nil.
    public static func count(_ value: Double) -> Int? {
        check(value, in: count).flatMap(whole)
    }
}

/// A value from outside that agrigps refuses, and why; the reason names the field and what it allows.
public struct OutOfBounds: Error, Sendable, Equatable, CustomStringConvertible {
    public var field: String
    public var reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public init(field: String, value: Double, allowed: ClosedRange<Double>) {
        self.init(
            field: field,
            reason:
                "\(Bounds.show(value)) is outside \(Bounds.show(allowed.lowerBound)) to \(Bounds.show(allowed.upperBound))"
        )
    }

    public var description: String { "\(field): \(reason)" }
}

extension Bounds {
    /// `value` checked against `range`, or an `OutOfBounds` naming `field`.
    public static func require(_ value: Double, in range: ClosedRange<Double>, field: String) throws(OutOfBounds)
        -> Double
    {
        guard let checked = check(value, in: range) else {
            throw OutOfBounds(field: field, value: value, allowed: range)
        }
        return checked
    }

    /// A number as a person reads it in an error: short, whatever its size ("1e+300", "-inf", "91").
    public static func show(_ value: Double) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int(value)) }
        let text = "\(value)"
        return text.count <= 24 ? text : String(text.prefix(24))
    }
}
