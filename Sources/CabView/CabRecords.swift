import Fields
import Foundation
import StateView
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
        var machine: MachineFigures?

        init(_ figures: WorkFigures, width: Double? = nil) {
            samples = figures.samples
            fixHours = figures.secondsWithFix / 3600
            hoursByQuality = Dictionary(
                uniqueKeysWithValues: WorkFigures.Quality.allCases.map {
                    ($0.rawValue, (figures.secondsByQuality[$0] ?? 0) / 3600)
                })
            noFixMinutes = figures.secondsWithoutFix / 60
            noReceiverMinutes = figures.secondsWithoutReceiver / 60
            movingHours = figures.secondsMoving / 3600
            kilometres = figures.metresDriven / 1000
            sent = figures.sent
            acknowledged = figures.acknowledged
            lost = figures.lost
            machine = MachineFigures(figures, width: width)
        }
    }

    /// What the machine did, in the units the page shows; none where the tractor's bus and the work
    /// switch said nothing.
    struct MachineFigures: Codable, Equatable {
        var workingHours: Double
        var notWorkingHours: Double
        /// With a working width known.
        var hectares: Double?
        var engineHours: Double
        var fuelLitres: Double
        /// Off every field with the fields known (a share of a day off them): moving, not working.
        var roadHours: Double?

        init?(_ figures: WorkFigures, width: Double?, road: Bool = false) {
            guard figures.hasMachine else { return nil }
            workingHours = figures.secondsWorking / 3600
            notWorkingHours = figures.secondsNotWorking / 3600
            hectares = width.map { figures.hectaresWorked(width: $0) }
            engineHours = figures.secondsEngineRunning / 3600
            fuelLitres = figures.litresFuel
            roadHours = road ? figures.secondsMovingIdle / 3600 : nil
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

    /// The ISO week and the year that hold `day`, each day and month with its figures (zero when none);
    /// the worked area by `width` metres (none without it).
    func summary(for day: LocalDay, width workingWidth: Double? = nil, now: Date = Date()) async throws(TrackStoreError)
        -> Summary
    {
        let days = try await store.days()
        let monday = day.weekStart
        let week = (0..<7).map { offset in
            let date = monday.adding(days: offset)
            return Bar(
                key: date.description, label: "\(Self.weekdayNames[offset]) \(date.day)",
                figures: Figures(days[date] ?? WorkFigures(), width: workingWidth))
        }
        var months = Array(repeating: WorkFigures(), count: 12)
        for (date, figures) in days where date.year == day.year {
            months[date.month - 1] = months[date.month - 1] + figures
        }
        let year = months.enumerated().map { index, figures in
            Bar(
                key: String(format: "%04d-%02d", day.year, index + 1), label: Self.monthNames[index],
                figures: Figures(figures, width: workingWidth))
        }
        let known = days.keys.sorted()
        return Summary(
            timeZone: calendar.timeZone.identifier, today: LocalDay(now, in: calendar).description,
            day: day.description,
            dayFigures: Figures(days[day] ?? WorkFigures(), width: workingWidth), week: day.isoWeek, weekDays: week,
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
                guard index % stride == 0 || index == run.count - 1, let coordinate = point.coordinate else {
                    return nil
                }
                return [coordinate.latitude, coordinate.longitude]
            }
        }
        return DayTrack(
            day: day.description, segments: segments, fixes: fixes, drawn: segments.reduce(0) { $0 + $1.count })
    }

    /// A day's track as a file to download; with `field` (one of `work`'s), only the stretches inside
    /// it, broken where the machine left it.
    func export(_ day: LocalDay, as format: TrackFormat, field: StoredField? = nil, of work: FieldWork? = nil)
        async throws(TrackStoreError) -> String
    {
        var name = "agrigps \(day) (\(calendar.timeZone.identifier))"
        var keep: @Sendable (TrackPoint) -> Bool = { _ in true }
        if let field, let work {
            name += " in \(field.field.name)"
            keep = work.keep(only: field.id)
        }
        return TrackExport.text(try await points(of: day), as: format, name: name, rules: rules, keep: keep)
    }

    // MARK: - Per field

    /// One field's share of a day, or (no id, no name) the share off every field and without a fix.
    struct FieldShare: Encodable, Equatable {
        var id: Int64?
        var name: String?
        var samples: Int
        /// Hours with a fix in it.
        var hours: Double
        var movingHours: Double
        var kilometres: Double
        /// What the machine did there; off every field, with the fields known, the road too.
        var machine: MachineFigures?

        init(_ figures: WorkFigures, field: StoredField?, width: Double? = nil, fieldsKnown: Bool = false) {
            id = field?.id
            name = field?.field.name
            samples = figures.samples
            hours = figures.secondsWithFix / 3600
            movingHours = figures.secondsMoving / 3600
            kilometres = figures.metresDriven / 1000
            machine = MachineFigures(figures, width: width, road: field == nil && fieldsKnown)
        }
    }

    /// GET /api/records/fields: where a day's work was done.
    struct FieldDay: Encodable, Equatable {
        var day: String
        var timeZone: String
        /// Whether any field is stored: without, the page says where to import them.
        var fieldsKnown: Bool
        /// The fields worked that day, by name.
        var fields: [FieldShare]
        /// Off every field or without a fix; nil when no sample was.
        @Nullable var elsewhere: FieldShare?
    }

    /// A day's hours, hours moving and kilometres in each of `work`'s fields, and off them. Worked out
    /// from the day's points when asked, by the rules of the day's figures, so that they add up to the
    /// day's figures: the points of the longest step after midnight are read too, so that the day's
    /// last point stands for its time until the next one, as it does there.
    func fieldDay(_ day: LocalDay, work: FieldWork, width workingWidth: Double? = nil) async throws(TrackStoreError)
        -> FieldDay
    {
        guard let span = day.span(in: calendar) else {
            return FieldDay(
                day: day.description, timeZone: calendar.timeZone.identifier, fieldsKnown: !work.fields.isEmpty,
                fields: [], elsewhere: nil)
        }
        let points = try await store.points(from: span.start, to: span.end.addingTimeInterval(rules.longestStep))
        let rows = work.rows(points, calendar: calendar, rules: rules).filter { $0.day == day }
        return FieldDay(
            day: day.description, timeZone: calendar.timeZone.identifier, fieldsKnown: !work.fields.isEmpty,
            fields: rows.compactMap { row in row.field.map { FieldShare(row.figures, field: $0, width: workingWidth) }
            },
            elsewhere: rows.first { $0.field == nil }.map {
                FieldShare($0.figures, field: nil, width: workingWidth, fieldsKnown: !work.fields.isEmpty)
            })
    }

    /// The download's name: "agrigps-2026-03-24.gpx", or "agrigps-2026-03-24-Nordacker.gpx" for a field.
    static func fileName(_ day: LocalDay, field: String? = nil, format: TrackFormat) -> String {
        "agrigps-\(day)" + (field.map { "-" + fileNamePart($0) } ?? "") + "." + format.fileExtension
    }

    /// A field's name as part of a file name. It comes from the farm software's export, so it may hold
    /// anything: letters and digits of any script are kept, every other run of characters (quotes,
    /// slashes, controls, bidi marks) becomes one "-", and at most 60 characters are kept.
    static func fileNamePart(_ name: String) -> String {
        var part = ""
        for character in name.prefix(200) {
            if character.isLetter || character.isNumber {
                part.append(character)
            } else if !part.isEmpty, part.last != "-" {
                part.append("-")
            }
        }
        let kept = String(part.prefix(60))
        let trimmed = kept.hasSuffix("-") ? String(kept.dropLast()) : kept
        return trimmed.isEmpty ? "field" : trimmed
    }

    /// Content-Disposition for `fileName`: the name itself when it is plain ASCII; otherwise an ASCII
    /// stand-in for old browsers and the whole name as RFC 8187 UTF-8, which every current browser reads.
    static func contentDisposition(_ fileName: String) -> String {
        var ascii = ""
        for character in fileName.folding(options: .diacriticInsensitive, locale: nil) {
            let kept: Character =
                character.isASCII && (character.isLetter || character.isNumber || "._".contains(character))
                ? character : "-"
            if kept != "-" || ascii.last != "-" { ascii.append(kept) }
        }
        ascii = ascii.replacingOccurrences(of: "-.", with: ".")  // a name with no Latin letter at all
        guard ascii != fileName else { return "attachment; filename=\"\(ascii)\"" }
        let plain = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._")
        let encoded = fileName.addingPercentEncoding(withAllowedCharacters: plain) ?? ascii
        return "attachment; filename=\"\(ascii)\"; filename*=UTF-8''\(encoded)"
    }

    /// "2026-11-25" as a day the calendar has; nil for anything else.
    static func day(_ text: Substring?) -> LocalDay? {
        guard let text, let day = LocalDay(label: String(text)), day.exists else { return nil }
        return day
    }
}
