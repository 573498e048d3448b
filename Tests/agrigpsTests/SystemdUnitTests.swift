import Foundation
import GPSDReplay
import Testing
import TestSupport

/// The shipped unit, checked by systemd's own analyser (installed by script/bootstrap with systemd).
@Suite("systemd unit", .serialized, .timeLimit(.minutes(1)))
struct SystemdUnitTests {
    static let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("systemd/agrigps.service").path

    /// The unit with ExecStart pointing at the built binary, since verify checks that it exists.
    func installedCopy() throws -> (directory: String, unit: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("agrigps-unit-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        #expect(text.contains("ExecStart=/usr/bin/agrigps run"))
        let unit = directory + "/agrigps.service"
        try text.replacingOccurrences(of: "ExecStart=/usr/bin/agrigps", with: "ExecStart=\(AgrigpsCommand.path)")
            .write(toFile: unit, atomically: true, encoding: .utf8)
        return (directory, unit)
    }

    func analyze(_ arguments: [String], in directory: String) throws -> (code: Int32?, output: String) {
        let output = directory + "/analyze.out"
        let process = try ChildProcess(executable: "/usr/bin/systemd-analyze", arguments: arguments,
                                       environment: ["PATH": "/usr/bin:/bin", "SYSTEMD_LOG_COLOR": "0"], outputPath: output, errorPath: output)
        let code = process.wait(timeout: 30)
        return (code, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }

    @Test("systemd-analyze verify finds nothing to complain about")
    func verify() throws {
        let (directory, unit) = try installedCopy()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try analyze(["verify", unit], in: directory)
        #expect(result.code == 0 && result.output.isEmpty, "\(result.output)")
    }

    @Test("systemd-analyze security rates the exposure 2.0 or lower")
    func security() throws {
        let (directory, unit) = try installedCopy()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = try analyze(["security", "--offline=true", "--no-pager", unit], in: directory)
        #expect(result.code == 0)
        let line = try #require(result.output.split(separator: "\n").first { $0.contains("Overall exposure level") })
        // "→ Overall exposure level for agrigps.service: 1.2 OK :-)"
        let exposure = try #require(line.components(separatedBy: ".service: ").last?.split(separator: " ").first.flatMap { Double($0) })
        #expect(exposure <= 2.0, "\(line)")
    }

    @Test("the unit asks for what the daemon does: notify, watchdog, restart, gpsd and the network")
    func settings() throws {
        let text = try String(contentsOfFile: Self.unit, encoding: .utf8)
        let settings = Set(text.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("#") && $0.contains("=") })
        for expected in ["Type=notify", "WatchdogSec=60", "Restart=always", "RestartSec=5", "User=agrigps", "StateDirectory=agrigps",
                         "ConfigurationDirectory=agrigps", "Wants=gpsd.socket network-online.target", "PrivateDevices=yes",
                         "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6", "SystemCallFilter=@system-service", "NoNewPrivileges=yes",
                         "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes"] {
            #expect(settings.contains(expected), "\(expected)")
        }
    }
}
