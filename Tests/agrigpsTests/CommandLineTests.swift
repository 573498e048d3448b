import Foundation
import GPSDReplay
import TestSupport
import Testing

private let log = Fixtures.log("ublox-lea-4h")

@Suite(.serialized, .timeLimit(.minutes(2)))
struct CommandLineTests {
    @Test func replayPrintsTheExpectedSamplesAndExitsZero() async throws {
        let result = try await AgrigpsCommand.run(["replay", log, "--json"])
        #expect(result.code == 0)
        #expect(result.stderr.isEmpty)
        let expected = try Fixtures.lines(
            of: Fixtures.nmeaDirectory.appendingPathComponent("ublox-lea-4h.samples.jsonl").path)
        #expect(result.stdout == expected)
    }

    @Test func replayEveryReportPrintsOneLinePerTPV() async throws {
        let result = try await AgrigpsCommand.run(["replay", log, "--every-report", "--json"])
        #expect(result.code == 0)
        let expected = try TPVFields.fromCheckFile(log + ".chk")
        #expect(try result.stdout.map(TPVFields.init(json:)) == expected)
    }

    @Test func replayTextLinesNameTheState() async throws {
        let result = try await AgrigpsCommand.run(["replay", Fixtures.log("nmea-rtk")])
        #expect(result.code == 0)
        #expect(result.stdout.contains { $0.contains(" fix_3d_rtk_fixed lat=41.57") })
        #expect(result.stdout.contains { $0.contains(" fix_3d_dgps lat=41.57") })
    }

