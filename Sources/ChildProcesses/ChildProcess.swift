import CSpawn
import Foundation

/// A child process started with posix_spawn.
///
/// Foundation.Process started from a dispatch or test worker thread hands the child that thread's
/// blocked signals, so SIGTERM never reaches it. Here the child gets an empty signal mask and
/// default handlers, and its output goes to a file instead of our pipes.
public struct ChildProcess: Sendable {
    public let pid: pid_t

    /// Starts `executable`; its stdout goes to `outputPath` (appended to with `appending`), and its
    /// stderr too unless `errorPath` is given. Its stdin reads `inputPath`, or nothing.
    public init(
        executable: String, arguments: [String], environment: [String: String],
        outputPath: String, errorPath: String? = nil, inputPath: String? = nil, appending: Bool = false
    ) throws(SpawnError) {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &allSignals)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        var files = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&files)
        defer { posix_spawn_file_actions_destroy(&files) }
        posix_spawn_file_actions_addopen(&files, 0, inputPath ?? "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(
            &files, 1, outputPath, O_WRONLY | O_CREAT | (appending ? O_APPEND : O_TRUNC), 0o600)
        if let errorPath {
            posix_spawn_file_actions_addopen(&files, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        } else {
            posix_spawn_file_actions_adddup2(&files, 1, 2)
        }
        // Nothing else of ours: a listening socket or a lock a child held on to would outlive us.
        let closed = posix_spawn_file_actions_addclosefrom_np(&files, 3)
        guard closed == 0 else { throw SpawnError(executable: executable, code: closed) }

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, executable, &files, &attributes, argv, envp)
        guard rc == 0 else {
            throw SpawnError(executable: executable, code: rc)
        }
        self.pid = pid
    }

    /// True while the child has not exited. Reaps it when it has.
    public func isRunning() -> Bool {
        var status: Int32 = 0
        return waitpid(pid, &status, WNOHANG) == 0
    }

    /// Its exit code (128 + signal when killed) if it has exited, reaping it; nil while it runs, or
    /// when it is not our child any more.
    public func exitCode() -> Int32? {
        if case .exited(let code) = poll() { return code }
        return nil
    }

    /// Waits up to `timeout` seconds for the child to exit, by suspending: no thread is held, so
    /// many children can be waited for at once from Swift's small cooperative pool. Its exit code,
    /// or nil if it is still running.
    public func wait(timeout: Double) async -> Int32? {
        let deadline = ContinuousClock.now + .seconds(timeout.isFinite ? max(0, min(timeout, 86_400)) : 0)
        while true {
            switch poll() {
            case .exited(let code): return code
            case .gone: return nil
            case .running:
                guard ContinuousClock.now < deadline else { return nil }
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    private enum State { case running, exited(Int32), gone }

    private func poll() -> State {
        var status: Int32 = 0
        switch waitpid(pid, &status, WNOHANG) {
        case 0: return .running
        case pid:
            let signal = status & 0x7F
            return .exited(signal == 0 ? (status >> 8) & 0xFF : 128 + signal)
        default: return .gone
        }
    }

    /// Sends SIGTERM, waits up to `grace` seconds, then SIGKILL. Always reaps the child. It blocks
    /// the calling thread (a child that obeys SIGTERM is gone in milliseconds): for clean-up in
    /// `defer` and `deinit`, which cannot suspend.
    public func terminate(grace: Double) {
        guard isRunning() else { return }
        kill(pid, SIGTERM)
        let deadline = Date().addingTimeInterval(grace)
        while Date() < deadline {
            if !isRunning() { return }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// posix_spawn failed; `code` is its errno.
public struct SpawnError: Error, Sendable, Equatable, CustomStringConvertible {
    public let executable: String
    public let code: Int32

    public var description: String { "cannot start \(executable): \(String(cString: strerror(code)))" }
}
