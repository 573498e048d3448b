import Foundation
import Synchronization

/// A private gpsd, our direct child, reaped by a thread of its own.
///
/// gpsd gets a parent-death signal (util-linux `setpriv --pdeathsig`) tied to that thread, which
/// lives until gpsd has exited: if we are killed outright, the kernel kills gpsd too. The kernel
/// clears that signal when a process changes its user, as gpsd does when started as root, so as
/// root gpsd is started as its own unprivileged user from the outset.
///
/// gpsd 3.22 opens its port before it arms its signal handling, so a SIGTERM sent right after
/// start-up can be lost; `terminate` falls back to SIGKILL after a grace period.
final class GPSDProcess: Sendable {
    static let launcher = "/usr/bin/setpriv"

    let pid: pid_t
    private let exited = ExitFlag()

    init(gpsd: String, arguments: [String], environment: [String: String], outputPath: String) throws(ReplayError) {
        guard access(Self.launcher, X_OK) == 0 else {
            throw .gpsdFailedToStart("\(Self.launcher) is missing; install util-linux")
        }
        let spawned = Mutex<Result<pid_t, ReplayError>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let exited = exited
        let arguments = Self.launcherArguments() + ["--", gpsd] + arguments
        let reaper = Thread {
            do throws(ReplayError) {
                let child = try ChildProcess(executable: Self.launcher, arguments: arguments,
                                             environment: environment, outputPath: outputPath)
                spawned.withLock { $0 = .success(child.pid) }
                ready.signal()
                var status: Int32 = 0
                while waitpid(child.pid, &status, 0) < 0 && errno == EINTR {}
                exited.set()
            } catch {
                spawned.withLock { $0 = .failure(error) }
                ready.signal()
            }
        }
        reaper.name = "agrigps.gpsd-reaper"
        reaper.start()
        ready.wait()
        pid = try spawned.withLock { $0! }.get()
    }

    var hasExited: Bool { exited.isSet }

    /// SIGTERM, then SIGKILL after `grace` seconds; returns once gpsd has been reaped.
    func terminate(grace: Double) {
        guard !hasExited else { return }
        kill(pid, SIGTERM)
        if waitForExit(seconds: grace) { return }
        kill(pid, SIGKILL)
        _ = waitForExit(seconds: 10)
    }

    private func waitForExit(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if hasExited { return true }
            usleep(5_000)
        }
        return hasExited
    }

    private static func launcherArguments() -> [String] {
        var arguments = ["--pdeathsig", "KILL"]
        guard getuid() == 0 else { return arguments }
        // The user gpsd itself would switch to: its own, or nobody where the package made none.
        guard let user = getpwnam("gpsd") ?? getpwnam("nobody") else { return arguments }
        arguments += ["--reuid=\(user.pointee.pw_uid)", "--regid=\(user.pointee.pw_gid)", "--clear-groups"]
        return arguments
    }
}

/// Set once by the reaper thread when gpsd has been reaped.
private final class ExitFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}
