import Foundation
import GNSS

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
        let objects = lines.map { entry in
            let figures = entry.figures
            var line = JSONLine()
            line.add("period", entry.period)
            if byField {
                if let field = entry.field {
                    var object = JSONLine()
                    object.add("id", Int(clamping: field.id))
                    object.add("name", field.name)
                    line.add("field", json: object.text)
                } else {
                    line.add("field", json: "null")
                }
            }
            line.add("seconds_with_fix", figures.secondsWithFix)
            var qualities = JSONLine()
            for quality in WorkFigures.Quality.allCases {
                qualities.add(quality.rawValue, figures.secondsByQuality[quality] ?? 0)
            }
            line.add("seconds_by_quality", json: qualities.text)
            line.add("seconds_without_fix", figures.secondsWithoutFix)
            line.add("seconds_without_receiver", figures.secondsWithoutReceiver)
            line.add("seconds_moving", figures.secondsMoving)
            line.add("metres_driven", figures.metresDriven)
            line.add("samples", figures.samples)
            if !byField {
                line.add("samples_sent", figures.sent)
                line.add("samples_acknowledged", figures.acknowledged)
                line.add("samples_lost", figures.lost)
            }
            line.add("seconds_working", figures.secondsWorking)
            line.add("seconds_not_working", figures.secondsNotWorking)
            line.add("metres_working", figures.metresWorking)
            if byField { line.add("seconds_road", road(entry, byField: true, terms: terms)) }
            line.add("hectares_worked", terms.width.map { figures.hectaresWorked(width: $0) })
            line.add("seconds_engine_running", figures.secondsEngineRunning)
            line.add("litres_fuel", figures.litresFuel)
            return line.text
        }
        return "{\"by\":\(JSONLine.quote(period.rawValue)),\(byField ? "\"by_field\":true," : "")\"periods\":["
            + objects.joined(separator: ",") + "]}"
    }

    static func hours(_ seconds: Double) -> String { String(format: "%.2f", seconds / 3600) }
    static func minutes(_ seconds: Double) -> String { String(format: "%.0f", seconds / 60) }
}
