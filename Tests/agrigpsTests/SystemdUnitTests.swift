import ChildProcesses
import Foundation
import GPSDReplay
import TestSupport
import Testing

/// The shipped units (the daemon's and the cab view's), checked by systemd's own analyser (installed
/// by script/bootstrap with systemd).
@Suite("systemd units", .serialized, .timeLimit(.minutes(1)))
struct SystemdUnitTests {
    static let units = ["agrigps.service", "agrigps-web.service"]

    static func path(of name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("systemd/\(name)").path
    }

    static let unit = path(of: "agrigps.service")

    /// The unit with ExecStart pointing at the built binary, since verify checks that it exists.
    func installedCopy(_ name: String = "agrigps.service", in scratch: TemporaryDirectory) throws -> (
        directory: String, unit: String
    ) {
        let directory = scratch.path
        let text = try String(contentsOfFile: Self.path(of: name), encoding: .utf8)
        #expect(
            text.contains(
                name == "agrigps.service" ? "ExecStart=/usr/bin/agrigps run" : "ExecStart=/usr/bin/agrigps-web"))
        let unit = directory + "/" + name
        try text.replacingOccurrences(of: "ExecStart=/usr/bin/agrigps", with: "ExecStart=\(AgrigpsCommand.path)")
            .write(toFile: unit, atomically: true, encoding: .utf8)
        return (directory, unit)
    }

    func analyze(_ arguments: [String], in directory: String) async throws -> (code: Int32?, output: String) {
        try await SystemTool.run(
            "/usr/bin/systemd-analyze", arguments, environment: ["PATH": "/usr/bin:/bin", "SYSTEMD_LOG_COLOR": "0"],
            timeout: 30)
    }

    @Test("systemd-analyze verify finds nothing to complain about", arguments: units)
    func verify(_ name: String) async throws {
        let scratch = TemporaryDirectory("unit")
        let (directory, unit) = try installedCopy(name, in: scratch)
        let result = try await analyze(["verify", unit], in: directory)
        #expect(result.code == 0 && result.output.isEmpty, "\(result.output)")
    }

    @Test("systemd-analyze security rates the exposure 2.0 or lower", arguments: units)
    func security(_ name: String) async throws {
        let scratch = TemporaryDirectory("unit")
        let (directory, unit) = try installedCopy(name, in: scratch)
        let result = try await analyze(["security", "--offline=true", "--no-pager", unit], in: directory)
        #expect(result.code == 0)
        let line = try #require(result.output.split(separator: "\n").first { $0.contains("Overall exposure level") })
        // "→ Overall exposure level for agrigps.service: 1.2 OK :-)"
        let exposure = try #require(
            line.components(separatedBy: ".service: ").last?.split(separator: " ").first.flatMap { Double($0) })
        #expect(exposure <= 2.0, "\(line)")
    }

    @Test("the unit asks for what the daemon does: notify, watchdog, restart, gpsd and the network")
    func settings() throws {
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        let settings = Set(
            text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && $0.contains("=") })
        for expected in [
            "Type=notify", "WatchdogSec=60", "Restart=always", "RestartSec=5", "User=agrigps", "StateDirectory=agrigps",
            "ConfigurationDirectory=agrigps", "Wants=gpsd.socket network-online.target", "PrivateDevices=yes",
            "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_CAN", "SystemCallFilter=@system-service",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes",
        ] {
            #expect(settings.contains(expected), "\(expected)")
        }
    }

    @Test("the cab view's unit runs as the daemon's user, in its group and state directory, hardened alike")
    func webSettings() throws {
        let text = try String(contentsOfFile: Self.path(of: "agrigps-web.service"), encoding: .utf8)
        let settings = Set(
            text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && $0.contains("=") })
        let daemon = Set(
            try String(contentsOfFile: Self.unit, encoding: .utf8).split(separator: "\n").map(String.init)
                .filter {
                    !$0.hasPrefix("#")
                        && ($0.hasPrefix("Protect") || $0.hasPrefix("Private") || $0.hasPrefix("Restrict")
                            || $0.hasPrefix("SystemCall") || $0.hasPrefix("Capability"))
                })
        for expected in [
            "User=agrigps", "Group=agrigps", "StateDirectory=agrigps", "ConfigurationDirectory=agrigps", "UMask=0077",
            "ExecStart=/usr/bin/agrigps-web", "Restart=on-failure",
        ] {
            #expect(settings.contains(expected), "\(expected)")
        }
        // The page opens no CAN socket: its families are the daemon's but AF_CAN.
        let missing = daemon.subtracting(settings).filter { !$0.hasPrefix("RestrictAddressFamilies=") }
        #expect(missing.isEmpty, "hardened like the daemon: \(missing)")
        #expect(settings.contains("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6"))
    }
}
