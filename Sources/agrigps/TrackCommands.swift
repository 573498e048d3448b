import ArgumentParser
import Bounds
import Clocks
import CommandSupport
import Fields
import Foundation
import StateDirectory
import StateView
import Track

/// --since, --until and --time-zone, shared by `track` and `stats`.
struct TimeRangeOptions: ParsableArguments {
    // Unconditional: a value that starts with a dash ("-1h") is this option's, and refused in words.
    @Option(parsing: .unconditional,
            help: ArgumentHelp("Start: now, today, yesterday, 8h (back from now), 2026-11-25 or 2026-11-25T08:30 (local; ...Z for UTC). Default: today for track, ten years back for stats.",
                               valueName: "time"))
    var since: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("End, in the same forms; a date means the end of that day (default: now).", valueName: "time"))
    var until: String?

    @Option(name: .customLong("time-zone"),
            help: ArgumentHelp("Time zone of local days and times, such as Europe/Berlin (default: [track] time_zone, else TZ, else the system's).",
                               valueName: "zone"))
    var timeZone: String?

    func validate() throws {
        _ = try range(now: Date(), calendar: try calendar(ConfigurationFile(path: "")), defaultSince: "today")
    }

    /// Local days in the flag's time zone, else the file's, else TZ's or the system's.
    func calendar(_ file: ConfigurationFile) throws -> Calendar {
        guard let timeZone else { return LocalDay.calendar(in: file.trackTimeZone) }
        let name = try KeyedFlag.text("--time-zone", timeZone, section: "track", name: "time_zone")
        return LocalDay.calendar(in: TimeZone(identifier: name) ?? file.trackTimeZone)
    }

    func range(now: Date, calendar: Calendar, defaultSince: String) throws -> ClosedRange<Date> {
        do {
            let start = try TimeText.date(since ?? defaultSince, now: now, calendar: calendar)
            let end = try until.map { text throws(TimeText.ParseError) in try TimeText.date(text, now: now, calendar: calendar, endOfDay: true) } ?? now
            guard start <= end else { throw ValidationError("--since is after --until: nothing lies between them") }
            return start...end
        } catch let error as TimeText.ParseError {
            throw ValidationError(error.description)
        }
    }
}

struct TrackExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "track",
        abstract: "Export this machine's own track as GPX, GeoJSON or CSV.",
        discussion: """
            Reads the track the daemon keeps (STATE-DIR/track.sqlite) whether or not the machine is onboarded: every \
            sample, for 90 days ([track] retention_days). The daemon writes it once a minute, so the last minute may not be there yet. Where \
            the fix was lost the line breaks: a new GPX segment, a new line of the GeoJSON MultiLineString. CSV lists \
            every sample, with or without a fix. Times are UTC in the output; --since and --until are local times.
            """
    )

    @Option(help: ArgumentHelp("Output format.", valueName: "format"))
    var format: TrackFormat = .gpx

    @Option(help: ArgumentHelp("Write to this file instead of standard output.", valueName: "file"))
    var output: String?

    @Option(help: ArgumentHelp("Only the track inside this field: its ID or its name, as 'agrigps fields' lists them. The line breaks where the machine left the field.",
                               valueName: "field"))
    var field: String?

    @OptionGroup var time: TimeRangeOptions
    @OptionGroup var config: ConfigurationOption
    @OptionGroup var state: StateDirectoryOption

    func run() async throws {
        let calendar = try time.calendar(try config.load())
        let range = try time.range(now: Date(), calendar: calendar, defaultSince: "today")
        let points: [TrackPoint]
        do {
            points = try await TrackStore(readingOnly: state.trackPath, calendar: calendar).points(from: range.lowerBound, to: range.upperBound)
        } catch {
            throw CommandFailure(description: error.description, exitCode: 74)
        }
        var name = "agrigps \(ISO8601UTC.string(from: range.lowerBound)) to \(ISO8601UTC.string(from: range.upperBound))"
        var keep: @Sendable (TrackPoint) -> Bool = { _ in true }
        if let field {
            let work = try await FieldWorkLoader.load(state)
            let chosen: StoredField
            do {
                chosen = try work.field(named: field)
            } catch {
                throw CommandFailure(description: error.description, exitCode: 66)
            }
            keep = work.keep(only: chosen.id)
            name += " in \(chosen.field.name)"
        }
        let text = TrackExport.text(points, as: format, name: name, keep: keep)
        guard let output else {
            FileHandle.standardOutput.write(Data(text.utf8))
            return
        }
        do {
            try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
        } catch {
            throw CommandFailure(description: "cannot write \(output): \(error.localizedDescription); check the directory and its permissions",
                                 exitCode: 73)
        }
        FileHandle.standardError.write(Data("\(points.filter(keep).count) samples written to \(output)\n".utf8))
    }
}

