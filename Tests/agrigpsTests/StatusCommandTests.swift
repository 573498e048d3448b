import ChildProcesses
import Foundation
import GPSDReplay
import Spool
import StateDirectory
import TestSupport
import Testing

@Suite("agrigps status against a daemon", .serialized, .timeLimit(.minutes(2)))
struct StatusCommandTests {
    @Test(
        "a running daemon is reported with its problems; SIGTERM ends it within 5 s with the spool intact; then status is CRITICAL"
    )
    func runningThenStopped() async throws {
        let scratch = TemporaryDirectory("status")
        let state = scratch.file("state")
        // Nothing listens on this port: the daemon samples gpsd_unreachable, as on a box whose gpsd is down.
        let port = try ReplayGPSD.freeLoopbackPort()
        let daemon = try AgrigpsCommand([
            "run", "--gpsd", "127.0.0.1:\(port)", "--interval", "0.2", "--state-dir", state,
        ])
        defer {
            if daemon.process.isRunning() { daemon.process.terminate(grace: 1) }
            daemon.cleanUp()
        }
        try await waitForHeartbeat(in: state) { $0.lastSample != nil }

        // gpsd unreachable is what the cab view shows red: CRITICAL at once, with what to do, ahead of
        // the warnings (it was a WARNING, "not onboarded; no fix yet", while the page said act now).
        let status = try await AgrigpsCommand.run(["status", "--state-dir", state])
        #expect(status.code == 2, "\(status.stdout)")
        #expect(
            status.stdout.first
                == "CRITICAL: gpsd unreachable, so no position is taken; check that gpsd runs: systemctl status gpsd; "
                + "not onboarded; no fix yet")
        #expect(status.stdout.contains { $0.hasPrefix("Daemon: running (pid \(daemon.process.pid)") })
        #expect(status.stdout.contains { $0.hasPrefix("Fix: gpsd_unreachable, ") })
        #expect(status.stdout.contains("Sharing: active"))
        // Not onboarded, it never talks to agrirouter: libcurl, libmosquitto and their TLS libraries
        // are not even mapped.
        for name in ["libcurl", "libgnutls", "libmosquitto", "libssl", "libcrypto"] {
            #expect(!daemon.hasMapped(name), "a daemon that is not onboarded mapped \(name)")
        }
        let json = try await AgrigpsCommand.run(["status", "--json", "--state-dir", state])
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [String: Any])
        #expect(object["health"] as? String == "CRITICAL" && object["exit_code"] as? Int == 2)
        #expect(json.code == 2)

        let stopping = Date()
        kill(daemon.process.pid, SIGTERM)
        let code = await daemon.process.wait(timeout: 10)
        #expect(code == 143, "SIGTERM ends it with 128 + 15, as the README promises")
        #expect(Date().timeIntervalSince(stopping) < 5, "stopped within 5 s")
        let taken = try #require(
            daemon.stdout.last.flatMap { line in
                line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            }, "\(daemon.stdout)")
        let spool = Spool(path: state + "/spool.sqlite")
        let spoolStatus = await spool.status()
        #expect(spoolStatus.storageFault == nil)
        #expect(try await spool.allSamples().count == taken, "every sample the daemon counted is in the spool")
        #expect(spoolStatus.pending == taken)

        let after = try await AgrigpsCommand.run(["status", "--state-dir", state])
        #expect(after.code == 2)
        #expect(after.stdout.first?.hasPrefix("CRITICAL: daemon not running") == true)
    }

    @Test("a state directory that does not exist is UNKNOWN, exit 3; so is a broken configuration file")
    func unknown() async throws {
        let missing = try await AgrigpsCommand.run(["status", "--state-dir", "/nonexistent/agrigps"])
        #expect(missing.code == 3)
        #expect(missing.stdout.first == "UNKNOWN: no state directory at /nonexistent/agrigps")
        let scratch = TemporaryDirectory("config")
        let config = scratch.file("agrigps.conf")
        try "[status]\nheartbeat_limit = \"soon\"\n".write(toFile: config, atomically: true, encoding: .utf8)
        let broken = try await AgrigpsCommand.run(["status", "--config", config, "--state-dir", "/tmp"])
        #expect(broken.code == 3)
        #expect(
            broken.stdout.first?.hasPrefix("UNKNOWN: \(config): [status] heartbeat_limit: must be a number of seconds")
                == true)
    }
}

