import ChildProcesses
import Foundation
import GPSDReplay
import TestSupport
import Testing

/// The udev rules, read by udevadm itself: in a private mount namespace a tmpfs over
/// /run/udev/rules.d holds them, and `udevadm test` parses every rules file and names bad lines.
@Suite("udev rules", .serialized, .timeLimit(.minutes(1)))
struct UdevRulesTests {
    static let rules = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("udev/61-agrigps.rules").path

    func udevadmTest(_ rules: String) async throws -> String {
        let scratch = TemporaryDirectory("udevadm")
        let output = scratch.file("udevadm.out")
        let script = """
            set -e
            mkdir -p /run/udev/rules.d
            mount -t tmpfs agrigps-test /run/udev/rules.d
            cp '\(rules)' /run/udev/rules.d/61-agrigps.rules
            udevadm test --action=add /sys/class/tty/console 2>&1
            """
        let process = try ChildProcess(
            executable: "/usr/bin/unshare",
            arguments: ["--mount", "--propagation", "private", "/bin/sh", "-c", script],
            environment: ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"], outputPath: output, errorPath: output)
        let code = await process.wait(timeout: 30)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(code == 0, "\(text.suffix(500))")
        return text
    }

    @Test("udevadm reads the rules and finds no bad line")
    func parses() async throws {
        let output = try await udevadmTest(Self.rules)
        let ours = output.split(separator: "\n").filter { $0.contains("61-agrigps.rules") }
        #expect(ours.contains { $0.contains("Reading rules file") }, "udevadm read the file")
        #expect(ours.filter { !$0.contains("Reading rules file") }.isEmpty, "\(ours)")
    }

    @Test("a broken copy is caught, so the check above can fail")
    func catchesMistakes() async throws {
        let scratch = TemporaryDirectory("broken")
        let broken = scratch.file("broken.rules")
        let text = try String(contentsOfFile: Self.rules, encoding: .utf8) + "ATTRS{idVendor}=\"1546\"\n"
        try text.write(toFile: broken, atomically: true, encoding: .utf8)
        let output = try await udevadmTest(broken)
        #expect(output.contains("61-agrigps.rules") && output.contains("Invalid operator"), "\(output.suffix(300))")
    }

    @Test("each receiver family gets the symlink and ModemManager's ignore flag; gpsd keeps the hot-plug")
    func content() throws {
        let text = try String(contentsOfFile: Self.rules, encoding: .utf8)
        for pair in [
            "1546\", ATTRS{idProduct}==\"01a8", "067b\", ATTRS{idProduct}==\"2303", "10c4\", ATTRS{idProduct}==\"ea60",
            "0403\", ATTRS{idProduct}==\"6001",
        ] {
            #expect(text.contains("ATTRS{idVendor}==\"\(pair)\""), "\(pair)")
        }
        #expect(text.contains("SYMLINK+=\"agrigps-gnss\"") && text.contains("ENV{ID_MM_DEVICE_IGNORE}=\"1\""))
        // Only FTDI, which Debian's gpsd rules leave out, gets a gpsdctl want here; the rest already have one.
        let wants = text.split(separator: "\n").filter { !$0.hasPrefix("#") && $0.contains("gpsdctl@") }
        #expect(wants.count == 1 && wants.first?.contains("0403") == true)
    }
}
