import Clocks
import Foundation
import GNSS
import JSONText
import StateDirectory

/// `agrigps status --json`: every key always there, and what is not known written as `null`, never
/// as a stand-in value (a missing coordinate is not 0, 0 in the Gulf of Guinea). Keys are
/// snake_case and sorted, so a monitoring script and the golden file can rely on them.
public struct StatusDocument: Encodable, Sendable {
    /// Running or stalled: pid and heartbeat age; not running: when the last heartbeat was.
    enum Daemon: Encodable {
        case live(state: String, pid: Int32, heartbeatAgeSeconds: Double)
        case notRunning(lastHeartbeat: String?)

        struct Live: Encodable {
            var state: String
            var pid: Int32
            var heartbeat_age_s: Double
        }

        struct NotRunning: Encodable {
            var state = "not_running"
            @Nullable var last_heartbeat: String?
        }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .live(let state, let pid, let age):
                try Live(state: state, pid: pid, heartbeat_age_s: age).encode(to: encoder)
            case .notRunning(let last): try NotRunning(last_heartbeat: last).encode(to: encoder)
            }
        }
    }

    struct LastSample: Encodable {
        var state: String
        @Nullable var time: String?
    }

    struct LastFix: Encodable {
        @Nullable var latitude: Double?
        @Nullable var longitude: Double?
        @Nullable var time: String?
        @Nullable var sampled_at: String?
    }

    struct EFDI: Encodable {
        var team_set_context_id: String
        @Nullable var accepted_at: String?
        @Nullable var refusal: [String]?
    }

    /// The machine's own broadcasts (`Heartbeat.MachineStatus`).
    struct Machine: Encodable {
        struct Signal: Encodable {
            var signal, value: String
            var source: Int
            var age_s: Double
        }

        var work: String
        @Nullable var tractor_ecu: Int?
        @Nullable var engine: Int?
        var signals: [Signal]
        var not_heard: [String]
        /// The driver's work switch, "on" or "off"; null until first used.
        @Nullable var work_switch: String?
        /// Why the machine's own bus (`[machine] bus`) cannot be read; null while it can.
        @Nullable var bus_problem: String?
    }

    struct Others: Encodable {
        var active, stale, gone, refused_messages: Int
        @Nullable var last_refusal: String?
    }

    /// TaskData from farm software since the daemon started.
    struct TaskData: Encodable {
        var imported, refused, older, expired: Int
        @Nullable var last_problem: String?
    }

    /// The spool's counts, or, when it could not be read, only why.
    enum Spool: Encodable {
        case counts(Counts)
        case problem(String)

        struct Counts: Encodable {
            var pending, in_flight, parked, dropped, withheld, held_in_memory: Int
            @Nullable var oldest_pending_age_s: Double?
            var outputs: [String: [String: Int]]
        }

        func encode(to encoder: any Encoder) throws {
            switch self {
            case .counts(let counts): try counts.encode(to: encoder)
            case .problem(let problem): try ["problem": problem].encode(to: encoder)
            }
        }
    }

    // The keys are the JSON's own: snake_case, as scripts have read them since the first release.
    var health: String
    var exit_code: Int32
    var reasons: [String]
    @Nullable var taken_at: String?
    var daemon: Daemon
    var onboarded: Bool
    @Nullable var environment: String?
    @Nullable var transport: String?
    @Nullable var connection: String?
    @Nullable var endpoint_name: String?
    @Nullable var last_sample: LastSample?
    @Nullable var last_fix: LastFix?
    @Nullable var receiver_bus: String?
    @Nullable var machine: Machine?
    @Nullable var clock_skew_s: Double?
    @Nullable var last_acknowledged_at: String?
    @Nullable var last_error: String?
    @Nullable var next_attempt_at: String?
    var transport_failures, dropped_inbound, lost_samples: Int
    @Nullable var endpoint_deleted_at: String?
    @Nullable var certificate_not_after: String?
    @Nullable var disk_free_bytes: Int64?
    @Nullable var efdi_description: EFDI?
    var others: Others
    @Nullable var task_data: TaskData?
    @Nullable var sharing: String?
    var spool: Spool

    public init(_ snapshot: StatusSnapshot, verdict: (health: Health, reasons: [String])) {
        let date = ISO8601UTC.string(ifAny:)
        let heartbeat = snapshot.heartbeat
        health = verdict.health.description
        exit_code = verdict.health.rawValue
        reasons = verdict.reasons
        taken_at = date(snapshot.takenAt)
        switch snapshot.daemon {
        case .running(let pid, let age): daemon = .live(state: "running", pid: pid, heartbeatAgeSeconds: age.rounded())
        case .stalled(let pid, let age): daemon = .live(state: "stalled", pid: pid, heartbeatAgeSeconds: age.rounded())
        case .notRunning(let last): daemon = .notRunning(lastHeartbeat: date(last))
        }
        onboarded = snapshot.environment != nil
        environment = snapshot.environment
        (transport, connection) = (heartbeat?.transport, heartbeat?.connection)
        endpoint_name = snapshot.othersCounts.ownName
        last_sample = heartbeat?.lastSample.map { LastSample(state: $0.state, time: date($0.time)) }
        last_fix = heartbeat?.lastFix.map {
            LastFix(latitude: $0.latitude, longitude: $0.longitude, time: date($0.time), sampled_at: date($0.sampledAt))
        }
        clock_skew_s = heartbeat?.lastSample?.clockSkew
        receiver_bus = heartbeat?.receiverBus
        let workSwitch = snapshot.spool?.workSwitch.map { $0 ? "on" : "off" }
        machine = heartbeat?.machine.map { machine in
            Machine(
                work: machine.work, tractor_ecu: machine.tractorECU, engine: machine.engine,
                signals: machine.signals.map {
                    Machine.Signal(signal: $0.signal, value: $0.value, source: $0.source, age_s: $0.ageSeconds)
                },
                not_heard: machine.notHeard, work_switch: workSwitch, bus_problem: machine.busProblem)
        }
        (last_acknowledged_at, last_error, next_attempt_at) = (
            date(heartbeat?.lastAcknowledgedAt), heartbeat?.lastError, date(heartbeat?.nextAttemptAt)
        )
        transport_failures = heartbeat?.transportFailures ?? 0
        dropped_inbound = heartbeat?.droppedInbound ?? 0
        lost_samples = heartbeat?.lostSamples ?? 0
        (endpoint_deleted_at, certificate_not_after) = (
            date(heartbeat?.endpointDeletedAt), date(snapshot.certificateNotAfter)
        )
        disk_free_bytes = snapshot.diskFree
        efdi_description = heartbeat?.efdi.map {
            EFDI(team_set_context_id: $0.teamSetContextID, accepted_at: date($0.acceptedAt), refusal: $0.refusal)
        }
        let counts = snapshot.othersCounts
        others = Others(
            active: counts.active, stale: counts.stale, gone: counts.gone, refused_messages: counts.refused ?? 0,
            last_refusal: counts.lastRefusal)
        task_data = heartbeat?.taskData.map {
            TaskData(
                imported: $0.imported, refused: $0.refused, older: $0.older, expired: $0.expired,
                last_problem: $0.lastProblem)
        }
        sharing = snapshot.spool.map { $0.sharingPaused ? "paused" : "active" }
        spool =
            snapshot.spool.map {
                .counts(
                    Spool.Counts(
                        pending: $0.pending, in_flight: $0.inFlight, parked: $0.parked, dropped: $0.droppedTotal,
                        withheld: $0.withheld,
                        held_in_memory: $0.heldInMemory, oldest_pending_age_s: $0.oldestPendingAge?.rounded(),
                        outputs: $0.byOutput))
            } ?? .problem(snapshot.spoolProblem ?? "")
    }

    /// The document as one line of JSON; should it not encode, a document that says so.
    public func json() -> String {
        (try? JSONWriter.encode(self))
            ?? #"{"exit_code":3,"health":"UNKNOWN","reasons":["the status could not be written as JSON"]}"#
    }
}
