import Foundation
import Gateway
import GNSS

/// `agrigps status --json`: every key always there, and what is not known written as `null`, never
/// as a stand-in value (a missing coordinate is not 0, 0 in the Gulf of Guinea). Keys are
/// snake_case and sorted, so a monitoring script and the golden file can rely on them.
public struct StatusDocument: Encodable, Sendable {
    struct Daemon: Encodable {
        var state: String
        var pid: Int32?
        var heartbeatAgeSeconds: Double?
        var lastHeartbeat: String?

        enum CodingKeys: String, CodingKey {
            case state, pid, heartbeatAgeSeconds = "heartbeat_age_s", lastHeartbeat = "last_heartbeat"
        }

        // Running or stalled: pid and age; not running: when the last heartbeat was.
        func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: CodingKeys.self)
            try keyed.encode(state, forKey: .state)
            if state == "not_running" {
                try keyed.encode(lastHeartbeat, forKey: .lastHeartbeat)
            } else {
                try keyed.encode(pid, forKey: .pid)
                try keyed.encode(heartbeatAgeSeconds, forKey: .heartbeatAgeSeconds)
            }
        }
    }

    struct LastSample: Encodable {
        var state: String
        var time: String?
        enum CodingKeys: String, CodingKey { case state, time }
        func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: CodingKeys.self)
            try keyed.encode(state, forKey: .state)
            try keyed.encode(time, forKey: .time)
        }
    }

    struct LastFix: Encodable {
        var latitude: Double?
        var longitude: Double?
        var time: String?
        var sampledAt: String?
        enum CodingKeys: String, CodingKey { case latitude, longitude, time, sampledAt = "sampled_at" }
        func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: CodingKeys.self)
            try keyed.encode(latitude, forKey: .latitude)
            try keyed.encode(longitude, forKey: .longitude)
            try keyed.encode(time, forKey: .time)
            try keyed.encode(sampledAt, forKey: .sampledAt)
        }
    }

    struct EFDI: Encodable {
        var teamSetContextID: String
        var acceptedAt: String?
        var refusal: [String]?
        enum CodingKeys: String, CodingKey { case teamSetContextID = "team_set_context_id", acceptedAt = "accepted_at", refusal }
        func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: CodingKeys.self)
            try keyed.encode(teamSetContextID, forKey: .teamSetContextID)
            try keyed.encode(acceptedAt, forKey: .acceptedAt)
            try keyed.encode(refusal, forKey: .refusal)
        }
    }

    struct Others: Encodable {
        var active, stale, gone, refusedMessages: Int
        var lastRefusal: String?
        enum CodingKeys: String, CodingKey { case active, stale, gone, refusedMessages = "refused_messages", lastRefusal = "last_refusal" }
        func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: CodingKeys.self)
            try keyed.encode(active, forKey: .active)
            try keyed.encode(stale, forKey: .stale)
            try keyed.encode(gone, forKey: .gone)
            try keyed.encode(refusedMessages, forKey: .refusedMessages)
            try keyed.encode(lastRefusal, forKey: .lastRefusal)
        }
    }

    /// The spool's counts, or, when it could not be read, only why.
    struct Spool: Encodable {
        var pending, inFlight, parked, dropped, withheld, heldInMemory: Int
        var oldestPendingAgeSeconds: Double?
        var outputs: [String: [String: Int]]
        enum CodingKeys: String, CodingKey {
            case pending, inFlight = "in_flight", parked, dropped, withheld, heldInMemory = "held_in_memory"
            case oldestPendingAgeSeconds = "oldest_pending_age_s", outputs
        }
        func encode(to encoder: any Encoder) throws {
            var keyed = encoder.container(keyedBy: CodingKeys.self)
            try keyed.encode(pending, forKey: .pending)
            try keyed.encode(inFlight, forKey: .inFlight)
            try keyed.encode(parked, forKey: .parked)
            try keyed.encode(dropped, forKey: .dropped)
            try keyed.encode(withheld, forKey: .withheld)
            try keyed.encode(heldInMemory, forKey: .heldInMemory)
            try keyed.encode(oldestPendingAgeSeconds, forKey: .oldestPendingAgeSeconds)
            try keyed.encode(outputs, forKey: .outputs)
        }
    }

    struct SpoolProblem: Encodable {
        var problem: String
    }

    var health: String
    var exitCode: Int32
    var reasons: [String]
    var takenAt: String?
    var daemon: Daemon
    var onboarded: Bool
    var environment, transport, connection, endpointName: String?
    var lastSample: LastSample?
    var lastFix: LastFix?
    var clockSkewSeconds: Double?
    var lastAcknowledgedAt, lastError, nextAttemptAt: String?
    var transportFailures, droppedInbound, lostSamples: Int
    var endpointDeletedAt, certificateNotAfter: String?
    var diskFreeBytes: Int64?
    var efdiDescription: EFDI?
    var others: Others
    var sharing: String?
    var spool: Spool?
    var spoolProblem: String

    public init(_ snapshot: StatusSnapshot, verdict: (health: Health, reasons: [String])) {
        let date = { (value: Date?) in value.map { ISO8601UTC.string(from: $0) } }
        let heartbeat = snapshot.heartbeat
        health = verdict.health.description
        exitCode = verdict.health.rawValue
        reasons = verdict.reasons
        takenAt = date(snapshot.takenAt)
        switch snapshot.daemon {
        case .running(let pid, let age): daemon = Daemon(state: "running", pid: pid, heartbeatAgeSeconds: age.rounded())
        case .stalled(let pid, let age): daemon = Daemon(state: "stalled", pid: pid, heartbeatAgeSeconds: age.rounded())
        case .notRunning(let last): daemon = Daemon(state: "not_running", lastHeartbeat: date(last))
        }
        onboarded = snapshot.environment != nil
        environment = snapshot.environment
        (transport, connection) = (heartbeat?.transport, heartbeat?.connection)
        endpointName = snapshot.othersCounts.ownName
        lastSample = heartbeat?.lastSample.map { LastSample(state: $0.state, time: date($0.time)) }
        lastFix = heartbeat?.lastFix.map { LastFix(latitude: $0.latitude, longitude: $0.longitude, time: date($0.time), sampledAt: date($0.sampledAt)) }
        clockSkewSeconds = heartbeat?.lastSample?.clockSkew
        (lastAcknowledgedAt, lastError, nextAttemptAt) = (date(heartbeat?.lastAcknowledgedAt), heartbeat?.lastError, date(heartbeat?.nextAttemptAt))
        transportFailures = heartbeat?.transportFailures ?? 0
        droppedInbound = heartbeat?.droppedInbound ?? 0
        lostSamples = heartbeat?.lostSamples ?? 0
        (endpointDeletedAt, certificateNotAfter) = (date(heartbeat?.endpointDeletedAt), date(snapshot.certificateNotAfter))
        diskFreeBytes = snapshot.diskFree
        efdiDescription = heartbeat?.efdi.map { EFDI(teamSetContextID: $0.teamSetContextID, acceptedAt: date($0.acceptedAt), refusal: $0.refusal) }
        let counts = snapshot.othersCounts
        others = Others(active: counts.active, stale: counts.stale, gone: counts.gone, refusedMessages: counts.refused ?? 0, lastRefusal: counts.lastRefusal)
        sharing = snapshot.spool.map { $0.sharingPaused ? "paused" : "active" }
        spool = snapshot.spool.map {
            Spool(pending: $0.pending, inFlight: $0.inFlight, parked: $0.parked, dropped: $0.droppedTotal, withheld: $0.withheld,
                  heldInMemory: $0.heldInMemory, oldestPendingAgeSeconds: $0.oldestPendingAge?.rounded(), outputs: $0.byOutput)
        }
        spoolProblem = snapshot.spoolProblem ?? ""
    }

    enum CodingKeys: String, CodingKey {
        case health, exitCode = "exit_code", reasons, takenAt = "taken_at", daemon, onboarded, environment, transport, connection
        case endpointName = "endpoint_name", lastSample = "last_sample", lastFix = "last_fix", clockSkewSeconds = "clock_skew_s"
        case lastAcknowledgedAt = "last_acknowledged_at", lastError = "last_error", nextAttemptAt = "next_attempt_at"
        case transportFailures = "transport_failures", droppedInbound = "dropped_inbound", lostSamples = "lost_samples"
        case endpointDeletedAt = "endpoint_deleted_at", certificateNotAfter = "certificate_not_after", diskFreeBytes = "disk_free_bytes"
        case efdiDescription = "efdi_description", others, sharing, spool
    }

    public func encode(to encoder: any Encoder) throws {
        var keyed = encoder.container(keyedBy: CodingKeys.self)
        try keyed.encode(health, forKey: .health)
        try keyed.encode(exitCode, forKey: .exitCode)
        try keyed.encode(reasons, forKey: .reasons)
        try keyed.encode(takenAt, forKey: .takenAt)
        try keyed.encode(daemon, forKey: .daemon)
        try keyed.encode(onboarded, forKey: .onboarded)
        try keyed.encode(environment, forKey: .environment)
        try keyed.encode(transport, forKey: .transport)
        try keyed.encode(connection, forKey: .connection)
        try keyed.encode(endpointName, forKey: .endpointName)
        try keyed.encode(lastSample, forKey: .lastSample)
        try keyed.encode(lastFix, forKey: .lastFix)
        try keyed.encode(clockSkewSeconds, forKey: .clockSkewSeconds)
        try keyed.encode(lastAcknowledgedAt, forKey: .lastAcknowledgedAt)
        try keyed.encode(lastError, forKey: .lastError)
        try keyed.encode(nextAttemptAt, forKey: .nextAttemptAt)
        try keyed.encode(transportFailures, forKey: .transportFailures)
        try keyed.encode(droppedInbound, forKey: .droppedInbound)
        try keyed.encode(lostSamples, forKey: .lostSamples)
        try keyed.encode(endpointDeletedAt, forKey: .endpointDeletedAt)
        try keyed.encode(certificateNotAfter, forKey: .certificateNotAfter)
        try keyed.encode(diskFreeBytes, forKey: .diskFreeBytes)
        try keyed.encode(efdiDescription, forKey: .efdiDescription)
        try keyed.encode(others, forKey: .others)
        try keyed.encode(sharing, forKey: .sharing)
        if let spool {
            try keyed.encode(spool, forKey: .spool)
        } else {
            try keyed.encode(SpoolProblem(problem: spoolProblem), forKey: .spool)
        }
    }

    /// The document as one line of JSON; should it not encode, a document that says so.
    public func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else {
            return #"{"exit_code":3,"health":"UNKNOWN","reasons":["the status could not be written as JSON"]}"#
        }
        return String(decoding: data, as: UTF8.self)
    }
}
