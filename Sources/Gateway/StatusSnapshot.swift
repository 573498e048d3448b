import Agrirouter
import Foundation
import Spool

/// What `agrigps status` reports, read from the state directory alone: the daemon's heartbeat, the
/// credentials (never the secret), the spool and the store of other machines.
public struct StatusSnapshot: Sendable {
    public enum Daemon: Sendable, Equatable {
        case running(pid: Int32, heartbeatAge: Double)
        /// Its process is there but the heartbeat is older than allowed: the work loop is stuck.
        case stalled(pid: Int32, heartbeatAge: Double)
        /// No heartbeat, or its process is gone.
        case notRunning(lastHeartbeat: Date?)
    }

    public var takenAt: Date
    public var daemon: Daemon
    public var heartbeat: Heartbeat?
    /// nil when not onboarded.
    public var environment: String?
    public var credentialsProblem: String?
    public var spool: SpoolStatus?
    public var spoolProblem: String?
    public var others: OthersView
    public var othersProblem: String?

    public struct Paths: Sendable {
        public var stateDirectory: String
        public var spool: String
        public var others: String
        public var heartbeat: String

        public init(stateDirectory: String, spool: String, others: String, heartbeat: String) {
            self.stateDirectory = stateDirectory
            self.spool = spool
            self.others = others
            self.heartbeat = heartbeat
        }
    }

    /// Reads everything; a part that cannot be read is reported as a problem, not thrown, so status
    /// always has something to say.
    public static func gather(_ paths: Paths, now: Date = Date(), heartbeatLimit: Double = 120, staleAfter: Double = 300) async -> StatusSnapshot {
        let heartbeat = Heartbeat.read(from: paths.heartbeat)
        var snapshot = StatusSnapshot(takenAt: now, daemon: daemonState(heartbeat, now: now, limit: heartbeatLimit), heartbeat: heartbeat,
                                      others: OthersView())
        do {
            snapshot.environment = try CredentialStore(directory: paths.stateDirectory).load()?.environment
        } catch {
            snapshot.credentialsProblem = error.description
        }
        if FileManager.default.fileExists(atPath: paths.spool) {
            let spool = Spool(path: paths.spool)
            let status = await spool.status()
            if let fault = status.storageFault { snapshot.spoolProblem = fault.description } else { snapshot.spool = status }
        } else {
            snapshot.spoolProblem = "no spool yet at \(paths.spool): the daemon has not run here"
        }
        do {
            snapshot.others = try await OtherMachinesStore(path: paths.others).view(now: now, staleAfter: staleAfter)
        } catch {
            snapshot.othersProblem = error.description
        }
        return snapshot
    }

    static func daemonState(_ heartbeat: Heartbeat?, now: Date, limit: Double) -> Daemon {
        guard let heartbeat else { return .notRunning(lastHeartbeat: nil) }
        // Signal 0 asks only whether the process exists; EPERM means it does, under another user.
        guard kill(heartbeat.pid, 0) == 0 || errno == EPERM else { return .notRunning(lastHeartbeat: heartbeat.updatedAt) }
        let age = now.timeIntervalSince(heartbeat.updatedAt)
        return age > limit ? .stalled(pid: heartbeat.pid, heartbeatAge: age) : .running(pid: heartbeat.pid, heartbeatAge: age)
    }
}
