import ChildProcesses
import Foundation
import GPSDReplay
import Spool
import TestSupport
import Testing

/// `agrigps run` on a disk that really fills up: a 4 MiB tmpfs over the state directory, in a mount
/// namespace of the test's own (`unshare -m`), filled by a loop that keeps it full.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct DiskFullTests {
    /// The whole run, inside the namespace: full for 6 s (status), space freed (status), full again
    /// until samples are held in memory, then SIGTERM. The spool is copied out before the namespace,
    /// and its tmpfs, go away.
    static let script = #"""
        set -u
        bin="$1" log="$2" state="$3" out="$4"
        mount -t tmpfs -o size=4m tmpfs "$state" || exit 90
        fill() { touch "$out/full"; ( i=0; while [ -e "$out/full" ]; do dd if=/dev/zero of="$state/filler$i" bs=4k 2>/dev/null; i=$((i+1)); sleep 0.05; done ) & filler=$!; }
        unfill() { rm "$out/full"; wait "$filler"; rm -f "$state"/filler*; }
        "$bin" run --replay "$log" --retime --state-dir "$state" > "$out/run.out" 2> "$out/run.err" &
        daemon=$!
        sleep 3; fill; sleep 6
        "$bin" status --json --state-dir "$state" > "$out/full.json"
        unfill; sleep 6
        "$bin" status --json --state-dir "$state" > "$out/freed.json"
        # Until the daemon holds samples in memory (20 s at most): what the freed disk let the spool's
        # write-ahead log keep can take a few more commits before a write fails.
        fill; tries=0
        until "$bin" status --json --state-dir "$state" | grep -Eq '"held_in_memory":[1-9]' || [ "$tries" -ge 40 ]; do
            sleep 0.5; tries=$((tries+1))
        done
        sleep 2
        kill -TERM "$daemon"; wait "$daemon"; echo "$?" > "$out/run.code"
        unfill
        cp "$state"/spool.sqlite* "$out/"
        """#

    @Test(
        "full: status says so and samples wait in memory; freed: they are written; full at SIGTERM: the loss is counted exactly"
    )
    func diskFull() async throws {
        let scratch = TemporaryDirectory("diskfull")
        let directory = scratch.path
        let state = directory + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        try Self.script.write(toFile: directory + "/run.sh", atomically: true, encoding: .utf8)
        let child = try ChildProcess(
            executable: "/usr/bin/unshare",
            arguments: [
                "-m", "--propagation", "private", "bash", directory + "/run.sh",
                AgrigpsCommand.path, Fixtures.log("telit-he910"), state, directory,
            ],
            environment: ProcessInfo.processInfo.environment,
            outputPath: directory + "/script.out", errorPath: directory + "/script.err")
        defer { child.terminate(grace: 1) }
        // The script sleeps about 20 s and waits up to 20 s more; on a loaded machine its status
        // calls and the daemon's stop take longer, so it gets twice that and more.
        let code = await child.wait(timeout: 120)
        let scriptErrors = (try? String(contentsOfFile: directory + "/script.err", encoding: .utf8)) ?? ""
        try #require(
            code == 0,
            "this test needs a private mount namespace (root, or unprivileged user namespaces): \(scriptErrors)")

        // Full: CRITICAL, with the reason and what it means.
        let full = try Self.json(directory + "/full.json")
        #expect(full["health"] as? String == "CRITICAL")
        #expect((full["disk_free_bytes"] as? Int).map { $0 < 1 << 20 } == true)
        #expect(
            (full["reasons"] as? [String])?.contains { $0.contains("is full") && $0.contains("held in memory") }
                == true, "\(full)")

        // Freed: the samples held meanwhile are in the spool, and the disk is no longer a reason.
        let freed = try Self.json(directory + "/freed.json")
        #expect((freed["reasons"] as? [String])?.contains { $0.contains("is full") } == false, "\(freed)")
        let freedSpool = try #require(freed["spool"] as? [String: Any])
        #expect(freedSpool["held_in_memory"] as? Int == 0)

        // Full at SIGTERM: what the spool has plus what the summary counts as lost is every sample taken.
        let summary = try #require(try Fixtures.lines(of: directory + "/run.out").last)
        #expect(
            try String(contentsOfFile: directory + "/run.code", encoding: .utf8).trimmingCharacters(
                in: .whitespacesAndNewlines) == "143")
        let taken = try #require(Self.number(before: " samples taken", in: summary), "\(summary)")
        let lost = try #require(Self.number(before: " samples held in memory LOST", in: summary), "\(summary)")
        #expect(summary.contains("disk is full"), "\(summary)")
        let stored = try await Spool(path: directory + "/spool.sqlite").allSamples().count
        #expect(lost > 0 && stored > 10, "stored \(stored), lost \(lost)")
        #expect(stored + lost == taken, "stored \(stored) + lost \(lost) != taken \(taken): \(summary)")
        let freedPending = try #require(freedSpool["pending"] as? Int)
        #expect(freedPending >= 12, "the samples held during the first fill were written: \(freedPending) in the spool")
    }

    private static func json(_ path: String) throws -> [String: Any] {
        try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
    }

    /// The whole number just before `marker` in `line`.
    private static func number(before marker: String, in line: String) -> Int? {
        guard let range = line.range(of: marker) else { return nil }
        return Int(String(line[..<range.lowerBound].reversed().prefix { $0.isNumber }.reversed()))
    }
}
