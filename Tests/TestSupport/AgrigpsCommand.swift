import ChildProcesses
import Foundation
import GPSDReplay

/// The built `agrigps` binary, for the tests that run it as a user would.
public struct AgrigpsCommand {
    /// `swift build` puts the binary beside the test bundle.
    public static let path: String = {
        let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""
        return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("agrigps").path
    }()

    public let process: ChildProcess
    public let stdoutPath: String
    public let stderrPath: String

    /// `input`, if given, is what the command reads on its standard input.
    public init(_ arguments: [String], environment: [String: String] = [:], input: String? = nil) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.path) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "\(Self.path) (run swift build first)"])
        }
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("agrigps-cli-\(UUID().uuidString)")
            .path
        stdoutPath = base + ".out"
        stderrPath = base + ".err"
        if let input { try input.write(toFile: base + ".in", atomically: true, encoding: .utf8) }
        defer { if input != nil { unlink(base + ".in") } }
        process = try ChildProcess(
            executable: Self.path, arguments: arguments,
            environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
            outputPath: stdoutPath, errorPath: stderrPath, inputPath: input.map { _ in base + ".in" })
    }

    public var stdout: [String] { (try? Fixtures.lines(of: stdoutPath)) ?? [] }
    public var stderr: [String] { (try? Fixtures.lines(of: stderrPath)) ?? [] }

    /// Runs to completion (bounded) and returns the exit code. It waits by suspending, so the
    /// cooperative pool stays free for in-process servers and other tests.
    public static func run(_ arguments: [String], timeout: Double = 60, input: String? = nil) async throws
        -> (code: Int32?, stdout: [String], stderr: [String])
    {
        let command = try AgrigpsCommand(arguments, input: input)
        defer { command.cleanUp() }
        let code = try await command.process.finish(timeout: timeout)
        return (code, command.stdout, command.stderr)
    }

    /// Waits until stdout has a line matching `predicate`.
    public func waitForOutput(timeout: Double, _ predicate: (String) -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(timeout)
        while ContinuousClock.now < deadline {
            if stdout.contains(where: predicate) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return stdout.contains(where: predicate)
    }

    /// Every process below this one: for replay, its gpsd.
    public func descendants() -> [pid_t] {
        var found: [pid_t] = []
        var frontier = [process.pid]
        while let pid = frontier.popLast() {
            // A child belongs to the thread that spawned it: read every thread's list.
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            let children = tasks.flatMap { task in
                ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "")
                    .split(separator: " ").compactMap { pid_t($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            }
            found += children
            frontier += children
        }
        return found
    }

    /// Whether the running command has a library whose file name contains `name` mapped.
    public func hasMapped(_ name: String) -> Bool {
        !mappedFiles(named: name, of: process.pid).isEmpty
    }

    public func cleanUp() {
        unlink(stdoutPath)
        unlink(stderrPath)
    }
}

extension ChildProcess {
    /// Its exit code, waited for by suspending (the cooperative pool stays free for in-process
    /// servers); after `timeout` seconds it is terminated and the answer is nil.
    public func finish(timeout: Double) async throws -> Int32? {
        let code = await wait(timeout: timeout)
        if code == nil { terminate(grace: 1) }
        return code
    }
}
