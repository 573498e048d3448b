import Bounds
import Foundation
import GNSS
import StateDirectory

/// The other machines as `agrigps others` lists them: seen from our own last fix, filtered and sorted.
public struct OthersListing: Sendable {
    public enum Order: String, Sendable, CaseIterable {
        case distance, name, age
    }

    public struct Entry: Sendable, Equatable {
        public var machine: OtherMachine
        /// Metres from our last fix; nil when either position is unknown.
        public var distance: Double?
        public var bearing: Double?
        /// Seconds since anything was received from it; nil if nothing ever was.
        public var age: Double?
    }

    public var entries: [Entry]
    /// Left out because they are stale, gone or silent (shown with `includeStale`).
    public var hiddenInactive: Int
    /// Left out by `near` because their distance is unknown.
    public var hiddenUnlocated: Int

    public init(
        view: OthersView, ownPosition: Coordinate?, now: Date, near: Double? = nil,
        order: Order = .distance, includeStale: Bool = false
    ) {
        var all = view.machines.map { machine in
            let distance = both(ownPosition, machine.coordinate).map { $0.distance(to: $1) }
            return Entry(
                machine: machine, distance: distance,
                bearing: both(ownPosition, machine.coordinate).map { $0.bearing(to: $1) },
                age: machine.lastReceivedAt.map { now.timeIntervalSince($0) })
        }
        let inactive = all.filter { $0.machine.activity != .active }.count
        if !includeStale { all.removeAll { $0.machine.activity != .active } }
        hiddenInactive = includeStale ? 0 : inactive
        var unlocated = 0
        if let near {
            unlocated = all.filter { $0.distance == nil }.count
            all.removeAll { ($0.distance ?? .infinity) > near }
        }
        hiddenUnlocated = unlocated
        entries = all.sorted(by: Self.ordering(order))
    }

    /// Unknown values sort last; ties fall back to the name, then the endpoint id, so output is stable.
    private static func ordering(_ order: Order) -> (Entry, Entry) -> Bool {
        func label(_ entry: Entry) -> String {
            (entry.machine.name ?? "\u{10FFFF}") + "\u{0}" + entry.machine.endpointID
        }
        func key(_ entry: Entry) -> Double {
            switch order {
            case .distance: return entry.distance ?? .infinity
            case .age: return entry.age ?? .infinity
            case .name: return 0
            }
        }
        return { left, right in
            let (a, b) = (key(left), key(right))
            return a != b ? a < b : label(left).localizedStandardCompare(label(right)) == .orderedAscending
        }
    }
}

/// A direction as `agrigps others` and the cab view both write it: "NE 52°".
public enum BearingText {
    /// Whole degrees clockwise from north in 0..<360 (359.6 is 0, -1 is 359); nil for a value that
    /// is no direction.
    public static func wholeDegrees(_ degrees: Double) -> Int? {
        guard degrees.isFinite, let whole = Bounds.whole(degrees.rounded()) else { return nil }
        return (whole % 360 + 360) % 360
    }

    /// The compass point and the whole degrees; "unknown" for a value that is no direction.
    public static func format(degrees: Double) -> String {
        guard let whole = wholeDegrees(degrees) else { return "unknown" }
        return "\(Coordinate.compassPoint(degrees)) \(whole)°"
    }
}

/// A distance as a person types it: "500m", "2 km", "1.5mi", or a bare number of metres.
public enum DistanceText {
    public enum ParseError: Error, Equatable, CustomStringConvertible {
        case empty
        case notANumber(String)
        case negative(String)
        case unknownUnit(String, unit: String)

        public var description: String {
            switch self {
            case .empty: return "a distance is needed, e.g. 500m or 2km"
            case .notANumber(let text):
                return "'\(text)' is not a distance; write a number and a unit, e.g. 500m or 2km"
            case .negative(let text): return "'\(text)' is negative; a distance must be 0 or more"
            case .unknownUnit(let text, let unit):
                return "unknown unit '\(unit)' in '\(text)'; use m, km or mi (e.g. 500m, 2km)"
            }
        }
    }

    static let units: [String: Double] = ["": 1, "m": 1, "km": 1000, "mi": 1609.344]

    /// Metres.
    public static func metres(_ text: String) throws(ParseError) -> Double {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw .empty }
        let numberPart = trimmed.prefix { "+-0123456789.eE".contains($0) }
        let unit = trimmed.dropFirst(numberPart.count).trimmingCharacters(in: .whitespaces).lowercased()
        guard let number = Double(numberPart), number.isFinite else { throw .notANumber(text) }
        guard let scale = units[unit] else {
            if unit.contains(where: \.isNumber) || unit.isEmpty { throw .notANumber(text) }
            throw .unknownUnit(text, unit: unit)
        }
        guard number >= 0 else { throw .negative(text) }
        return number * scale
    }

    /// "850 m", "1.2 km", "35 km"; "unknown" for a value that is no distance.
    public static func format(metres: Double) -> String {
        guard metres.isFinite, metres >= 0 else { return "unknown" }
        if metres < 1000 { return "\(Bounds.whole(metres.rounded()) ?? 0) m" }
        if metres < 10_000 { return String(format: "%.1f km", metres / 1000) }
        return "\(Bounds.whole((metres / 1000).rounded()) ?? 0) km"
    }
}

/// "45 s", "12 min", "3 h", "2 d". A negative age (a clock set back) reads 0 s; one that is not a
/// number reads "unknown"; a huge one is clamped, never a trap.
public func durationText(_ seconds: Double) -> String {
    guard !seconds.isNaN else { return "unknown" }
    let seconds = max(0, seconds)
    func whole(_ value: Double) -> Int { Bounds.whole(value.rounded()) ?? 0 }
    if seconds < 120 { return "\(whole(seconds)) s" }
    if seconds < 7200 { return "\(whole(seconds / 60)) min" }
    if seconds < 2 * 86400 { return "\(whole(seconds / 3600)) h" }
    return "\(whole(seconds / 86400)) d"
}
