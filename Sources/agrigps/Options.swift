import ArgumentParser
import Foundation
import GNSS
import StateDirectory

/// A flag that stands for a key of the configuration file (`--interval` for [sampling] interval):
/// checked by that key's rule, so the flag and the file can never disagree on what is allowed.
enum KeyedFlag {
    static func value(_ flag: String, _ text: String, section: String, name: String) throws -> Double {
        do {
            return try ConfigurationFile.checkFlag(flag, text, section: section, name: name)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// A flag whose key takes text (a time zone, say), by the same rule.
    static func text(_ flag: String, _ text: String, section: String, name: String) throws -> String {
        do {
            return try ConfigurationFile.checkTextFlag(flag, text, section: section, name: name)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// A flag whose key takes a list, comma-separated on the command line, by the same rule.
    static func list(_ flag: String, _ text: String, section: String, name: String) throws -> [String] {
        do {
            return try ConfigurationFile.checkListFlag(flag, text, section: section, name: name)
        } catch {
            throw ValidationError(error.description)
        }
    }

    /// The flag's value if it was given, else the file's, else `fallback`.
    static func value(
        _ flag: String, _ text: String?, section: String, name: String, file: ConfigurationFile, fallback: Double
    ) throws -> Double {
        if let text { return try value(flag, text, section: section, name: name) }
        return file.number(section, name) ?? fallback
    }
}

/// The sampling interval as typed: seconds, by the rule of [sampling] interval (1, 5, 10 or 20 are usual).
struct IntervalOption {
    static func parse(_ text: String) throws -> Double {
        try KeyedFlag.value("--interval", text, section: "sampling", name: "interval")
    }
}

extension GPSDAddress {
    static func parseOption(_ text: String) throws -> GPSDAddress {
        do {
            return try GPSDAddress(parsing: text)
        } catch {
            throw ValidationError("--gpsd: \(error.description)")
        }
    }
}
