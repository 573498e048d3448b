import Foundation
import GNSS
import JSONText

/// `agrigps stats` printed: one line (or JSON object) per period, or per period and field.
public enum StatsReport {
    /// One period's figures; when they are split by field, `field` is the one they are of, nil for
    /// none (off every field, or without a fix).
    public struct Line: Sendable {
        public var period: String
        public var field: (id: Int64, name: String)?
        public var figures: WorkFigures

        public init(period: String, field: (id: Int64, name: String)? = nil, figures: WorkFigures) {
            (self.period, self.field, self.figures) = (period, field, figures)
        }
    }

    /// What the machine's figures are read with: the working width (metres; nil, no area), and
    /// whether the farm's fields are known, without which no time is road.
    public struct MachineTerms: Sendable, Equatable {
        public var width: Double?
        public var fieldsKnown: Bool

        public init(width: Double? = nil, fieldsKnown: Bool = false) {
            (self.width, self.fieldsKnown) = (width, fieldsKnown)
        }
    }

    /// Seconds on the road: moving, not working, off every field, when the fields are known.
    static func road(_ line: Line, byField: Bool, terms: MachineTerms) -> Double? {
        byField && line.field == nil && terms.fieldsKnown ? line.figures.secondsMovingIdle : nil
    }

    public static func text(
        _ periods: [(label: String, figures: WorkFigures)], by period: WorkLedger.Period,
        terms: MachineTerms = MachineTerms()
    ) -> [String] {
        text(periods.map { Line(period: $0.label, figures: $0.figures) }, by: period, byField: false, terms: terms)
    }

    public static func text(
        _ lines: [Line], by period: WorkLedger.Period, byField: Bool, terms: MachineTerms = MachineTerms()
    ) -> [String] {
        guard !lines.isEmpty else { return ["No track recorded in this time."] }
        // A machine whose bus and work switch never said anything keeps the receiver's table alone.
        let machine = lines.contains { $0.figures.hasMachine }
        let header =
            [period.rawValue] + (byField ? ["field"] : [])
            + [
                "fix h", "RTK fixed h", "RTK float h", "DGPS h", "autonomous h", "no fix min", "no receiver min",
                "moving h", "km", "samples",
            ] + (byField ? [] : ["sent", "acked", "lost"])
            + (machine
                ? ["working h", "not working h"] + (byField ? ["road h"] : [])
                    + (terms.width == nil ? [] : ["worked ha"])
                    + ["engine h", "fuel l"] : [])
        var rows = [header]
        for line in lines {
            let figures = line.figures
            var cells = [line.period]
            // Deliveries are counted per sample's day, not per place, so a field's line has none.
            if byField { cells.append(line.field.map { "\($0.name) (\($0.id))" } ?? "(no field)") }
            cells += [
                hours(figures.secondsWithFix), hours(figures.secondsByQuality[.rtkFixed] ?? 0),
                hours(figures.secondsByQuality[.rtkFloat] ?? 0), hours(figures.secondsByQuality[.dgps] ?? 0),
                hours(figures.secondsByQuality[.autonomous] ?? 0), minutes(figures.secondsWithoutFix),
                minutes(figures.secondsWithoutReceiver), hours(figures.secondsMoving),
                String(format: "%.1f", figures.metresDriven / 1000), String(figures.samples),
            ]
            if !byField { cells += [String(figures.sent), String(figures.acknowledged), String(figures.lost)] }
            if machine {
                cells += [hours(figures.secondsWorking), hours(figures.secondsNotWorking)]
                if byField { cells.append(road(line, byField: true, terms: terms).map(hours) ?? "") }
                if let width = terms.width {
                    cells.append(String(format: "%.2f", figures.hectaresWorked(width: width)))
                }
                cells += [hours(figures.secondsEngineRunning), String(format: "%.1f", figures.litresFuel)]
            }
            rows.append(cells)
        }
        let labels = byField ? 2 : 1
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return column < labels ? cell + pad : pad + cell  // labels left, figures right
            }.joined(separator: "  ")
        }
    }

    /// One object per period, seconds and metres unrounded.
    public static func json(
        _ periods: [(label: String, figures: WorkFigures)], by period: WorkLedger.Period,
        terms: MachineTerms = MachineTerms()
    ) -> String {
        json(periods.map { Line(period: $0.label, figures: $0.figures) }, by: period, byField: false, terms: terms)
    }

    /// With `byField`, each object has "field": {"id", "name"}, or null off every field.
    public static func json(
        _ lines: [Line], by period: WorkLedger.Period, byField: Bool, terms: MachineTerms = MachineTerms()
    ) -> String {
        var out = JSONWriter(numbers: .keepingPoint)
        out.object { document in
            document.field("by", period.rawValue)
            if byField { document.field("by_field", true) }
            document.array("periods", lines) { out, entry in
                out.object { write(entry, to: &$0, byField: byField, terms: terms) }
            }
        }
        return out.text
    }

    private static func write(_ entry: Line, to line: inout JSONWriter.Object, byField: Bool, terms: MachineTerms) {
        let figures = entry.figures
        line.field("period", entry.period)
        if byField {
            if let field = entry.field {
                line.object("field") { object in
                    object.field("id", Int(clamping: field.id))
                    object.field("name", field.name)
                }
            } else {
                line.nullable("field", nil as String?)
            }
        }
        line.field("seconds_with_fix", figures.secondsWithFix)
        line.object("seconds_by_quality") { qualities in
            for quality in WorkFigures.Quality.allCases {
                qualities.field(quality.rawValue, figures.secondsByQuality[quality] ?? 0)
            }
        }
        line.field("seconds_without_fix", figures.secondsWithoutFix)
        line.field("seconds_without_receiver", figures.secondsWithoutReceiver)
        line.field("seconds_moving", figures.secondsMoving)
        line.field("metres_driven", figures.metresDriven)
        line.field("samples", figures.samples)
        if !byField {
            line.field("samples_sent", figures.sent)
            line.field("samples_acknowledged", figures.acknowledged)
            line.field("samples_lost", figures.lost)
        }
        line.field("seconds_working", figures.secondsWorking)
        line.field("seconds_not_working", figures.secondsNotWorking)
        line.field("metres_working", figures.metresWorking)
        if byField { line.nullable("seconds_road", road(entry, byField: true, terms: terms)) }
        line.nullable("hectares_worked", terms.width.map { figures.hectaresWorked(width: $0) })
        line.nullable("seconds_engine_running", figures.secondsEngineRunning)
        line.nullable("litres_fuel", figures.litresFuel)
    }

    static func hours(_ seconds: Double) -> String { String(format: "%.2f", seconds / 3600) }
    static func minutes(_ seconds: Double) -> String { String(format: "%.0f", seconds / 60) }
}