    @Test(
        "bad input: one line naming the problem, a meaningful exit code, no stack trace",
        arguments: [
            (["replay", "/nonexistent/field.log"], Int32(66), "log file not found: /nonexistent/field.log"),
            (["replay", "@empty"], 65, "log file is empty"),
            (["replay", "@binary"], 65, "is not an NMEA text log"),
            (["replay", "/tmp"], 66, "is a directory"),
            (
                ["replay", log, "--interval", "0"], 64,
                "--interval must be a number of seconds from 0.1 to 3600, got '0'"
            ),
            (
                ["replay", log, "--interval", "-1"], 64,
                "--interval must be a number of seconds from 0.1 to 3600, got '-1'"
            ),
            (
                ["replay", log, "--interval", "1e-10"], 64,
                "--interval must be a number of seconds from 0.1 to 3600, got '1e-10'"
            ),
            (
                ["replay", log, "--interval", "abc"], 64,
                "--interval must be a number of seconds from 0.1 to 3600, got 'abc'"
            ),
            (["replay", log, "--interval", "5", "--every-report"], 64, "exclude each other"),
            (["replay"], 64, "Missing expected argument '<log>'"),
            (["watch", "--interval", "0"], 64, "--interval must be a number of seconds from 0.1 to 3600, got '0'"),
            (["watch", "--silence", "inf"], 64, "--silence must be a number of seconds from 0.1 to 3600, got 'inf'"),
            (["watch", "--gpsd", "999.1.1.1:2947"], 64, "'999.1.1.1' is not a valid host"),
            (["watch", "--gpsd", "127.0.0.1:0"], 64, "'0' is not a valid port"),
            (["watch", "--gpsd", "127.0.0.1:http"], 64, "'http' is not a valid port"),
            (["watch", "--gpsd", ""], 64, "the gpsd address is empty"),
            (["frobnicate"], 64, "Unexpected argument 'frobnicate'"),
            (
                ["run", "--feed-query-interval", "0"], 64,
                "--feed-query-interval must be a number of seconds from 60 to 86400, got '0'"
            ),
            (
                ["run", "--interval", "1e-10"], 64,
                "--interval must be a number of seconds from 0.1 to 3600, got '1e-10'"
            ),
            (["run", "--spacing", "inf"], 64, "--spacing must be a number of seconds from 0 to 600, got 'inf'"),
            (["run", "--spacing", "1e300"], 64, "--spacing must be a number of seconds from 0 to 600, got '1e300'"),
            (
                ["run", "--send-interval", "nan"], 64,
                "--send-interval must be a number of seconds from 0.1 to 3600, got 'nan'"
            ),
            (
                ["run", "--history-hours", "-2"], 64,
                "--history-hours must be a number of hours from 1 to 720, got '-2'"
            ),
            (
                ["status", "--heartbeat-limit", "soon"], 64,
                "--heartbeat-limit must be a number of seconds from 10 to 86400, got 'soon'"
            ),
            (
                ["others", "--stale-after", "0"], 64,
                "--stale-after must be a number of seconds from 10 to 86400, got '0'"
            ),
            (["others", "--sort", "colour"], 64, "The value 'colour' is invalid for '--sort"),
        ])
    func badInput(arguments: [String], code: Int32, message: String) async throws {
        let temporary = TemporaryDirectory("bad")
        let scratch = temporary.file("bad")
        var arguments = arguments
        if let index = arguments.firstIndex(where: { $0.hasPrefix("@") }) {
            let bytes: [UInt8] =
                arguments[index] == "@empty" ? [] : (0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            try Data(bytes).write(to: URL(fileURLWithPath: scratch))
            arguments[index] = scratch
        }
        let result = try await AgrigpsCommand.run(arguments, timeout: 30)
        #expect(result.code == code)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.count == 1, "stderr: \(result.stderr)")
        let line = result.stderr.first ?? ""
        #expect(line.hasPrefix("agrigps: error: "))
        #expect(line.contains(message), "got: \(line)")
        #expect(!line.contains("Fatal error") && !line.contains("Backtrace"))
    }

    @Test func watchKeepsRunningWhileGPSDIsDownAndRecoversWhenItStarts() async throws {
        let port = try ReplayGPSD.freeLoopbackPort()
        let watch = try AgrigpsCommand(["watch", "--gpsd", "127.0.0.1:\(port)", "--interval", "0.2", "--json"])
        defer {
            watch.process.terminate(grace: 2)
            watch.cleanUp()
        }
        #expect(await watch.waitForOutput(timeout: 10) { $0.contains(#""state":"gpsd_unreachable""#) })
        try await Task.sleep(for: .seconds(1))
        #expect(watch.process.isRunning(), "watch exited while gpsd was down")
        #expect(watch.stdout.filter { $0.contains("gpsd_unreachable") }.count >= 3)

        var options = ReplayGPSD.Options()
        options.port = port
        options.realTime = true
        let gpsd = try await ReplayGPSD.start(log: try NMEALog(contentsOf: Fixtures.log("ublox-8")), options: options)
        defer { gpsd.stop() }
        #expect(await watch.waitForOutput(timeout: 15) { $0.contains(#""state":"fix_3d_autonomous""#) })
        // The recording is from another day: the live command must flag the system clock as off.
        let fixLine = watch.stdout.first { $0.contains("fix_3d_autonomous") } ?? ""
        #expect(!fixLine.contains(#""clock_skew_s":null"#) && fixLine.contains(#""clock_skew_s":"#))
        #expect(fixLine.contains(#""sampled_at":"#))

        kill(watch.process.pid, SIGTERM)
        #expect(await watch.process.wait(timeout: 5) == 0)
    }

    @Test("a log with a control byte that gpsd would take for a binary frame still replays to the end")
    func controlByteInTheLogIsFedAsNUL() async throws {
        let scratch = TemporaryDirectory("dle")
        let path = scratch.file("dle.log")
        // DLE then ',' opens a TSIP frame in gpsd, which would swallow the end of the feed.
        try Data(Array("$GPGGA,1".utf8) + [0x10] + Array(",2\n".utf8)).write(to: URL(fileURLWithPath: path))
        let started = Date()
        let result = try await AgrigpsCommand.run(["replay", path], timeout: 15)
        #expect(result.code == 0, "stderr: \(result.stderr)")
        #expect(Date().timeIntervalSince(started) < 15)
        #expect(
            result.stderr == [
                "agrigps: warning: \(path): 1 byte that is not NMEA text (first at byte 8) fed to gpsd as NUL"
            ])
    }

    @Test func interruptedReplayLeavesNoProcessBehind() async throws {
        let replay = try AgrigpsCommand(["replay", Fixtures.log("telit-he910"), "--real-time"])
        defer {
            replay.process.terminate(grace: 2)
            replay.cleanUp()
        }
        #expect(await replay.waitForOutput(timeout: 15) { !$0.isEmpty })
        let started = replay.descendants()
        #expect(started.count == 1, "expected gpsd alone, found \(started)")
        kill(replay.process.pid, SIGINT)
        #expect(await replay.process.wait(timeout: 10) == 130)
        #expect(started.allSatisfy(Processes.isGone), "left behind: \(started.filter { !Processes.isGone($0) })")
    }

    @Test func killedReplayTakesItsGPSDWithIt() async throws {
        let replay = try AgrigpsCommand(["replay", Fixtures.log("telit-he910"), "--real-time"])
        defer { replay.cleanUp() }
        #expect(await replay.waitForOutput(timeout: 15) { !$0.isEmpty })
        let started = replay.descendants()
        #expect(started.count == 1)
        kill(replay.process.pid, SIGKILL)
        #expect(await replay.process.wait(timeout: 10) == 128 + SIGKILL)
        // No handler runs on SIGKILL: only the kernel's parent-death signal can end gpsd.
        #expect(await eventually(within: 5) { started.allSatisfy(Processes.isDead) }, "gpsd outlived a killed agrigps")
    }

