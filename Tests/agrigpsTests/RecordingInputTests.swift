import ChildProcesses
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What `agrigps bus --file` and `agrigps replay` are given as a candump recording is not always one:
/// a FIFO, a device, a folder, random bytes, a line of many megabytes, a recording longer than any
/// replay. Each is said in words, soon, in memory that does not grow with the file.
@Suite("candump recordings that are not files, not candump or too big", .timeLimit(.minutes(3)))
struct RecordingInputTests {
    /// The memory a run may take beyond the same command over a small recording: far less than the
    /// 20 MiB files below, so that a reader that holds one of them (or a line of it) is caught.
    static let growthKiB = 12 * 1024

    @Test("a FIFO, a character device or a folder as the recording: said what it is at once, and nothing waited on")
    func notARegularFile() async throws {
        let scratch = TemporaryDirectory("recording")
        let directory = scratch.path
        let fifo = directory + "/bus.fifo"
        #expect(mkfifo(fifo, 0o600) == 0, "errno \(errno)")
        for (path, kind) in [(fifo, "a FIFO"), ("/dev/zero", "a character device"), (directory, "a directory")] {
            // A reader that opens a FIFO waits for a writer for ever: the timeout ends it, and the code is nil.
            let result = try await AgrigpsCommand.run(["bus", "--file", path], timeout: 20)
            let said = result.stderr.joined(separator: "\n")
            #expect(result.code == 66, "\(path): exit \(String(describing: result.code)): \(said)")
            #expect(
                said.contains("\(path) is \(kind), not a recording; give the path of a candump log file"),
                "\(path): \(said)")
            #expect(result.stdout.isEmpty)
        }
    }

    @Test(
        "a FIFO or a device given to replay or run --replay as an NMEA log: refused with words at once, nothing waited on or read to its end"
    )
    func nmeaLogThatIsNoFile() async throws {
        let scratch = TemporaryDirectory("recording")
        let directory = scratch.path
        let fifo = directory + "/gps.fifo"
        #expect(mkfifo(fifo, 0o600) == 0, "errno \(errno)")
        for path in [fifo, "/dev/zero"] {
            for arguments in [["replay", path], ["run", "--replay", path, "--state-dir", directory + "/state"]] {
                let result = try await AgrigpsCommand.run(arguments, timeout: 20)
                let said = result.stderr.joined(separator: "\n")
                #expect(result.code == 66, "\(arguments): exit \(String(describing: result.code)): \(said)")
                #expect(
                    said.contains("\(path) is not a file (a FIFO, a device or a socket is not read)"),
                    "\(arguments): \(said)")
            }
        }
    }

    @Test("random bytes, or a file without a line break: 'not a candump log' after a bounded read, in bounded memory")
    func notCandump() async throws {
        let scratch = TemporaryDirectory("recording")
        let directory = scratch.path
        let baseline = try await Self.measured(["bus", "--file", Fixtures.can("candumpSample1.txt")])
        #expect(baseline.code == 0, "\(baseline.stderr)")

        var random = SplitMix64(seed: 53)
        var bytes = [UInt8](repeating: 0, count: 20 << 20)
        for index in stride(from: 0, to: bytes.count, by: 8) {
            withUnsafeBytes(of: random.next()) { bytes.replaceSubrange(index..<index + 8, with: $0) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/random.bin"))
        try Data(repeating: UInt8(ascii: "x"), count: 20 << 20).write(
            to: URL(fileURLWithPath: directory + "/one-line.txt"))
        // Candump lines after 2 MiB of other text: judged by the start, as a person would.
        let late =
            Data(String(repeating: "this is a log of something else\n", count: 65_536).utf8)
            + (try Data(contentsOf: URL(fileURLWithPath: Fixtures.can("candumpSample1.txt"))))
        try late.write(to: URL(fileURLWithPath: directory + "/late.log"))

        for name in ["random.bin", "one-line.txt", "late.log"] {
            let run = try await Self.measured(["bus", "--file", directory + "/" + name])
            let said = run.stderr.joined(separator: "\n")
            #expect(run.code == 65, "\(name): exit \(String(describing: run.code)): \(said.prefix(600))")
            #expect(said.contains("\(directory)/\(name) is not a candump log"), "\(name): \(said.prefix(600))")
            #expect(
                said.contains("expected lines like `(1612345678.123456) can0 09F80102#...`"),
                "\(name): \(said.prefix(600))")
            #expect(
                Self.bounded(run.peakKiB, baseline.peakKiB),
                "\(name): peak RSS \(run.peakKiB as Any) KiB, \(baseline.peakKiB as Any) KiB over a small recording")
        }
    }

    @Test(
        "a 20 MiB line amid frames: skipped with words, the frames around it read, in bounded memory; replay reads the same way"
    )
    func overLongLine() async throws {
        let scratch = TemporaryDirectory("recording")
        let directory = scratch.path
        let sample = try String(contentsOfFile: Fixtures.can("candumpSample1.txt"), encoding: .utf8)
        var lines = sample.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        lines.insert("(1410714882.622188) can0 09F80102#" + String(repeating: "0", count: 20 << 20), at: 100)
        let path = directory + "/long-line.log"
        try lines.joined(separator: "\n").write(toFile: path, atomically: false, encoding: .utf8)

        let baseline = try await Self.measured(["bus", "--file", Fixtures.can("candumpSample1.txt")])
        let run = try await Self.measured(["bus", "--file", path])
        #expect(run.code == 0, "exit \(String(describing: run.code)): \(run.stderr)")
        #expect(run.stdout.first == "Recording: 6026 frames from 3 senders.", "\(run.stdout)")
        #expect(
            run.stderr.first?.contains("\(path): 1 line not read (line 101: longer than 300 characters") == true,
            "\(run.stderr)")
        #expect(
            Self.bounded(run.peakKiB, baseline.peakKiB),
            "peak RSS \(run.peakKiB as Any) KiB, \(baseline.peakKiB as Any) KiB over the recording without the line")

        // The replay reads the recording before it looks for the interface, with the same reader.
        let replay = try await Self.measured(["replay", "--json", "--can", "agrigpsvcan9", path])
        #expect(replay.code == 69, "exit \(String(describing: replay.code)): \(replay.stderr)")
        #expect(
            replay.stderr.first?.contains("\(path): 1 line not read (line 101: longer than 300 characters") == true,
            "\(replay.stderr)")
        #expect(
            Self.bounded(replay.peakKiB, baseline.peakKiB),
            "replay: peak RSS \(replay.peakKiB as Any) KiB, \(baseline.peakKiB as Any) KiB for bus over a small recording"
        )
    }

    @Test(
        "a recording of more frames than a replay takes: refused with how to cut it, before any interface is looked for"
    )
    func tooLongToReplay() async throws {
        let scratch = TemporaryDirectory("recording")
        let directory = scratch.path
        let path = directory + "/long.log"
        // 1,000,001 frames of the shortest form candump -l writes: 16 MB.
        try Data(String(repeating: "(0) c 00000000#\n", count: 1_000_001).utf8).write(to: URL(fileURLWithPath: path))
        let replay = try await AgrigpsCommand.run(["replay", "--can", "agrigpsvcan9", path], timeout: 60)
        let said = replay.stderr.joined(separator: "\n")
        #expect(replay.code == 65, "exit \(String(describing: replay.code)): \(said)")
        #expect(said.contains("\(path) holds more than 1000000 frames"), "\(said)")
        #expect(said.contains("head -n 1000000"), "\(said)")
        // bus reads any length: it keeps no frames.
        let bus = try await AgrigpsCommand.run(["bus", "--file", path], timeout: 60)
        #expect(
            bus.code == 1 && bus.stdout.first == "Recording: 1000001 frames from 1 sender.",
            "\(bus.code as Any) \(bus.stdout) \(bus.stderr)")
    }

    /// Whether a run's peak was measured and stayed within `growthKiB` of the baseline's.
    static func bounded(_ peak: Int?, _ baseline: Int?) -> Bool {
        guard let peak, let baseline else { return false }
        return peak < baseline + growthKiB
    }

    /// Runs agrigps to its end (killed after `timeout`: code nil) with its peak resident memory,
    /// VmHWM, read once it has read its input. wait4's ru_maxrss will not do: a child spawned with
    /// vfork counts the test process's memory from before its exec. So its stdout and stderr are
    /// FIFOs filled beforehand: its first line of output (these commands write only once they have
    /// read the recording) blocks it, alive, until its peak is read; then both are drained.
    static func measured(_ arguments: [String], timeout: Double = 60) async throws
        -> (code: Int32?, stdout: [String], stderr: [String], peakKiB: Int?)
    {
        let scratch = TemporaryDirectory("measured")
        let paths = [scratch.file("measured.out"), scratch.file("measured.err")]
        var descriptors: [Int32] = []
        defer { descriptors.forEach { close($0) } }
        var filler: [Int] = []
        for path in paths {
            guard mkfifo(path, 0o600) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            // Read and write: its open waits for no one, and the FIFO never reads as ended.
            let descriptor = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
            guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            descriptors.append(descriptor)
            let page = [UInt8](repeating: 0x2E, count: 4096)
            var filled = 0
            while true {
                let count = page.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
                guard count > 0 else { break }
                filled += count
            }
            filler.append(filled)
        }
        let child = try ChildProcess(
            executable: AgrigpsCommand.path, arguments: arguments, environment: ProcessInfo.processInfo.environment,
            outputPath: paths[0], errorPath: paths[1])
        var output: [[UInt8]] = [[], []]
        func drain() {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            for (index, descriptor) in descriptors.enumerated() {
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    guard count > 0 else { break }
                    output[index] += chunk[..<count]
                }
            }
        }
        let deadline = ContinuousClock.now + .seconds(timeout)
        var peak: Int?
        var code: Int32?
        while true {
            if let exited = child.exitCode() {
                code = exited
                break
            }
            if peak == nil, Self.blockedWritingOutput(child.pid) { peak = PushFloodTests.peakResidentKiB(child.pid) }
            if peak != nil { drain() }
            guard ContinuousClock.now < deadline else {
                drain()
                child.terminate(grace: 1)
                break
            }
            try? await Task.sleep(for: .milliseconds(5))
        }
        drain()
        func lines(_ index: Int) -> [String] {
            String(decoding: output[index].dropFirst(filler[index]), as: UTF8.self).split(separator: "\n").map(
                String.init)
        }
        return (code, lines(0), lines(1), peak)
    }

    /// Whether a thread of `pid` waits in write(2) on its stdout or stderr.
    static func blockedWritingOutput(_ pid: pid_t) -> Bool {
        #if arch(arm64)
        let write = "64"
        #else
        let write = "1"
        #endif
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.contains { task in
            let call = ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/syscall", encoding: .utf8)) ?? "")
                .split(separator: " ")
            return call.count > 1 && call[0] == write && (call[1] == "0x1" || call[1] == "0x2")
        }
    }
}
