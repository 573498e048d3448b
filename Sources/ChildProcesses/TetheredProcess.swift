import BlockingWork
import Foundation
import Synchronization

/// A child that cannot outlive us: started through util-linux `setpriv --pdeathsig KILL` from a
/// thread of its own, which then waits for it and so lives exactly as long as the child.
///
/// The kernel sends the parent-death signal when the *thread* that started the child ends, which is
/// why no pool thread may start it (Swift's pool retires idle threads); and the child gets it if we
/// are killed outright. The kernel clears that signal when a process changes its user, so a child
/// that would switch users must be started as that user (`launcherOptions`, see setpriv(1)).
public final class TetheredProcess: Sendable {
    public static let launcher = "/usr/bin/setpriv"
    public let pid: pid_t
    private let exited: ExitFlag

    private init(pid: pid_t, exited: ExitFlag) {
        (self.pid, self.exited) = (pid, exited)
    }

    /// Starts `executable` with `arguments`; `launcherOptions` go to setpriv before them. It waits
    /// as long as posix_spawn takes: for synchronous callers on a thread of their own.
    public convenience init(
        executable: String, arguments: [String], launcherOptions: [String] = [], environment: [String: String],
        outputPath: String, appending: Bool = false, threadName: String
    ) throws(TetheredProcessError) {
        let spawned = Mutex<Result<pid_t, TetheredProcessError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let exited = ExitFlag()
        Self.spawn(
            executable: executable, arguments: arguments, launcherOptions: launcherOptions, environment: environment,
            outputPath: outputPath, appending: appending, threadName: threadName, exited: exited
        ) { result in
            spawned.withLock { $0 = result }
            ready.signal()
        }
        ready.wait()
        self.init(pid: try spawned.withLock { $0! }.get(), exited: exited)
    }

    /// The same start for async callers, which wait for the spawn without holding a thread of the
    /// cooperative pool.
    public static func start(
        executable: String, arguments: [String], launcherOptions: [String] = [], environment: [String: String],
        outputPath: String, appending: Bool = false, threadName: String
    ) async throws(TetheredProcessError) -> TetheredProcess {
        let exited = ExitFlag()
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<pid_t, TetheredProcessError>, Never>) in
            spawn(
                executable: executable, arguments: arguments, launcherOptions: launcherOptions,
                environment: environment,
                outputPath: outputPath, appending: appending, threadName: threadName, exited: exited
            ) { continuation.resume(returning: $0) }
        }
        return TetheredProcess(pid: try result.get(), exited: exited)
    }

    /// Starts the reaper thread, which spawns the child, reports the result once through `ready`, and
    /// then waits for the child, so that it lives exactly as long as the child does.
    private static func spawn(
        executable: String, arguments: [String], launcherOptions: [String], environment: [String: String],
        outputPath: String, appending: Bool, threadName: String, exited: ExitFlag,
        ready: @escaping @Sendable (Result<pid_t, TetheredProcessError>) -> Void
    ) {
        guard access(launcher, X_OK) == 0 else { return ready(.failure(.launcherMissing(launcher))) }
        let arguments = ["--pdeathsig", "KILL"] + launcherOptions + ["--", executable] + arguments
        let started = startThread(named: threadName) {
            do throws(SpawnError) {
                let child = try ChildProcess(
                    executable: launcher, arguments: arguments, environment: environment,
                    outputPath: outputPath, appending: appending)
                ready(.success(child.pid))
                var status: Int32 = 0
                while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
                exited.set()
            } catch {
                ready(.failure(.spawn(error)))
            }
        }
        if !started { ready(.failure(.spawn(SpawnError(executable: executable, code: EAGAIN)))) }
    }

    /// True once the child has been reaped.
    public var hasExited: Bool { exited.isSet }

    /// SIGTERM, then SIGKILL after `grace` seconds; returns once the child has been reaped (or 10 s
    /// after the SIGKILL). It blocks the calling thread: for synchronous callers only.
    public func terminate(grace: Double) {
        guard !hasExited else { return }
        Glibc.kill(pid, SIGTERM)
        if waitForExit(seconds: grace) { return }
        Glibc.kill(pid, SIGKILL)
        _ = waitForExit(seconds: 10)
    }

    /// SIGKILL, and a wait of at most `seconds` for the reaper without blocking a thread. True when
    /// the child is gone.
    public func kill(within seconds: Double) async -> Bool {
        guard !hasExited else { return true }
        Glibc.kill(pid, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(seconds)
        while !hasExited, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        return hasExited
    }

    private func waitForExit(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if hasExited { return true }
            usleep(5_000)
        }
        return hasExited
    }
}

/// Set once by the reaper thread when the child has been reaped.
private final class ExitFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// Why a tethered child did not start. Each case says what to do about it.
public enum TetheredProcessError: Error, Sendable, Equatable, CustomStringConvertible {
    case launcherMissing(String)
    case spawn(SpawnError)

    public var description: String {
        switch self {
        case .launcherMissing(let path): return "\(path) is missing; install util-linux"
        case .spawn(let error): return error.description
        }
    }
}
