import Clocks
import Foundation

/// What the sampler says for one interval: the newest report in it, or an explicit state when
/// there was none. "No fix", "no receiver" and "gpsd unreachable" are samples too.
public struct PositionSample: Sendable, Equatable {
    /// System time at which the sample's data was known.
    public var sampledAt: Date
    public var state: FixState
    /// The newest report within the interval; nil when the sample carries an explicit state only.
    public var report: PositionReport?
    /// System clock minus GNSS time, in seconds, set only when it exceeds the skew limit.
    public var clockSkew: Double?
    /// A short human-readable reason for an explicit state ("connection refused", ...).
    public var detail: String?
    /// The monotonic clock (`uptime()`) at `sampledAt`, while this boot lasts: a sample taken while
    /// the system clock read 1970, and that has no receiver time, gets its true time from it once a
    /// fix tells how the two clocks relate. Nil once the machine has rebooted.
    public var sampledUptime: Double?

    public init(sampledAt: Date, state: FixState, report: PositionReport? = nil,
                clockSkew: Double? = nil, detail: String? = nil, sampledUptime: Double? = nil) {
        self.sampledAt = sampledAt
        self.state = state
        self.report = report
        self.clockSkew = clockSkew
        self.detail = detail
        self.sampledUptime = sampledUptime
    }

    /// Receiver UTC time of the underlying report, if any.
    public var receiverTime: Date? { report?.time }
}
