import ArgumentParser
import Foundation
import Gateway
import GNSS

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

    /// The flag's value if it was given, else the file's, else `fallback`.
    static func value(_ flag: String, _ text: String?, section: String, name: String, file: ConfigurationFile, fallback: Double) throws -> Double {
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

/// Where the daemon keeps its state: systemd's $STATE_DIRECTORY, or --state-dir.
struct StateDirectoryOption: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: ArgumentHelp("State directory (credentials, spool, other machines).", valueName: "path"))
    var path: String?

    var resolved: String {
        path ?? ProcessInfo.processInfo.environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init) ?? "/var/lib/agrigps"
    }

    var spoolPath: String { resolved + "/spool.sqlite" }
    var othersPath: String { resolved + "/others.sqlite" }
    var heartbeatPath: String { resolved + "/heartbeat.json" }
}

/// The configuration file: --config, else $CONFIGURATION_DIRECTORY/agrigps.conf (systemd), else
/// /etc/agrigps/agrigps.conf. Only a file named with --config must exist.
struct ConfigurationOption: ParsableArguments {
    @Option(name: .customLong("config"), help: ArgumentHelp("Configuration file (TOML; default /etc/agrigps/agrigps.conf).", valueName: "path"))
    var path: String?

    var resolved: String {
        path ?? ProcessInfo.processInfo.environment["CONFIGURATION_DIRECTORY"]?.split(separator: ":").first.map { "\($0)/agrigps.conf" }
            ?? "/etc/agrigps/agrigps.conf"
    }

    func load() throws -> ConfigurationFile {
        do {
            return try ConfigurationFile.load(path: resolved, required: path != nil)
        } catch {
            throw CommandFailure(description: error.description, exitCode: 78)  // EX_CONFIG
        }
    }
}
