import ChildProcesses
import Foundation
import StateDirectory
import TestSupport
import Testing

/// A spool the daemon can read but not write (immutable, so that not even root writes it): what
/// failed is the spool, and the heartbeat, status and the daemon's log say so, not agrirouter.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ReadOnlySpoolTests {
    @Test("a read-only spool is reported as a spool fault, not as agrirouter's")
    func readOnlySpool() async throws {
        try #require(getuid() == 0, "chattr +i needs root (as CI has)")
        let onboarded = try await OnboardedMachine.make()
        let spool = onboarded.state + "/spool.sqlite"
        try await tearingDown({
            _ = try? await SystemTool.run("/usr/bin/chattr", ["-i", spool])
            await onboarded.close()
        }) {
            // A first run makes the spool and stops cleanly, then the spool is frozen.
            let first = try AgrigpsCommand([
                "run", "--replay", Fixtures.log("bu353s4"), "--retime", "--state-dir", onboarded.state,
            ])
            try await waitForHeartbeat(in: onboarded.state) { $0.spoolRowID != nil }
            kill(first.process.pid, SIGTERM)
            #expect(await first.process.wait(timeout: 10) == 143)
            first.cleanUp()
            let frozen = try await SystemTool.run("/usr/bin/chattr", ["+i", spool])
            try #require(frozen.code == 0, "chattr +i: \(frozen.output)")

            let daemon = try AgrigpsCommand([
                "run", "--replay", Fixtures.log("bu353s4"), "--retime", "--state-dir", onboarded.state,
            ])
            defer {
                if daemon.process.isRunning() { daemon.process.terminate(grace: 2) }
                daemon.cleanUp()
            }
            try await waitForHeartbeat(in: onboarded.state) { $0.lastError != nil && $0.spool?.storageFault != nil }
            let heartbeat = try #require(Heartbeat.read(from: onboarded.state + "/heartbeat.json"))
            let lastError = heartbeat.lastError ?? ""
            #expect(lastError.contains("spool"), "\(lastError)")
            #expect(!lastError.contains("agrirouter") && !lastError.contains("connection"), "\(lastError)")

            let status = try await AgrigpsCommand.run(["status", "--state-dir", onboarded.state])
            let text = status.stdout.joined(separator: "\n")
            #expect(status.stdout.first?.hasPrefix("WARNING: the spool cannot store: ") == true, "\(text)")
            #expect(status.stdout.first?.contains("readonly") == true, "\(text)")
            #expect(!(status.stdout.first ?? "").contains("agrirouter"), "\(text)")
        }
    }
}
