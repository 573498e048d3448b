import NMEA2000

/// A signal the tractor's broadcasts carry, one per message kind.
public enum MachineSignal: String, Sendable, CaseIterable, Comparable {
    case wheelBasedSpeed = "wheel-speed", groundBasedSpeed = "ground-speed", machineSelectedSpeed = "selected-speed"
    case rearHitch = "rear-hitch", frontHitch = "front-hitch", rearPTO = "rear-pto", frontPTO = "front-pto"
    case engineSpeed = "engine-speed", engineHours = "engine-hours", fuelRate = "fuel-rate", fuelUsed = "fuel-used"

    /// Seconds after which a reading no longer counts. The broadcasts come every 100 ms (engine
    /// speed as often as every 10 ms), so 3 s is a sender gone, not a late frame. Totals come
    /// rarely (engine hours on many tractors only when another controller asks), and stay true.
    public var lifetime: Double {
        switch self {
        case .engineHours, .fuelUsed: return 3_600
        default: return 3
        }
    }

    /// In words, for a field engineer.
    public var label: String {
        switch self {
        case .wheelBasedSpeed: return "wheel-based speed"
        case .groundBasedSpeed: return "ground-based speed"
        case .machineSelectedSpeed: return "machine selected speed"
        case .rearHitch: return "rear hitch"
        case .frontHitch: return "front hitch"
        case .rearPTO: return "rear PTO"
        case .frontPTO: return "front PTO"
        case .engineSpeed: return "engine speed"
        case .engineHours: return "engine hours"
        case .fuelRate: return "fuel rate"
        case .fuelUsed: return "fuel used"
        }
    }

    /// Engine messages come from the engine controller first; everything else from the tractor ECU.
    var fromEngine: Bool { [.engineSpeed, .engineHours, .fuelRate, .fuelUsed].contains(self) }

    public static func < (lhs: Self, rhs: Self) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }

    init(_ message: MachineMessage) {
        switch message {
        case .wheelBasedSpeed: self = .wheelBasedSpeed
        case .groundBasedSpeed: self = .groundBasedSpeed
        case .machineSelectedSpeed: self = .machineSelectedSpeed
        case .rearHitch: self = .rearHitch
        case .frontHitch: self = .frontHitch
        case .rearPTO: self = .rearPTO
        case .frontPTO: self = .frontPTO
        case .engineSpeed: self = .engineSpeed
        case .engineHours: self = .engineHours
        case .fuelRate: self = .fuelRate
        case .fuelUsed: self = .fuelUsed
        }
    }
}

/// A reading as the listener hands it on: the message, who sent it, how old it is, and who else
/// sent the same signal meanwhile.
public struct Observed: Sendable, Equatable {
    public var message: MachineMessage
    public var source: UInt8
    public var age: Double
    /// Other senders of the same signal within its lifetime, lowest address first.
    public var alsoSentBy: [UInt8]
}

/// What the bus said of the machine, at one moment.
public struct MachineSnapshot: Sendable, Equatable {
    /// The tractor ECU's address, when its address claim was heard.
    public var tractorECU: UInt8?
    /// The engine controller's address, when its address claim was heard.
    public var engine: UInt8?
    public var signals: [MachineSignal: Observed] = [:]
    /// Whether the listener ever heard one of the machine's messages, current or not.
    public var everHeard = false

    public init() {}

    public subscript(signal: MachineSignal) -> Observed? { signals[signal] }

    /// The signals heard, in `MachineSignal`'s order, each with its reading.
    public var heard: [(signal: MachineSignal, observed: Observed)] {
        MachineSignal.allCases.compactMap { signal in signals[signal].map { (signal, $0) } }
    }

    /// The signals not heard, in `MachineSignal`'s order.
    public var notHeard: [MachineSignal] { MachineSignal.allCases.filter { signals[$0] == nil } }

    public var rearHitch: HitchStatus? {
        if case .rearHitch(let status)? = signals[.rearHitch]?.message { return status }
        return nil
    }

    public var frontHitch: HitchStatus? {
        if case .frontHitch(let status)? = signals[.frontHitch]?.message { return status }
        return nil
    }

    public var rearPTO: PTOStatus? {
        if case .rearPTO(let status)? = signals[.rearPTO]?.message { return status }
        return nil
    }

    public var frontPTO: PTOStatus? {
        if case .frontPTO(let status)? = signals[.frontPTO]?.message { return status }
        return nil
    }

