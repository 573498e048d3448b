import ArgumentParser
import Foundation
import StateDirectory

/// Where the daemon keeps its state: systemd's $STATE_DIRECTORY, or --state-dir.
public struct StateDirectoryOption: ParsableArguments, Sendable {
    public init() {}

    @Option(
        name: .customLong("state-dir"),
        help: ArgumentHelp("State directory (credentials, spool, other machines).", valueName: "path"))
    public var path: String?

    public var resolved: String {
        path ?? ProcessInfo.processInfo.environment["STATE_DIRECTORY"]?.split(separator: ":").first.map(String.init)
            ?? "/var/lib/agrigps"
    }

    public var spoolPath: String { resolved + "/spool.sqlite" }
    public var othersPath: String { resolved + "/others.sqlite" }
    public var heartbeatPath: String { resolved + "/heartbeat.json" }
    public var trackPath: String { resolved + "/track.sqlite" }
}

/// The configuration file: --config, else $CONFIGURATION_DIRECTORY/agrigps.conf (systemd), else
/// /etc/agrigps/agrigps.conf. Only a file named with --config must exist.
public struct ConfigurationOption: ParsableArguments, Sendable {
    public init() {}

    @Option(
        name: .customLong("config"),
        help: ArgumentHelp("Configuration file (TOML; default /etc/agrigps/agrigps.conf).", valueName: "path"))
    public var path: String?

    public var resolved: String {
        path ?? ProcessInfo.processInfo.environment["CONFIGURATION_DIRECTORY"]?.split(separator: ":").first.map {
            "\($0)/agrigps.conf"
        }
            ?? "/etc/agrigps/agrigps.conf"
    }

    public func load() throws -> ConfigurationFile {
        do {
            return try ConfigurationFile.load(path: resolved, required: path != nil)
        } catch {
            throw CommandFailure(description: error.description, exitCode: 78)  // EX_CONFIG
        }
    }
}
