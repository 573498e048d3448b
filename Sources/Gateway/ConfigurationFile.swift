import Foundation
import GNSS
import TOMLKit

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

/// `/etc/agrigps/agrigps.conf`, in TOML. Every key is optional; command-line flags override it.
///
/// ```toml
/// [gpsd]
/// address = "127.0.0.1:2947"
/// [sampling]
/// interval = 1                 # seconds
/// [sending]
/// interval = 10                # seconds between send cycles without a backlog
/// spacing = 5                  # least seconds between requests (default: 10 on QA, 5 in production)
/// [agrirouter]
/// environment = "qa"           # qa or production, for onboarding
/// application_id = "…"
/// certification_version_id = "…"
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
/// ```
public struct ConfigurationFile: Sendable, Equatable {
    public enum Value: Sendable, Equatable {
        case number(Double)
        case text(String)
    }

    enum Kind: Sendable {
        case number(ClosedRange<Double>, unit: String)
        case integer(ClosedRange<Int>)
        case choice([String])
        case text
        case address
    }

    struct Key: Sendable {
        var section: String
        var name: String
        var kind: Kind
    }

    static let keys: [Key] = [
        Key(section: "gpsd", name: "address", kind: .address),
        Key(section: "sampling", name: "interval", kind: .number(0.1...3600, unit: "seconds")),
        Key(section: "sending", name: "interval", kind: .number(1...3600, unit: "seconds")),
        Key(section: "sending", name: "spacing", kind: .number(0...600, unit: "seconds")),
        Key(section: "agrirouter", name: "environment", kind: .choice(["qa", "production"])),
        Key(section: "agrirouter", name: "application_id", kind: .text),
        Key(section: "agrirouter", name: "certification_version_id", kind: .text),
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
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8) else {
            throw ConfigurationError(path: path, key: "", problem: "cannot be read as UTF-8 text; check its permissions")
        }
        return try parse(text, path: path)
    }

    public static func parse(_ text: String, path: String) throws(ConfigurationError) -> ConfigurationFile {
        let table: TOMLTable
        do {
            table = try TOMLTable(string: text)
        } catch let error as TOMLParseError {
            throw ConfigurationError(path: path, key: "", problem: "not valid TOML at line \(error.source.begin.line): \(error.description)")
        } catch {
            throw ConfigurationError(path: path, key: "", problem: "not valid TOML: \(error)")
        }
        var file = ConfigurationFile(path: path)
        let sections = Array(Set(keys.map(\.section))).sorted()
        for sectionName in table.keys.sorted() {
            guard sections.contains(sectionName) else {
                throw ConfigurationError(path: path, key: "[\(sectionName)]",
                                         problem: "unknown section; the sections are \(sections.map { "[\($0)]" }.joined(separator: ", "))")
            }
            guard let section = table[sectionName]?.table else {
                throw ConfigurationError(path: path, key: sectionName, problem: "must be a section, [\(sectionName)]")
            }
            let known = keys.filter { $0.section == sectionName }
            for name in section.keys.sorted() {
                guard let key = known.first(where: { $0.name == name }) else {
                    throw ConfigurationError(path: path, key: "[\(sectionName)] \(name)",
                                             problem: "unknown key; [\(sectionName)] takes \(known.map(\.name).joined(separator: ", "))")
                }
                file.values["\(sectionName).\(name)"] = try value(section[name], for: key, path: path)
            }
        }
        try file.checkThresholds()
        return file
    }

    private static func value(_ raw: TOMLValueConvertible?, for key: Key, path: String) throws(ConfigurationError) -> Value {
        let label = "[\(key.section)] \(key.name)"
        let shown = raw.map { "\($0)" } ?? "nothing"
        func refuse(_ allowed: String) -> ConfigurationError {
            ConfigurationError(path: path, key: label, problem: "must be \(allowed), got \(shown)")
        }
        switch key.kind {
        case .number(let range, let unit):
            guard let number = raw?.double ?? raw?.int.map(Double.init), range.contains(number) else {
                throw refuse("a number of \(unit) from \(Self.format(range.lowerBound)) to \(Self.format(range.upperBound))")
            }
            return .number(number)
        case .integer(let range):
            guard let number = raw?.int, range.contains(number) else {
                throw refuse("a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return .number(Double(number))
        case .choice(let choices):
            guard let text = raw?.string, choices.contains(text) else {
                throw refuse(choices.map { "\"\($0)\"" }.joined(separator: " or "))
            }
            return .text(text)
        case .text:
            guard let text = raw?.string, !text.trimmingCharacters(in: .whitespaces).isEmpty else { throw refuse("a non-empty string") }
            return .text(text)
        case .address:
            guard let text = raw?.string else { throw refuse("a string \"host:port\"") }
            do {
                _ = try GPSDAddress(parsing: text)
            } catch {
                throw ConfigurationError(path: path, key: label, problem: error.description)
            }
            return .text(text)
        }
    }

    /// A warning threshold must come before its critical one, the defaults included.
    private func checkThresholds() throws(ConfigurationError) {
        let merged = thresholds
        for (warning, critical, low, high) in [("fix_age_warning", "fix_age_critical", merged.fixAgeWarning, merged.fixAgeCritical),
                                               ("queue_age_warning", "queue_age_critical", merged.queueAgeWarning, merged.queueAgeCritical)]
        where low >= high {
            throw ConfigurationError(path: path, key: "[status] \(warning)",
                                     problem: "must be less than [status] \(critical) (\(Self.format(high))), got \(Self.format(low))")
        }
    }

    private static func format(_ number: Double) -> String {
        number == number.rounded() ? String(Int(number)) : String(number)
    }

    public func number(_ section: String, _ name: String) -> Double? {
        if case .number(let value) = values["\(section).\(name)"] { return value }
        return nil
    }

    public func text(_ section: String, _ name: String) -> String? {
        if case .text(let value) = values["\(section).\(name)"] { return value }
        return nil
    }

    /// The status thresholds, the file's where it sets them.
    public var thresholds: StatusThresholds {
        var thresholds = StatusThresholds()
        if let value = number("status", "heartbeat_limit") { thresholds.heartbeatLimit = value }
        if let value = number("status", "fix_age_warning") { thresholds.fixAgeWarning = value }
        if let value = number("status", "fix_age_critical") { thresholds.fixAgeCritical = value }
        if let value = number("status", "queue_age_warning") { thresholds.queueAgeWarning = value }
        if let value = number("status", "queue_age_critical") { thresholds.queueAgeCritical = value }
        if let value = number("others", "stale_after") { thresholds.staleAfter = value }
        return thresholds
    }
}