    /// The machine's speed in signed metres a second, and which message gave it: machine selected
    /// speed (the tractor's own choice) first, then ground-based (radar, no wheel slip), then wheel-based.
    public var speed: (metresPerSecond: Double, signal: MachineSignal)? {
        for signal in [MachineSignal.machineSelectedSpeed, .groundBasedSpeed, .wheelBasedSpeed] {
            switch signals[signal]?.message {
            case .machineSelectedSpeed(let speed)?, .groundBasedSpeed(let speed)?, .wheelBasedSpeed(let speed)?:
                if let value = speed.signedSpeed { return (value, signal) }
            default: continue
            }
        }
        return nil
    }

    public var engineSpeed: Double? { scalar(.engineSpeed) }
    public var engineHours: Double? { scalar(.engineHours) }
    public var fuelRate: Double? { scalar(.fuelRate) }
    public var fuelUsed: Double? { scalar(.fuelUsed) }

    private func scalar(_ signal: MachineSignal) -> Double? {
        switch signals[signal]?.message {
        case .engineSpeed(let value)?, .engineHours(let value)?, .fuelRate(let value)?, .fuelUsed(let value)?:
            return value.value
        default: return nil
        }
    }
}

/// Listens to a bus for the tractor's broadcasts, never sending: takes every frame, keeps the newest
/// reading of each signal from each sender, and learns from address claims who each sender is.
///
/// Its memory is bounded whatever the bus carries: a sender is one of 254 addresses and a reading
/// one of `MachineSignal`'s cases. Other traffic costs one look at the PGN.
public struct MachineListener: Sendable {
    struct Reading: Sendable {
        var message: MachineMessage
        var time: Double
    }

    /// NAMEs by address, from address claims.
    private var names: [UInt8: DeviceName] = [:]
    /// The newest reading of each signal, by sender.
    private var readings: [MachineSignal: [UInt8: Reading]] = [:]

    /// Whether any of the machine's messages was ever heard: a bus that never carried one (a boat's,
    /// a receiver's alone) has no machine to speak of.
    public private(set) var everHeard = false

    public init() {}

    /// Takes a frame seen at `time` (seconds on any steady clock); returns whether it was one of the
    /// machine's messages or an address claim.
    @discardableResult
    public mutating func take(_ frame: CANFrame, at time: Double) -> Bool {
        if frame.pgn == GNSSPGN.addressClaim {
            guard let name = DeviceName(frame.data), frame.source < 0xFE else { return false }
            claim(frame.source, name)
            return true
        }
        guard frame.source < 0xFE, let message = MachineMessage(frame) else { return false }
        readings[MachineSignal(message), default: [:]][frame.source] = Reading(message: message, time: time)
        everHeard = true
        return true
    }

    /// A controller claimed `address`. Readings from an address now held by another controller are
    /// another controller's: they go. A controller that moved leaves its old address empty.
    private mutating func claim(_ address: UInt8, _ name: DeviceName) {
        if let held = names[address], held != name { forget(address) }
        for (other, otherName) in names where other != address && otherName == name { forget(other) }
        names[address] = name
    }

    private mutating func forget(_ address: UInt8) {
        names[address] = nil
        for signal in readings.keys { readings[signal]?[address] = nil }
    }

    /// The readings current at `now`: for each signal, the one sender whose reading counts. The tractor
    /// ECU's wins (the engine controller's for engine messages), then the lowest address: a task
    /// controller may send speeds too, and the tractor knows its own best.
    /// With `ignoringAge`, each signal's newest reading however old, for a summary of a whole recording.
    public func snapshot(at now: Double, ignoringAge: Bool = false) -> MachineSnapshot {
        var snapshot = MachineSnapshot()
        snapshot.everHeard = everHeard
        snapshot.tractorECU = names.filter { $0.value.isTractorECU }.keys.min()
        snapshot.engine = names.filter { $0.value.isEngine }.keys.min()
        for (signal, bySender) in readings {
            // A time ahead of `now` (a replay's clock, a stepped clock) counts as just now.
            let current = ignoringAge ? bySender : bySender.filter { now - $0.value.time <= signal.lifetime }
            let senders = current.keys.sorted { rank($0, for: signal) < rank($1, for: signal) }
            guard let chosen = senders.first, let reading = current[chosen] else { continue }
            snapshot.signals[signal] = Observed(
                message: reading.message, source: chosen, age: max(0, now - reading.time),
                alsoSentBy: senders.dropFirst().sorted())
        }
        return snapshot
    }

    private func rank(_ address: UInt8, for signal: MachineSignal) -> (Int, UInt8) {
        let name = names[address]
        let preferred =
            signal.fromEngine ? [name?.isEngine, name?.isTractorECU] : [name?.isTractorECU, name?.isEngine]
        return (preferred.firstIndex(of: true) ?? preferred.count, address)
    }

    /// The NAME an address claimed, if it did.
    public func name(of address: UInt8) -> DeviceName? { names[address] }
}
