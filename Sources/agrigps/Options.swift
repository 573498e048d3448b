import ArgumentParser
import Foundation
import Gateway
import GNSS

/// The sampling interval as typed: a positive number of seconds (1, 5, 10 or 20 are usual).
struct IntervalOption {
    static func parse(_ text: String) throws -> Double {
        guard let seconds = Double(text), seconds.isFinite else {
            throw ValidationError("--interval must be a number of seconds, got '\(text)'")
        }
        guard seconds > 0 else {
            throw ValidationError("--interval must be greater than zero, got '\(text)'")
        }
        return seconds
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
