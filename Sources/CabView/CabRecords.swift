import Foundation
import Track

/// The Records tab's data, read from the daemon's own track (STATE-DIR/track.sqlite), never written:
/// a week's and a year's figures for the bar charts, a day's track for the map, and its exports.
struct CabRecords: Sendable {
    let store: TrackStore
    let calendar: Calendar
    /// The daemon's rules: where a run of fixes breaks.
    let rules = TrackRules()
    /// At most this many points of a day go to the map (a day at 1 Hz has up to 86,400), and a few
    /// more: each run of fixes keeps its last point.
    let mapPoints: Int

    init(path: String, timeZone: TimeZone?, mapPoints: Int = 20_000) {
        let calendar = LocalDay.calendar(in: timeZone)
        self.calendar = calendar
        self.mapPoints = max(1, mapPoints)
        store = TrackStore(readingOnly: path, calendar: calendar)
    }

    /// A period's figures in the units the page shows.
    struct Figures: Codable, Equatable {
        var samples: Int
        var fixHours: Double
        /// Hours by "rtk_fixed", "rtk_float", "dgps", "autonomous" and "other".
        var hoursByQuality: [String: Double]
        var noFixMinutes: Double
        var noReceiverMinutes: Double
        var movingHours: Double
        var kilometres: Double
        /// Of the samples: sent to agrirouter, acknowledged by it, dropped unsent.
        var sent: Int
        var acknowledged: Int
        var lost: Int

        init(_ figures: WorkFigures) {
            samples = figures.samples
            fixHours = figures.secondsWithFix / 3600
            hoursByQuality = Dictionary(uniqueKeysWithValues: WorkFigures.Quality.allCases.map { ($0.rawValue, (figures.secondsByQuality[$0] ?? 0) / 3600) })
            noFixMinutes = figures.secondsWithoutFix / 60
            noReceiverMinutes = figures.secondsWithoutReceiver / 60
            movingHours = figures.secondsMoving / 3600
            kilometres = figures.metresDriven / 1000
            sent = figures.sent
            acknowledged = figures.acknowledged
            lost = figures.lost
        }
    }

    struct Bar: Codable, Equatable {
        /// "2026-11-25" or "2026-11".
        var key: String
        /// "Wed 25" or "Nov".
        var label: String
        var figures: Figures
    }

    struct Summary: Codable, Equatable {
        var timeZone: String
        var today: String
        var day: String
        var dayFigures: Figures
        var week: String
        var weekDays: [Bar]
        var year: String
        var months: [Bar]
        /// The first and last day with figures, for the date picker; nil when nothing is recorded.
        var firstDay: String?
        var lastDay: String?
    }

    static let weekdayNames = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// The ISO week and the year that hold `day`, each day and month with its figures (zero when none).
    func summary(for day: LocalDay, now: Date = Date()) async throws(TrackStoreError) -> Summary {
        let days = try await store.days()
        let monday = day.weekStart
        let week = (0..<7).map { offset in
            let date = monday.adding(days: offset)
            return Bar(key: date.description, label: "\(Self.weekdayNames[offset]) \(date.day)", figures: Figures(days[date] ?? WorkFigures()))
        }
        var months = Array(repeating: WorkFigures(), count: 12)
        for (date, figures) in days where date.year == day.year { months[date.month - 1] = months[date.month - 1] + figures }
        let year = months.enumerated().map { index, figures in
            Bar(key: String(format: "%04d-%02d", day.year, index + 1), label: Self.monthNames[index], figures: Figures(figures))
        }
        let known = days.keys.sorted()
        return Summary(timeZone: calendar.timeZone.identifier, today: LocalDay(now, in: calendar).description, day: day.description,
                       dayFigures: Figures(days[day] ?? WorkFigures()), week: day.isoWeek, weekDays: week,
                       year: String(format: "%04d", day.year), months: year,
                       firstDay: known.first?.description, lastDay: known.last?.description)
    }

    /// A day's points, oldest first; empty when the day has none.
    func points(of day: LocalDay) async throws(TrackStoreError) -> [TrackPoint] {
        guard let span = day.span(in: calendar) else { return [] }
        return try await store.points(from: span.start, to: span.end.addingTimeInterval(-0.001))
    }

    struct DayTrack: Codable, Equatable {
        var day: String
        /// Runs of fixes as [latitude, longitude] pairs, broken where the fix was lost.
        var segments: [[[Double]]]
        /// Fixes that day, and how many of them are drawn.
        var fixes: Int
        var drawn: Int
    }

    /// A day's runs of fixes for the map, thinned evenly to at most `mapPoints`; each run keeps its ends.
    func track(of day: LocalDay) async throws(TrackStoreError) -> DayTrack {
        let runs = TrackSegments.split(try await points(of: day), rules: rules)
        let fixes = runs.reduce(0) { $0 + $1.count }
        let stride = max(1, (fixes + mapPoints - 1) / mapPoints)
        let segments = runs.map { run in
            run.enumerated().compactMap { index, point -> [Double]? in
                guard index % stride == 0 || index == run.count - 1, let coordinate = point.coordinate else { return nil }
                return [coordinate.latitude, coordinate.longitude]
            }
        }
        return DayTrack(day: day.description, segments: segments, fixes: fixes, drawn: segments.reduce(0) { $0 + $1.count })
    }

    /// A day's track as a file to download.
    func export(_ day: LocalDay, as format: TrackFormat) async throws(TrackStoreError) -> String {
        TrackExport.text(try await points(of: day), as: format, name: "agrigps \(day) (\(calendar.timeZone.identifier))",
                         rules: rules)
    }

    /// "2026-11-25" as a day the calendar has; nil for anything else.
    static func day(_ text: Substring?) -> LocalDay? {
        guard let text, let day = LocalDay(label: String(text)), day.exists else { return nil }
        return day
    }
}