@Suite("agrigps status without root", .serialized, .timeLimit(.minutes(1)))
struct StatusWithoutRootTests {
    @Test("a member of the daemon's group reads status from the heartbeat, with the databases closed to it")
    func groupMember() async throws {
        try #require(getuid() == 0, "the test switches users, which needs root (as CI has)")
        let scratch = TemporaryDirectory("group")
        let state = scratch.path
        // As systemd sets it up: the daemon's directory, its group may enter; new files take that group.
        let group: gid_t = 4242
        #expect(chown(state, 0, group) == 0 && chmod(state, 0o2750) == 0)
        let port = try ReplayGPSD.freeLoopbackPort()
        let daemon = try AgrigpsCommand([
            "run", "--gpsd", "127.0.0.1:\(port)", "--interval", "0.2", "--state-dir", state,
        ])
        defer {
            if daemon.process.isRunning() { daemon.process.terminate(grace: 1) }
            daemon.cleanUp()
        }
        try await waitForHeartbeat(in: state) { $0.lastSample != nil }
        // The databases are the daemon's alone (UMask=0077 under systemd).
        for name in try FileManager.default.contentsOfDirectory(atPath: state) where name.contains(".sqlite") {
            chmod(state + "/" + name, 0o600)
        }
        let output = state + "/status.out"
        let status = try ChildProcess(
            executable: "/usr/bin/setpriv",
            arguments: [
                "--reuid", "65534", "--regid", "65534", "--groups", "\(group)", AgrigpsCommand.path,
                "status", "--state-dir", state,
            ],
            environment: ["PATH": "/usr/bin:/bin"], outputPath: output, errorPath: output + ".err")
        let code = await status.wait(timeout: 20)
        let lines = try String(contentsOfFile: output, encoding: .utf8).split(separator: "\n").map(String.init)
        let errors = try String(contentsOfFile: output + ".err", encoding: .utf8)
        // gpsd unreachable: CRITICAL, as the cab view's red (see `runningThenStopped`).
        #expect(code == 2, "\(lines) \(errors)")
        #expect(lines.first?.hasPrefix("CRITICAL: gpsd unreachable, so no position is taken") == true, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("Daemon: running (pid \(daemon.process.pid)") })
        #expect(lines.contains { $0.hasPrefix("Spool: ") && $0.contains("pending") })
        #expect(errors.isEmpty, "\(errors)")
        let mode =
            try FileManager.default.attributesOfItem(atPath: state + "/heartbeat.json")[.posixPermissions] as? Int
        #expect(mode == 0o640)
    }

    @Test("a second daemon on the same state directory exits at once with 75 and names the first; the first runs on")
    func oneDaemonPerStateDirectory() async throws {
        let scratch = TemporaryDirectory("lock")
        let state = scratch.file("state")
        let port = try ReplayGPSD.freeLoopbackPort()
        let first = try AgrigpsCommand([
            "run", "--gpsd", "127.0.0.1:\(port)", "--interval", "0.2", "--state-dir", state,
        ])
        defer {
            if first.process.isRunning() { first.process.terminate(grace: 1) }
            first.cleanUp()
        }
        try await waitForHeartbeat(in: state) { _ in true }
        let second = try await AgrigpsCommand.run(
            ["run", "--gpsd", "127.0.0.1:\(port)", "--state-dir", state], timeout: 10)
        #expect(second.code == 75, "\(second.stderr)")
        #expect(second.stderr.count == 1 && second.stderr.first?.contains("already uses the state directory") == true)
        #expect(second.stderr.first?.contains("pid \(first.process.pid)") == true, "\(second.stderr)")
        #expect(first.process.isRunning())
        kill(first.process.pid, SIGTERM)
        #expect(await first.process.wait(timeout: 10) == 143)
        #expect(first.stdout.last?.hasPrefix("agrigps: ") == true, "stopped by its own handler, with its summary")
        // Once the first has stopped, the directory is free again.
        let third = try AgrigpsCommand(["run", "--gpsd", "127.0.0.1:\(port)", "--state-dir", state])
        defer { third.cleanUp() }
        try await waitForHeartbeat(in: state) { $0.pid == third.process.pid }
        #expect(third.process.isRunning())
        kill(third.process.pid, SIGTERM)
        #expect(await third.process.wait(timeout: 10) == 143)
        #expect(third.stdout.last?.hasPrefix("agrigps: ") == true)
    }
}

/// Waits up to 20 s until the heartbeat in `state` is there and meets `condition`.
func waitForHeartbeat(in state: String, _ condition: (Heartbeat) -> Bool) async throws {
    let deadline = Date().addingTimeInterval(20)
    while Date() < deadline, !(Heartbeat.read(from: state + "/heartbeat.json").map(condition) ?? false) {
        try await Task.sleep(for: .milliseconds(50))
    }
}
