import Bounds
import Foundation
import GNSS
import Spool
import Track

/// Why the configuration file was refused: which key, and what is allowed.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public var path: String
    /// "[section] key", or empty for the file as a whole.
    public var key: String
    public var problem: String

    public var description: String {
        key.isEmpty ? "\(path): \(problem)" : "\(path): \(key): \(problem)"
    }
}

/// A flag refused by the rule of the configuration key it stands for.
public struct FlagError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}

/// `/etc/agrigps/agrigps.conf`, in TOML. Every key is optional; command-line flags override it.
///
/// ```toml
/// [gpsd]
/// address = "127.0.0.1:2947"
/// [gnss]
/// source = "gpsd"              # or "nmea2000://can0[:ADDRESS]": a receiver on the CAN bus, read by gpsd and listened to beside it
/// [sampling]
/// interval = 1                 # seconds
/// [sending]
/// interval = 10                # seconds between send cycles without a backlog
/// spacing = 5                  # least seconds between requests (default: 10 on QA, 5 in production)
/// [agrirouter]
/// environment = "qa"           # qa or production, for onboarding
/// application_id = "…"
/// certification_version_id = "…"
/// onboarding_url = "https://…"  # a local agrirouter only (agrirouter-sim), for onboarding from the cab view
/// ca_file = "/path/ca.pem"      # the CA that local agrirouter signs with
/// [publishing]
/// formats = ["gps_info", "efdi"]   # what positions go out as; both by default
/// profile = "standard"          # "live": a send cycle every 5 s, not 10, so other machines see this one within seconds (best over MQTT)
/// [spool]
/// max_samples = 500000
/// max_megabytes = 64
/// max_age_days = 30
/// [others]
/// stale_after = 300            # seconds without data before another machine is stale
/// feed_query_interval = 3600
/// history_hours = 24
/// [status]
/// heartbeat_limit = 120        # seconds; an older heartbeat is CRITICAL
/// fix_age_warning = 60         # seconds since the last fix
/// fix_age_critical = 600
/// queue_age_warning = 600      # seconds the oldest unsent sample has waited
/// queue_age_critical = 3600
/// ack_age_warning = 300         # seconds without an acknowledgement while samples wait (onboarded)
/// [web]
/// listen = "127.0.0.1:8080"     # beyond loopback only with a password ('agrigps web set-password')
/// tiles = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"   # or "none": a plain background, no internet
/// basemap = "/var/lib/agrigps/farm.mbtiles"   # raster MBTiles kept on the box, drawn instead of tiles: no internet needed
/// tile_cache_mb = 200           # the box fetches tiles for the page and keeps them: the map once seen works offline; 0: off
/// leaflet_directory = "/usr/share/javascript/leaflet"
/// session_hours = 12            # a login lasts this long
/// not_moving_minutes = 10       # another machine that has not moved for this long is announced
/// [machine]
/// work_signals = ["rear-hitch", "front-hitch", "rear-pto", "front-pto", "implement-operations", "switch"]   # what says an implement is in work (all by default)
/// minimum_speed = 1             # km/h: slower, the machine stands and does not work
/// working_width = 6             # metres the implement works: worked area in Records (none without it)
/// bus = "can1"                  # the tractor's bus, when the receiver is not on it (USB, serial)
/// [track]
/// time_zone = "Europe/Berlin"   # local days for stats and the cab view (default: TZ, else the system's)
/// retention_days = 90           # how long the machine's own track keeps its points
/// max_points = 8000000          # at most this many points; the oldest go first
/// ```
public struct ConfigurationFile: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case number(Double)
        case text(String)
        case list([String])
    }

    enum Kind: Sendable {
        case number(ClosedRange<Double>, unit: String)
        case integer(ClosedRange<Int>)
        case choice([String])
        /// One or more of these, each once.
        case choices([String])
        case text
        case address
        /// A name from the tz database ("Europe/Berlin", "UTC").
        case timeZone
        /// Where the receiver is: "gpsd" or "nmea2000://IFACE[:ADDRESS]" (`ReceiverSource`).
        case receiverSource
        /// A CAN interface's name ("can0").
        case interface
    }

    struct Key: Sendable {
        var section: String
        var name: String
        var kind: Kind
    }

    static let keys: [Key] = [
        Key(section: "gpsd", name: "address", kind: .address),
        Key(section: "gnss", name: "source", kind: .receiverSource),
        Key(section: "sampling", name: "interval", kind: .number(0.1...3600, unit: "seconds")),
        // Below the request spacing it only means "as often as the spacing allows" (tests use that).
        Key(section: "sending", name: "interval", kind: .number(0.1...3600, unit: "seconds")),
        Key(section: "sending", name: "spacing", kind: .number(0...600, unit: "seconds")),
        Key(section: "agrirouter", name: "environment", kind: .choice(["qa", "production"])),
        Key(section: "agrirouter", name: "application_id", kind: .text),
        Key(section: "agrirouter", name: "certification_version_id", kind: .text),
        Key(section: "agrirouter", name: "onboarding_url", kind: .text),
        Key(section: "agrirouter", name: "ca_file", kind: .text),
        Key(section: "publishing", name: "formats", kind: .choices(["gps_info", "efdi"])),
        Key(section: "publishing", name: "profile", kind: .choice(["standard", "live"])),
        Key(section: "spool", name: "max_samples", kind: .integer(1000...100_000_000)),
        Key(section: "spool", name: "max_megabytes", kind: .number(1...100_000, unit: "megabytes")),
        Key(section: "spool", name: "max_age_days", kind: .number(1...3650, unit: "days")),
        Key(section: "others", name: "stale_after", kind: .number(10...86_400, unit: "seconds")),
        Key(section: "others", name: "feed_query_interval", kind: .number(60...86_400, unit: "seconds")),
        Key(section: "others", name: "history_hours", kind: .number(1...720, unit: "hours")),
        Key(section: "status", name: "heartbeat_limit", kind: .number(10...86_400, unit: "seconds")),
        Key(section: "status", name: "fix_age_warning", kind: .number(1...86_400, unit: "seconds")),
        Key(section: "status", name: "fix_age_critical", kind: .number(1...86_400, unit: "seconds")),
        Key(section: "status", name: "queue_age_warning", kind: .number(1...2_592_000, unit: "seconds")),
        Key(section: "status", name: "queue_age_critical", kind: .number(1...2_592_000, unit: "seconds")),
        Key(section: "status", name: "ack_age_warning", kind: .number(10...2_592_000, unit: "seconds")),
        Key(section: "web", name: "listen", kind: .address),
        Key(section: "web", name: "tiles", kind: .text),
        Key(section: "web", name: "basemap", kind: .text),
        Key(section: "web", name: "tile_cache_mb", kind: .integer(0...10_000)),
        Key(section: "web", name: "leaflet_directory", kind: .text),
        Key(section: "web", name: "session_hours", kind: .number(0.1...720, unit: "hours")),
        Key(section: "web", name: "not_moving_minutes", kind: .number(1...1440, unit: "minutes")),
        Key(section: "machine", name: "work_signals", kind: .choices(workSignals)),
        Key(section: "machine", name: "minimum_speed", kind: .number(0.1...20, unit: "km/h")),
        Key(section: "machine", name: "working_width", kind: .number(MachineReading.workingWidthRange, unit: "metres")),
        Key(section: "machine", name: "bus", kind: .interface),
        Key(section: "track", name: "time_zone", kind: .timeZone),
        Key(section: "track", name: "retention_days", kind: .number(1...3650, unit: "days")),
        Key(section: "track", name: "max_points", kind: .integer(1000...100_000_000)),
    ]

    /// The signals `[machine] work_signals` may name, as the `Machine` module's `WorkSignal` names them.
    public static let workSignals = [
        "rear-hitch", "front-hitch", "rear-pto", "front-pto", "implement-operations", "switch",
    ]

    public let path: String
    /// Values by "section.name".
    public private(set) var values: [String: Value] = [:]

    /// No file: every value at its default.
    public init(path: String) {
        self.path = path
    }

    /// Reads `path`. A missing file is an error only when `required` (it was named on the command line).
    public static func load(path: String, required: Bool) throws(ConfigurationError) -> ConfigurationFile {
        guard FileManager.default.fileExists(atPath: path) else {
            if required { throw ConfigurationError(path: path, key: "", problem: "no such file") }
            return ConfigurationFile(path: path)
        }
        if let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber,
            size.intValue > ConfigurationText.maximumBytes
        {
            throw ConfigurationError(
                path: path, key: "",
                problem: "is \(size.intValue) bytes; a configuration file is at most \(ConfigurationText.maximumBytes)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(path: path, key: "", problem: "cannot be read; check its permissions")
        }
        return try parse(Array(data), path: path)
    }

    public static func parse(_ text: String, path: String) throws(ConfigurationError) -> ConfigurationFile {
        try parse(Array(text.utf8), path: path)
    }

    static func parse(_ bytes: [UInt8], path: String) throws(ConfigurationError) -> ConfigurationFile {
        let entries: [(section: String, key: String, value: ConfigurationText.Value, line: Int)]
        do {
            entries = try ConfigurationText.parse(bytes)
        } catch {
            throw ConfigurationError(
                path: path, key: "", problem: error.line > 0 ? "line \(error.line): \(error.reason)" : error.reason)
        }
        var file = ConfigurationFile(path: path)
        let sections = Array(Set(keys.map(\.section))).sorted()
        for entry in entries {
            guard sections.contains(entry.section) else {
                throw ConfigurationError(
                    path: path, key: "[\(TerminalText.safe(entry.section, limit: 40))]",
                    problem: "unknown section; the sections are \(sections.map { "[\($0)]" }.joined(separator: ", "))")
            }
            let known = keys.filter { $0.section == entry.section }
            guard let key = known.first(where: { $0.name == entry.key }) else {
                throw ConfigurationError(
                    path: path, key: "[\(entry.section)] \(TerminalText.safe(entry.key, limit: 40))",
                    problem: "unknown key; [\(entry.section)] takes \(known.map(\.name).joined(separator: ", "))")
            }
            do {
                file.values["\(entry.section).\(entry.key)"] = try value(entry.value, for: key)
            } catch {
                throw ConfigurationError(path: path, key: "[\(key.section)] \(key.name)", problem: error.problem)
            }
        }
        try file.checkThresholds()
        return file
    }

    /// Why one value was refused: what is allowed, and what was given, made safe to print.
    struct Refusal: Error {
        var problem: String
    }

    private static func value(_ raw: ConfigurationText.Value, for key: Key) throws(Refusal) -> Value {
        let shown: String
        switch raw {
        case .string(let text): shown = "\"" + TerminalText.safe(text, limit: 60) + "\""
        case .integer(let number): shown = String(number)
        case .float(let number): shown = Bounds.show(number)
        case .boolean(let flag): shown = String(flag)
        case .strings(let items):
            shown = "[" + items.map { "\"" + TerminalText.safe($0, limit: 30) + "\"" }.joined(separator: ", ") + "]"
        }
        return try value(
            of: key, number: raw.number, text: { if case .string(let text) = raw { text } else { nil } }(),
            shown: shown,
            isInteger: { if case .integer = raw { true } else { false } }(),
            items: { if case .strings(let items) = raw { items } else { nil } }())
    }

    /// The one check a key's value passes, whether it comes from the file or from a flag.
    static func value(
        of key: Key, number: Double?, text: String?, shown: String, isInteger: Bool, items: [String]? = nil
    ) throws(Refusal) -> Value {
        func refuse(_ allowed: String) -> Refusal { Refusal(problem: "must be \(allowed), got \(shown)") }
        switch key.kind {
        case .number(let range, let unit):
            guard let number, let checked = Bounds.check(number, in: range) else {
                throw refuse(
                    "a number of \(unit) from \(Bounds.show(range.lowerBound)) to \(Bounds.show(range.upperBound))")
            }
            return .number(checked)
        case .integer(let range):
            guard let number, isInteger || number == number.rounded(), let whole = Bounds.whole(number),
                range.contains(whole)
            else {
                throw refuse("a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return .number(Double(whole))
        case .choices(let choices):
            guard let items, !items.isEmpty, items.allSatisfy(choices.contains), Set(items).count == items.count else {
                throw refuse(
                    "a list of one or more of \(choices.map { "\"\($0)\"" }.joined(separator: ", ")), each once")
            }
            return .list(items)
        case .choice(let choices):
            guard let text, choices.contains(text) else {
                throw refuse(choices.map { "\"\($0)\"" }.joined(separator: " or "))
            }
            return .text(text)
        case .text:
            guard let text, !text.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw refuse("a non-empty string")
            }
            guard TerminalText.isSafe(text, limit: 200) else {
                throw refuse("at most 200 characters with no control characters")
            }
            return .text(text)
        case .address:
            guard let text else { throw refuse("a string \"host:port\"") }
            do {
                _ = try GPSDAddress(parsing: text)
            } catch {
                throw Refusal(problem: TerminalText.safe(error.description, limit: 200))
            }
            return .text(text)
        case .timeZone:
            guard let text, TerminalText.isSafe(text, limit: 60), TimeZone(identifier: text) != nil else {
                throw refuse("a time zone name from the tz database, such as \"Europe/Berlin\" or \"UTC\"")
            }
            return .text(text)
        case .interface:
            guard let text, ReceiverSource.isInterfaceName(text) else {
                throw refuse(
                    "a CAN interface's name in quotes, such as \"can0\" (1 to 15 letters, digits, '-', '_' or '.')")
            }
            return .text(text)
        case .receiverSource:
            guard let text else { throw refuse("text in quotes") }
            do {
                _ = try ReceiverSource(parsing: text)
            } catch {
                throw error.description == ReceiverSource.expected
                    ? refuse(ReceiverSource.expected) : Refusal(problem: "\(error.description), got \(shown)")
            }
            return .text(text)
        }
    }

    /// A flag that stands for a key of the file (`--interval` for [sampling] interval) is checked by
    /// the same rule, so the two can never disagree on what is allowed.
    public static func checkFlag(_ flag: String, _ text: String, section: String, name: String) throws(FlagError)
        -> Double
    {
        guard case .number(let number) = try checkedFlag(flag, text, section: section, name: name) else {
            preconditionFailure("[\(section)] \(name) is not a number")
        }
        return number
    }

    /// The same for a key whose value is text (a time zone, say).
    public static func checkTextFlag(_ flag: String, _ text: String, section: String, name: String) throws(FlagError)
        -> String
    {
        guard case .text(let checked) = try checkedFlag(flag, text, section: section, name: name) else {
            preconditionFailure("[\(section)] \(name) is not text")
        }
        return checked
    }

    /// The same for a key whose value is a list: the flag gives it comma-separated ("rear-hitch,switch").
    public static func checkListFlag(_ flag: String, _ text: String, section: String, name: String) throws(FlagError)
        -> [String]
    {
        guard let key = keys.first(where: { $0.section == section && $0.name == name }) else {
            preconditionFailure("no configuration key [\(section)] \(name)")
        }
        let items = text.split(separator: ",", omittingEmptySubsequences: false).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        do {
            guard
                case .list(let checked) = try value(
                    of: key, number: nil, text: nil, shown: "'\(TerminalText.safe(text, limit: 80))'",
                    isInteger: false, items: items)
            else {
                preconditionFailure("[\(section)] \(name) is not a list")
            }
            return checked
        } catch {
            throw FlagError(description: "\(flag) \(error.problem)")
        }
    }

    private static func checkedFlag(_ flag: String, _ text: String, section: String, name: String) throws(FlagError)
        -> Value
    {
        guard let key = keys.first(where: { $0.section == section && $0.name == name }) else {
            preconditionFailure("no configuration key [\(section)] \(name)")
        }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        do {
            return try value(
                of: key, number: Double(trimmed), text: text, shown: "'\(TerminalText.safe(text, limit: 40))'",
                isInteger: Int(trimmed) != nil)
        } catch {
            throw FlagError(description: "\(flag) \(error.problem)")
        }
    }

    /// A warning threshold must come before its critical one, the defaults included.
    private func checkThresholds() throws(ConfigurationError) {
        let merged = thresholds
        for (warning, critical, low, high) in [
            ("fix_age_warning", "fix_age_critical", merged.fixAgeWarning, merged.fixAgeCritical),
            ("queue_age_warning", "queue_age_critical", merged.queueAgeWarning, merged.queueAgeCritical),
        ]
        where low >= high {
            throw ConfigurationError(
                path: path, key: "[status] \(warning)",
                problem: "must be less than [status] \(critical) (\(Bounds.show(high))), got \(Bounds.show(low))")
        }
    }

    public func number(_ section: String, _ name: String) -> Double? {
        if case .number(let value) = values["\(section).\(name)"] { return value }
        return nil
    }

    public func list(_ section: String, _ name: String) -> [String]? {
        if case .list(let value) = values["\(section).\(name)"] { return value }
        return nil
    }

    public func text(_ section: String, _ name: String) -> String? {
        if case .text(let value) = values["\(section).\(name)"] { return value }
        return nil
    }

    /// What positions are published as: [publishing] formats, gps:info and EFDI by default.
    public var outputs: [SpoolOutput] {
        guard let names = list("publishing", "formats") else { return SpoolOutput.all }
        return SpoolOutput.all.filter { names.contains($0.name) }
    }

    /// Seconds between send cycles unless [sending] interval or a flag says otherwise: 10, or 5 (the
    /// least request spacing agrirouter allows in production) with [publishing] profile = "live".
    /// Over MQTT a cycle's positions reach the other machines' pushes at once, so the cycle is the delay.
    public var defaultSendInterval: Double {
        text("publishing", "profile") == "live" ? 5 : 10
    }

    /// Where the receiver is: [gnss] source, gpsd's devices by default. Checked when the file was read.
    public var receiverSource: ReceiverSource {
        text("gnss", "source").flatMap { try? ReceiverSource(parsing: $0) } ?? .gpsd
    }

    /// The time zone of local days: [track] time_zone, else nil (TZ, else the system's).
    public var trackTimeZone: TimeZone? {
        text("track", "time_zone").flatMap(TimeZone.init(identifier:))
    }

    /// The own track's keeping: the file's time zone, retention and cap, the defaults elsewhere.
    public var trackConfiguration: TrackStore.Configuration {
        var configuration = TrackStore.Configuration()
        if let zone = trackTimeZone { configuration.calendar.timeZone = zone }
        if let days = number("track", "retention_days") { configuration.retention = days * 86_400 }
        // Checked by the file's range (at most 10^8), so this conversion cannot trap.
        if let points = number("track", "max_points") {
            configuration.maximumPoints = Bounds.whole(points) ?? configuration.maximumPoints
        }
        return configuration
    }

    /// The status thresholds, the file's where it sets them.
    public var thresholds: StatusThresholds {
        var thresholds = StatusThresholds()
        if let value = number("status", "heartbeat_limit") { thresholds.heartbeatLimit = value }
        if let value = number("status", "fix_age_warning") { thresholds.fixAgeWarning = value }
        if let value = number("status", "fix_age_critical") { thresholds.fixAgeCritical = value }
        if let value = number("status", "queue_age_warning") { thresholds.queueAgeWarning = value }
        if let value = number("status", "queue_age_critical") { thresholds.queueAgeCritical = value }
        if let value = number("status", "ack_age_warning") { thresholds.ackAgeWarning = value }
        if let value = number("others", "stale_after") { thresholds.staleAfter = value }
        return thresholds
    }
}
