import ChildProcesses
import Foundation

/// A private gpsd, tethered to us: if we are killed outright, the kernel kills gpsd too (see
/// `TetheredProcess`). The kernel clears the parent-death signal when a process changes its user,
/// as gpsd does when started as root, so as root gpsd is started as its own unprivileged user from
/// the outset.
///
/// gpsd 3.22 opens its port before it arms its signal handling, so a SIGTERM sent right after
/// start-up can be lost; `terminate` falls back to SIGKILL after a grace period.
final class GPSDProcess: Sendable {
    private let child: TetheredProcess

    init(gpsd: String, arguments: [String], environment: [String: String], outputPath: String) throws(ReplayError) {
        do {
            child = try TetheredProcess(
                executable: gpsd, arguments: arguments, launcherOptions: Self.asItsOwnUser(),
                environment: environment, outputPath: outputPath, threadName: "agrigps.gpsd-reaper")
        } catch {
            throw .gpsdFailedToStart(error.description)
        }
    }

    var pid: pid_t { child.pid }
    var hasExited: Bool { child.hasExited }

    /// SIGTERM, then SIGKILL after `grace` seconds; returns once gpsd has been reaped.
    func terminate(grace: Double) { child.terminate(grace: grace) }

    /// The user gpsd itself would switch to: its own, or nobody where the package made none.
    private static func asItsOwnUser() -> [String] {
        guard getuid() == 0, let user = getpwnam("gpsd") ?? getpwnam("nobody") else { return [] }
        return ["--reuid=\(user.pointee.pw_uid)", "--regid=\(user.pointee.pw_gid)", "--clear-groups"]
    }
}
