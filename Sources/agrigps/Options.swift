import ArgumentParser
import Foundation
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
