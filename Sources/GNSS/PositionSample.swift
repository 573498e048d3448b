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

    public init(
        sampledAt: Date, state: FixState, report: PositionReport? = nil,
        clockSkew: Double? = nil, detail: String? = nil, sampledUptime: Double? = nil, machine: MachineReading? = nil
    ) {
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

    /// The longest time one sample stands for, until the next (more than twice the longest sampling
    /// interval, 20 s): beyond it the daemon was stopped or the machine off, and the time between
    /// counts nowhere, in Records and in the TimeLogs' totals alike.
    public static let longestStep = 45.0
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
    /// Running totals since the box first counted (EFDI's total DDIs 119, 120, 148 and 492): seconds
    /// working, seconds not working, millilitres of fuel by the fuel rate, and seconds with the engine
    /// running. Set by the daemon.
    public var totals: MachineTotals?

    /// What each value's message can carry (J1939's valid range at its scale): whoever reads one back
    /// from a file takes a value outside as none.
    public static let speedRange = -64.255...64.255
    public static let engineSpeedRange = 0...8_031.875
    public static let engineHoursRange = 0...210_554_060.75
    public static let fuelRateRange = 0...3_212.75
    public static let fuelUsedRange = 0...2_105_540_607.5

    /// Metres an implement can work across ([machine] working_width, the cab view's Settings): worked area in Records.
    public static let workingWidthRange = 0.1...60.0

    /// Whether an engine speed says the engine runs: Records' engine hours and the running total agree by it.
    public static func engineRuns(_ engineSpeed: Double?) -> Bool { (engineSpeed ?? 0) > 0 }

    public init(
        work: Work, speed: Double? = nil, speedSource: String? = nil, engineSpeed: Double? = nil,
        engineHours: Double? = nil, fuelRate: Double? = nil, fuelUsed: Double? = nil
    ) {
        (self.work, self.speed, self.speedSource, self.engineSpeed) = (work, speed, speedSource, engineSpeed)
        (self.engineHours, self.fuelRate, self.fuelUsed) = (engineHours, fuelRate, fuelUsed)
    }
}

/// What a machine did in all the time a box counted it, as farm software sums TimeLogs: each value
/// only grows. Kept by the daemon across restarts.
public struct MachineTotals: Sendable, Equatable {
    public var effectiveSeconds: Double
    public var ineffectiveSeconds: Double
    public var fuelMillilitres: Double
    /// Counted from the first version that kept it: totals carried over from before start it at 0.
    public var engineSeconds: Double

    public init(
        effectiveSeconds: Double = 0, ineffectiveSeconds: Double = 0, fuelMillilitres: Double = 0,
        engineSeconds: Double = 0
    ) {
        (self.effectiveSeconds, self.ineffectiveSeconds, self.fuelMillilitres) = (
            effectiveSeconds, ineffectiveSeconds, fuelMillilitres
        )
        self.engineSeconds = engineSeconds
    }

    /// The totals after `previous` stood for the time until `time`: working, not working, its fuel
    /// rate and whether the engine ran over that time. A step back in time, or longer than
    /// `PositionSample.longestStep` (the track's rule, so that the totals and Records agree), adds nothing.
    public func adding(_ previous: MachineReading, from start: Date, to time: Date) -> MachineTotals {
        let seconds = time.timeIntervalSince(start)
        guard seconds.isFinite, seconds > 0, seconds <= PositionSample.longestStep else { return self }
        var next = self
        switch previous.work {
        case .working: next.effectiveSeconds += seconds
        case .notWorking: next.ineffectiveSeconds += seconds
        case .unknown: break
        }
        if let rate = previous.fuelRate { next.fuelMillilitres += rate * seconds / 3.6 }  // L/h over s, in ml
        if MachineReading.engineRuns(previous.engineSpeed) { next.engineSeconds += seconds }
        return next
    }
}
