import Foundation
import GNSS

/// `agrigps stats` printed: one line (or JSON object) per period.
public enum StatsReport {
    public static func text(_ periods: [(label: String, figures: WorkFigures)], by period: WorkLedger.Period) -> [String] {
        guard !periods.isEmpty else { return ["No track recorded in this time."] }
        let header = [period.rawValue, "fix h", "RTK fixed h", "RTK float h", "DGPS h", "autonomous h", "no fix min", "no receiver min",
                      "moving h", "km", "samples", "sent", "acked", "lost"]
        var rows = [header]
        for (label, figures) in periods {
            rows.append([label, hours(figures.secondsWithFix), hours(figures.secondsByQuality[.rtkFixed] ?? 0),
                         hours(figures.secondsByQuality[.rtkFloat] ?? 0), hours(figures.secondsByQuality[.dgps] ?? 0),
                         hours(figures.secondsByQuality[.autonomous] ?? 0), minutes(figures.secondsWithoutFix),
                         minutes(figures.secondsWithoutReceiver), hours(figures.secondsMoving),
                         String(format: "%.1f", figures.metresDriven / 1000), String(figures.samples),
                         String(figures.sent), String(figures.acknowledged), String(figures.lost)])
        }
        let widths = header.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            row.enumerated().map { column, cell in
                let pad = String(repeating: " ", count: widths[column] - cell.count)
                return column == 0 ? cell + pad : pad + cell  // labels left, figures right
            }.joined(separator: "  ")
        }
    }

    /// One object per period, seconds and metres unrounded.
    public static func json(_ periods: [(label: String, figures: WorkFigures)], by period: WorkLedger.Period) -> String {
        let objects = periods.map { label, figures in
            var line = JSONLine()
            line.add("period", label)
            line.add("seconds_with_fix", figures.secondsWithFix)
            var qualities = JSONLine()
            for quality in WorkFigures.Quality.allCases { qualities.add(quality.rawValue, figures.secondsByQuality[quality] ?? 0) }
            line.add("seconds_by_quality", json: qualities.text)
            line.add("seconds_without_fix", figures.secondsWithoutFix)
            line.add("seconds_without_receiver", figures.secondsWithoutReceiver)
            line.add("seconds_moving", figures.secondsMoving)
            line.add("metres_driven", figures.metresDriven)
            line.add("samples", figures.samples)
            line.add("samples_sent", figures.sent)
            line.add("samples_acknowledged", figures.acknowledged)
            line.add("samples_lost", figures.lost)
            return line.text
        }
        return "{\"by\":\(JSONLine.quote(period.rawValue)),\"periods\":[" + objects.joined(separator: ",") + "]}"
    }

    static func hours(_ seconds: Double) -> String { String(format: "%.2f", seconds / 3600) }
    static func minutes(_ seconds: Double) -> String { String(format: "%.0f", seconds / 60) }
}
