import Bounds
import Fields
import Foundation
import Track

/// This machine's own track split by the farm's fields: hours, hours moving and kilometres per
/// field per day, and a track cut to one field. Worked out when asked, from the track and the
/// fields as they are now, so the daemon writes nothing more per sample for it.
public struct FieldWork: Sendable {
    /// One field's (or no field's) figures on one local day.
    public struct Row: Sendable, Equatable {
        public var day: LocalDay
        /// Nil: off every field, or without a fix.
        public var field: StoredField?
        public var figures: WorkFigures
    }

    public let fields: [StoredField]
    private let index: FieldIndex<Int64>
    private let byID: [Int64: StoredField]

    public init(fields: [StoredField]) {
        self.fields = fields
        index = FieldIndex(fields.map { (value: $0.id, field: $0.field) })
        byID = Dictionary(fields.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The field a point lies in; nil without a fix or off every field.
    public func fieldID(of point: TrackPoint) -> Int64? {
        guard let coordinate = point.coordinate else { return nil }
        return index.field(containing: coordinate.latitude, longitude: coordinate.longitude)
    }

    /// The figures by day and field, days oldest first, fields by name, no field last.
    public func rows(_ points: [TrackPoint], calendar: Calendar, rules: TrackRules = TrackRules()) -> [Row] {
        let tally = PlaceTally.figures(points, calendar: calendar, rules: rules) { fieldID(of: $0) }
        let rows = tally.map { key, figures in
            Row(
                day: key.day, field: key.place.flatMap { byID[$0] },
                figures: key.place == nil ? figures : Self.unlessBrushed(figures))
        }
        return rows.sorted { left, right in
            if left.day != right.day { return left.day < right.day }
            switch (left.field, right.field) {
            case (nil, _): return false
            case (_, nil): return true
            case let (left?, right?):
                let order = left.field.name.localizedStandardCompare(right.field.name)
                return order == .orderedSame ? left.id < right.id : order == .orderedAscending
            }
        }
    }

    /// Less work than this in a field on a day (seconds) is a field brushed at its edge or crossed
    /// with the implement still down, not a field worked: its time counts as not working.
    public static let leastWork = 60.0

    static func unlessBrushed(_ figures: WorkFigures) -> WorkFigures {
        guard figures.secondsWorking < leastWork else { return figures }
        var figures = figures
        figures.secondsWorking = 0
        figures.metresWorking = 0
        return figures
    }

    /// Whether `point` lies in the field `id`: the test that cuts a track to it. Only that field's
    /// rings are asked, so a smaller field overlapping it does not take its points away.
    public func keep(only id: Int64) -> @Sendable (TrackPoint) -> Bool {
        let one = FieldIndex(fields.filter { $0.id == id }.map { (value: $0.id, field: $0.field) })
        return { point in
            guard let coordinate = point.coordinate else { return false }
            return one.field(containing: coordinate.latitude, longitude: coordinate.longitude) != nil
        }
    }

    /// The field a person named: its number (as `agrigps fields` lists it) or its name, in any case.
    public func field(named text: String) throws(FieldChoiceError) -> StoredField {
        let wanted = text.trimmingCharacters(in: .whitespaces)
        if let id = Int64(wanted), let field = byID[id] { return field }
        let matches = fields.filter {
            $0.field.name.compare(wanted, options: [.caseInsensitive, .diacriticInsensitive]) == .orderedSame
        }
        if matches.count == 1 { return matches[0] }
        if matches.isEmpty { throw .unknown(wanted, known: fields.count) }
        throw .ambiguous(wanted, ids: matches.map(\.id))
    }
}

/// A field a person named that is not one, or is several.
public enum FieldChoiceError: Error, Sendable, Equatable, CustomStringConvertible {
    case unknown(String, known: Int)
    case ambiguous(String, ids: [Int64])

    public var description: String {
        switch self {
        case .unknown(let name, let known) where known == 0:
            return
                "no field '\(TerminalText.safe(name))': no fields are stored; import the farm's with `agrigps fields import FILE`"
        case .unknown(let name, _):
            return "no field '\(TerminalText.safe(name))'; `agrigps fields` lists them with their numbers"
        case .ambiguous(let name, let ids):
            return "\(ids.count) fields are called '\(TerminalText.safe(name))'; give one of their numbers instead: "
                + ids.map(String.init).joined(separator: ", ")
        }
    }
}
