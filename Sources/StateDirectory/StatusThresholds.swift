import Foundation

/// Where `agrigps status` draws the line between OK, WARNING and CRITICAL; from the configuration file.
public struct StatusThresholds: Sendable, Equatable {
    /// A heartbeat older than this means the daemon is stuck: CRITICAL.
    public var heartbeatLimit: Double = 120
    /// Seconds since the last sample with a position.
    public var fixAgeWarning: Double = 60
    public var fixAgeCritical: Double = 600
    /// Seconds the oldest unsent sample has waited.
    public var queueAgeWarning: Double = 600
    public var queueAgeCritical: Double = 3600
    /// Seconds without an acknowledgement, while onboarded with samples waiting, before a WARNING.
    public var ackAgeWarning: Double = 300
    /// A certificate that expires within this many seconds is a WARNING; an expired one is CRITICAL.
    public var certificateWarning: Double = 30 * 86_400
    /// Seconds without data before another machine is stale.
    public var staleAfter: Double = 300

    public init() {}
}

/// The exit codes Nagios and Icinga read.
public enum Health: Int32, Sendable, Comparable, CustomStringConvertible {
    case ok = 0, warning = 1, critical = 2, unknown = 3

    public static func < (left: Health, right: Health) -> Bool {
        // UNKNOWN says less than CRITICAL: a known emergency outranks not knowing.
        let rank: [Health: Int] = [.ok: 0, .warning: 1, .unknown: 2, .critical: 3]
        return rank[left, default: 0] < rank[right, default: 0]
    }

    public var description: String {
        switch self {
        case .ok: return "OK"
        case .warning: return "WARNING"
        case .critical: return "CRITICAL"
        case .unknown: return "UNKNOWN"
        }
    }
}