struct StatsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stats",
        abstract: "This machine's working figures per day, ISO week, month or year.",
        discussion: """
            From the track the daemon keeps (STATE-DIR/track.sqlite): hours with a fix and by fix quality, minutes \
            without a fix and without a receiver, hours moving (faster than 0.5 m/s) and distance driven, and the \
            samples taken, sent, acknowledged by agrirouter, and lost (dropped from the spool unsent), each counted on \
            the day the sample was taken. Days are local days in the box's time zone ([track] time_zone, else TZ, else the system's), \
            as the daemon counted them: a day is counted in the zone the daemon had then. Each sample counts \
            the time until the next one, at most 45 s: time with the daemon stopped counts nowhere.
            """
    )

    @Option(help: ArgumentHelp("One line per local day, ISO week, month or year.", valueName: "period"))
    var by: WorkLedger.Period = .day

    @Flag(help: "One line per period and field: the farm's fields ('agrigps fields'), and (no field) for the time off them or without a fix.")
    var byField = false

    @Flag(help: "Print JSON for scripts.")
    var json = false

    @OptionGroup var time: TimeRangeOptions
    @OptionGroup var config: ConfigurationOption
    @OptionGroup var state: StateDirectoryOption

    func run() async throws {
        let calendar = try time.calendar(try config.load())
        let range = try time.range(now: Date(), calendar: calendar, defaultSince: "3650d")
        if byField { return try await runByField(calendar: calendar, range: range) }
        let days: [LocalDay: WorkFigures]
        do {
            days = try await TrackStore(readingOnly: state.trackPath, calendar: calendar).days()
        } catch {
            throw CommandFailure(description: error.description, exitCode: 74)
        }
        // A day is in when it overlaps the range.
        let first = LocalDay(range.lowerBound, in: calendar), last = LocalDay(range.upperBound.addingTimeInterval(-0.001), in: calendar)
        let periods = WorkLedger.sum(days.filter { $0.key >= first && $0.key <= last }, by: by)
        if json {
            Output.line(StatsReport.json(periods, by: by))
        } else {
            for line in StatsReport.text(periods, by: by) { Output.line(line) }
        }
    }
}

extension StatsCommand {
    /// Per field: worked out from the track's points (the daemon keeps figures per day, not per
    /// field), so the range is read point by point: about a second for a month at 1 Hz.
    func runByField(calendar: Calendar, range: ClosedRange<Date>) async throws {
        let work = try await FieldWorkLoader.load(state)
        let points: [TrackPoint]
        do {
            points = try await TrackStore(readingOnly: state.trackPath, calendar: calendar).points(from: range.lowerBound, to: range.upperBound)
        } catch {
            throw CommandFailure(description: error.description, exitCode: 74)
        }
        var lines: [StatsReport.Line] = []
        var at: [String: Int] = [:]
        for row in work.rows(points, calendar: calendar) {
            let period = by.label(of: row.day)
            let key = period + "\u{0}" + (row.field.map { String($0.id) } ?? "")
            if let index = at[key] {
                lines[index].figures = lines[index].figures + row.figures
            } else {
                at[key] = lines.count
                let name = row.field.map { json ? $0.field.name : TerminalText.safe($0.field.name, limit: 40) }
                lines.append(StatsReport.Line(period: period, field: row.field.map { ($0.id, name ?? "") }, figures: row.figures))
            }
        }
        if json {
            Output.line(StatsReport.json(lines, by: by, byField: true))
        } else if work.fields.isEmpty {
            Output.line("No fields yet. Import the farm's with 'agrigps fields import FILE'; until then all time is (no field).")
            for line in StatsReport.text(lines, by: by, byField: true) { Output.line(line) }
        } else {
            for line in StatsReport.text(lines, by: by, byField: true) { Output.line(line) }
        }
    }
}

/// The stored fields, read-only, for the track's readers.
enum FieldWorkLoader {
    static func load(_ state: StateDirectoryOption) async throws -> FieldWork {
        do {
            return FieldWork(fields: try await FieldStore(path: state.fieldsPath, readOnly: true).fields())
        } catch {
            throw CommandFailure(description: error.description, exitCode: error.exitCode)
        }
    }
}

extension TrackFormat: ExpressibleByArgument {}
extension WorkLedger.Period: ExpressibleByArgument {}