    @Test func helpIsTheManual() async throws {
        let top = try await AgrigpsCommand.run(["--help"])
        #expect(top.code == 0)
        #expect(top.stdout.contains { $0.contains("watch") } && top.stdout.contains { $0.contains("replay") })
        let replay = try await AgrigpsCommand.run(["replay", "--help"])
        #expect(replay.code == 0)
        #expect(replay.stdout.contains { $0.contains("--every-report") })
    }

    /// The help text is wrapped once, by the parser: a hard line break inside a paragraph of the
    /// source leaves a short line wherever the parser's own wrap falls elsewhere.
    @Test(arguments: ["", "run", "watch", "replay", "onboard", "disconnect", "pause", "resume", "status", "others"])
    func helpParagraphsWrapEvenly(command: String) async throws {
        let help = try AgrigpsCommand((command.isEmpty ? [] : [command]) + ["--help"], environment: ["COLUMNS": "80"])
        defer { help.cleanUp() }
        #expect(await help.process.wait(timeout: 30) == 0)
        let lines = try String(contentsOfFile: help.stdoutPath, encoding: .utf8).components(separatedBy: "\n")
        let text = lines.prefix { !$0.hasPrefix("USAGE:") }
        #expect(text.count >= 2 && text.count < lines.count, "no help before USAGE (agrigps \(command) --help)")
        for (line, next) in zip(text, text.dropFirst()) where !line.isEmpty && !next.isEmpty {
            // Indented lines belong to a table laid out by hand.
            guard !line.hasPrefix(" "), !next.hasPrefix(" ") else { continue }
            let firstWord = next.prefix { $0 != " " }
            // The parser keeps a line to 79 columns on an 80-column terminal.
            #expect(
                line.count + 1 + firstWord.count > 79,
                "\"\(line)\" could have taken \"\(firstWord)\" (agrigps \(command) --help)")
        }
    }
}

/// AGRIGPS_LOG_LEVEL: at debug the daemon logs every sample it commits, with the spool's row id, so a
/// record kept outside the machine (the field rig's serial console) can be held against the spool.
@Suite(.timeLimit(.minutes(2)))
struct LogLevelTests {
    static func run(level: String) async throws -> (code: Int32?, stderr: [String], samples: Int) {
        let scratch = TemporaryDirectory("level")
        let state = scratch.file("state")
        let command = try AgrigpsCommand(
            ["run", "--replay", Fixtures.log("ublox-lea-4h"), "--state-dir", state],
            environment: ["AGRIGPS_LOG_LEVEL": level])
        defer { command.cleanUp() }
        let code = try await command.process.finish(timeout: 90)
        let samples = try Fixtures.lines(
            of: Fixtures.nmeaDirectory.appendingPathComponent("ublox-lea-4h.samples.jsonl").path
        ).count
        return (code, command.stderr, samples)
    }

    @Test func debugLogsEveryCommittedSample() async throws {
        let run = try await Self.run(level: "DEBUG")
        #expect(run.code == 0, "\(run.stderr.suffix(5))")
        let commits = run.stderr.filter { $0.contains("committed sample") }
        let ids = commits.compactMap { line in
            line.split(separator: " ").first { $0.hasPrefix("id=") }.flatMap { Int($0.dropFirst(3)) }
        }
        #expect(ids == Array(1...run.samples), "\(commits.prefix(3))")
        #expect(commits.allSatisfy { $0.contains("state=") && $0.contains("time_ms=") && $0.contains("clock=") })
        #expect(commits.contains { $0.contains("clock=receiver") && $0.contains("state=fix_") })
        #expect(commits.contains { $0.contains("state=no_fix") }, "the log's fix losses are samples too")
    }

    @Test func anUnknownLevelIsNamedAndInfoIsKept() async throws {
        let run = try await Self.run(level: "loud")
        #expect(run.code == 0, "\(run.stderr.suffix(5))")
        #expect(
            run.stderr.first { $0.contains("AGRIGPS_LOG_LEVEL") }
                == "agrigps: warning: AGRIGPS_LOG_LEVEL: 'loud' is not a level (trace, debug, info, notice, warning, error, critical); logging at info"
        )
        #expect(!run.stderr.contains { $0.contains("committed sample") })
        #expect(run.stderr.contains { $0.contains(" info ") }, "info lines are still logged")
    }
}
