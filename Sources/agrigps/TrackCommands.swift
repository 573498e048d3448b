import ArgumentParser
import Bounds
import Clocks
import CommandSupport
import Fields
import Foundation
import Spool
import StateDirectory
import StateView
import Track

/// --since, --until and --time-zone, shared by `track` and `stats`.
struct TimeRangeOptions: ParsableArguments {
    // Unconditional: a value that starts with a dash ("-1h") is this option's, and refused in words.
    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Start: now, today, yesterday, 8h (back from now), 2026-11-25 or 2026-11-25T08:30 (local; ...Z for UTC). Default: today for track, ten years back for stats.",
            valueName: "time"))
    var since: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "End, in the same forms; a date means the end of that day (default: now).", valueName: "time"))
    var until: String?

    @Option(
        name: .customLong("time-zone"),
        help: ArgumentHelp(
            "Time zone of local days and times, such as Europe/Berlin (default: [track] time_zone, else TZ, else the system's).",
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
            let end =
                try until.map { text throws(TimeText.ParseError) in
                    try TimeText.date(text, now: now, calendar: calendar, endOfDay: true)
                } ?? now
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

    @Option(
        help: ArgumentHelp(
            "Only the track inside this field: its ID or its name, as 'agrigps fields' lists them. The line breaks where the machine left the field.",
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
            points = try await TrackStore(readingOnly: state.trackPath, calendar: calendar).points(
                from: range.lowerBound, to: range.upperBound)
        } catch {
            throw CommandFailure(description: error.description, exitCode: 74)
        }
        var name =
            "agrigps \(ISO8601UTC.string(from: range.lowerBound)) to \(ISO8601UTC.string(from: range.upperBound))"
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
            throw CommandFailure(
                description:
                    "cannot write \(output): \(error.localizedDescription); check the directory and its permissions",
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

            Where the tractor's bus or the work switch said what the machine was doing: hours working and not \
            working, worked area with --working-width ([machine] working_width, else the width given in the cab view's \
            Settings), hours the engine ran and litres of \
            fuel by its fuel rate. With --by-field, (no field) has the road hours: moving off every field, not \
            working; a field with less than a minute of work on a day (brushed at its edge) counts none.
            """
    )

    @Option(
        help: ArgumentHelp(
            "Metres the implement works across, for the worked area (0.1 to 60; default: [machine] working_width, "
                + "else the cab view's Settings, else no area).",
            valueName: "metres"))
    var workingWidth: String?

    @Option(help: ArgumentHelp("One line per local day, ISO week, month or year.", valueName: "period"))
    var by: WorkLedger.Period = .day

    @Flag(
        help:
            "One line per period and field: the farm's fields ('agrigps fields'), and (no field) for the time off them or without a fix."
    )
    var byField = false

    @Flag(help: "Print JSON for scripts.")
    var json = false

    @OptionGroup var time: TimeRangeOptions
    @OptionGroup var config: ConfigurationOption
    @OptionGroup var state: StateDirectoryOption

    func validate() throws {
        if let workingWidth {
            _ = try KeyedFlag.value("--working-width", workingWidth, section: "machine", name: "working_width")
        }
    }

    /// The flag's width, else the configuration's, else the one the driver gave in the cab view
    /// (kept in the spool, read without changing it); nil, none.
    private func width(_ file: ConfigurationFile) async throws -> Double? {
        if let workingWidth {
            return try KeyedFlag.value("--working-width", workingWidth, section: "machine", name: "working_width")
        }
        if let configured = file.number("machine", "working_width") { return configured }
        guard FileManager.default.fileExists(atPath: state.spoolPath) else { return nil }
        return (try? await SpoolReader(path: state.spoolPath).workingWidth()) ?? nil
    }

    func run() async throws {
        let file = try config.load()
        let calendar = try time.calendar(file)
        let range = try time.range(now: Date(), calendar: calendar, defaultSince: "3650d")
        let width = try await width(file)
        if byField { return try await runByField(calendar: calendar, range: range, width: width) }
        let days: [LocalDay: WorkFigures]
        do {
            days = try await TrackStore(readingOnly: state.trackPath, calendar: calendar).days()
        } catch {
            throw CommandFailure(description: error.description, exitCode: 74)
        }
        // A day is in when it overlaps the range.
        let first = LocalDay(range.lowerBound, in: calendar),
            last = LocalDay(range.upperBound.addingTimeInterval(-0.001), in: calendar)
        let periods = WorkLedger.sum(days.filter { $0.key >= first && $0.key <= last }, by: by)
        let terms = StatsReport.MachineTerms(width: width)
        if json {
            Output.line(StatsReport.json(periods, by: by, terms: terms))
        } else {
            for line in StatsReport.text(periods, by: by, terms: terms) { Output.line(line) }
        }
    }
}

extension StatsCommand {
    /// Per field: worked out from the track's points (the daemon keeps figures per day, not per
    /// field), so the range is read point by point: about a second for a month at 1 Hz.
    func runByField(calendar: Calendar, range: ClosedRange<Date>, width: Double?) async throws {
        let work = try await FieldWorkLoader.load(state)
        let points: [TrackPoint]
        do {
            points = try await TrackStore(readingOnly: state.trackPath, calendar: calendar).points(
                from: range.lowerBound, to: range.upperBound)
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
                lines.append(
                    StatsReport.Line(period: period, field: row.field.map { ($0.id, name ?? "") }, figures: row.figures)
                )
            }
        }
        let terms = StatsReport.MachineTerms(width: width, fieldsKnown: !work.fields.isEmpty)
        if json {
            Output.line(StatsReport.json(lines, by: by, byField: true, terms: terms))
            return
        }
        if work.fields.isEmpty {
            Output.line(
                "No fields yet. Import the farm's with 'agrigps fields import FILE'; until then all time is (no field)."
            )
        }
        for line in StatsReport.text(lines, by: by, byField: true, terms: terms) { Output.line(line) }
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
