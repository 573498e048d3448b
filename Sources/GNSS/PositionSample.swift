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
    /// What the machine's own controllers said on its CAN bus when the sample was taken; nil where
    /// the box listens to no machine.
    public var machine: MachineReading?

    public init(sampledAt: Date, state: FixState, report: PositionReport? = nil,
                clockSkew: Double? = nil, detail: String? = nil, sampledUptime: Double? = nil, machine: MachineReading? = nil) {
        self.sampledAt = sampledAt
        self.state = state
        self.report = report
        self.clockSkew = clockSkew
        self.detail = detail
        self.sampledUptime = sampledUptime
        self.machine = machine
    }

    /// Receiver UTC time of the underlying report, if any.
    public var receiverTime: Date? { report?.time }
}

/// The machine's work and engine at one sample, as its controllers broadcast them (ISO 11783-7,
/// J1939-71; read by the `Machine` module). Every value is optional: a tractor sends some of them,
/// and a value the sender called "not available" or "error" is none.
public struct MachineReading: Sendable, Equatable {
    public enum Work: String, Sendable, Equatable, CaseIterable {
        case working
        case notWorking = "not-working"
        /// None of the signals that count is known.
        case unknown
    }

    public var work: Work
    /// Metres a second, negative in reverse, from the bus.
    public var speed: Double?
    /// Which of the bus's speeds it is: "wheel", "ground" or "selected".
    public var speedSource: String?
    /// Revolutions a minute.
    public var engineSpeed: Double?
    /// The engine's total hours.
    public var engineHours: Double?
    /// Litres an hour.
    public var fuelRate: Double?
    /// Litres the engine has used in its life.
    public var fuelUsed: Double?

    public init(work: Work, speed: Double? = nil, speedSource: String? = nil, engineSpeed: Double? = nil,
                engineHours: Double? = nil, fuelRate: Double? = nil, fuelUsed: Double? = nil) {
        (self.work, self.speed, self.speedSource, self.engineSpeed) = (work, speed, speedSource, engineSpeed)
        (self.engineHours, self.fuelRate, self.fuelUsed) = (engineHours, fuelRate, fuelUsed)
    }
}
