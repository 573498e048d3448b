import Foundation
import TestSupport
import Testing

/// What reaches the disk before a call returns, seen from outside: strace follows the exerciser's
/// system calls, and the steps it prints (writes to standard output) tell which step synced.
@Suite(.timeLimit(.minutes(2)))
struct SpoolSyncTests {
    @Test(
        "a take and an acknowledgement are synced before they return: a power cut after either sends nothing twice; a take riding an append shares its sync"
    )
    func takesAndAcknowledgementsAreSynced() async throws {
        let scratch = TemporaryDirectory("spool")
        let strace = "/usr/bin/strace"
        try #require(FileManager.default.isExecutableFile(atPath: strace), "no strace: run script/bootstrap")
        let result = try await SystemTool.run(
            strace,
            [
                "-f", "-e", "trace=fsync,fdatasync,write", "-e", "signal=none",
                SpoolCrashTests.exerciser, "sync-steps", scratch.spoolPath,
            ])
        #expect(result.code == 0, "\(result.output.suffix(2_000))")
        // Syncs between one step's announcement and the next's.
        var syncs: [String: Int] = [:]
        var step: String?
        for line in result.output.split(separator: "\n") {
            if let said = ["append", "take", "acknowledge", "ride", "done"].first(where: {
                line.contains("write(1, \"\($0)\\n\"")
            }) {
                step = said
                continue
            }
            if let step, line.contains("fsync(") || line.contains("fdatasync(") { syncs[step, default: 0] += 1 }
        }
        #expect(syncs["append", default: 0] >= 3, "every append is synced: \(syncs)")
        #expect(syncs["take", default: 0] >= 1, "the take is synced before it returns: \(syncs)")
        #expect(syncs["acknowledge", default: 0] >= 1, "the acknowledgement is synced before it returns: \(syncs)")
        // A take riding an append shares its sync: no more syncs than one append alone.
        #expect(
            syncs["ride", default: 0] >= 1 && syncs["ride", default: 0] * 3 <= syncs["append", default: 0],
            "the riding take and its append sync once: \(syncs)")
        #expect(
            result.output.contains("rode [4]"),
            "the riding take carries the append it rode: \(result.output.suffix(300))")
    }
}
