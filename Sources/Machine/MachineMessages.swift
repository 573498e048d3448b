import NMEA2000

/// The PGNs of a tractor's own broadcasts that agrigps reads (ISO 11783-7 and SAE J1939-71). Each is
/// one frame of 8 bytes. Layouts, with their sources: docs/machine-data.md.
public enum MachinePGN {
    public static let wheelBasedSpeed: UInt32 = 65_096
    public static let groundBasedSpeed: UInt32 = 65_097
    public static let machineSelectedSpeed: UInt32 = 61_474
    public static let rearHitch: UInt32 = 65_093
    public static let frontHitch: UInt32 = 65_094
    public static let rearPTO: UInt32 = 65_091
    public static let frontPTO: UInt32 = 65_092
    /// EEC1, Electronic Engine Controller 1.
    public static let engineSpeed: UInt32 = 61_444
    /// Often sent only when another controller asks for it (PGN 59904).
    public static let engineHours: UInt32 = 65_253
    /// LFE1, Fuel Economy (Liquid).
    public static let fuelRate: UInt32 = 65_266
    /// LFC1, Fuel Consumption (Liquid).
    public static let fuelUsed: UInt32 = 65_257

    public static let all: [UInt32] = [
        wheelBasedSpeed, groundBasedSpeed, machineSelectedSpeed, rearHitch, frontHitch, rearPTO, frontPTO,
        engineSpeed, engineHours, fuelRate, fuelUsed,
    ]
}

public enum Direction: String, Sendable, Equatable {
    case forward, reverse
}

/// Where machine selected speed (PGN 61474) says its speed comes from.
public enum SpeedSource: String, Sendable, Equatable {
    case wheelBased = "wheel", groundBased = "ground", navigationBased = "navigation", blended, simulated
}

/// A speed message: wheel-based (65096), ground-based (65097) or machine selected (61474).
public struct MachineSpeed: Sendable, Equatable {
    /// Metres a second, never negative: `direction` says which way.
    public var speed: Measured<Double>
    /// Metres since some start the sender chose; it rolls over to 0 past 4,211,081.215.
    public var distance: Measured<Double>
    public var direction: Measured<Direction>
    /// Machine selected speed only: what it is taken from.
    public var source: Measured<SpeedSource>?
    /// Wheel-based speed only: the tractor's implement start/stop operations (SPN 5203), a master
    /// switch an operator sets for the implements.
    public var implementOperations: Measured<Bool>?
    /// Wheel-based speed only: the key switch is not off (SPN 1865).
    public var keyNotOff: Measured<Bool>?

    /// Signed metres a second, negative in reverse; nil unless both speed and direction are known,
    /// except that 0 needs no direction.
    public var signedSpeed: Double? {
        guard let speed = speed.value else { return nil }
        switch direction {
        case .value(.reverse): return -speed
        case .value(.forward): return speed
        default: return speed == 0 ? 0 : nil
        }
    }
}

/// Rear (65093) or front (65094) hitch status.
public struct HitchStatus: Sendable, Equatable {
    /// Percent of its travel, 0 fully down, 100 fully up.
    public var position: Measured<Double>
    /// Below the maker's in-work threshold: the implement is working.
    public var inWork: Measured<Bool>

    public init(position: Measured<Double>, inWork: Measured<Bool>) {
        (self.position, self.inWork) = (position, inWork)
    }
}

/// Rear (65091) or front (65092) PTO output shaft.
public struct PTOStatus: Sendable, Equatable {
    /// Revolutions a minute.
    public var shaftSpeed: Measured<Double>
    public var engaged: Measured<Bool>

    public init(shaftSpeed: Measured<Double>, engaged: Measured<Bool>) {
        (self.shaftSpeed, self.engaged) = (shaftSpeed, engaged)
    }
}

/// One tractor message, read from a frame.
public enum MachineMessage: Sendable, Equatable {
    case wheelBasedSpeed(MachineSpeed)
    case groundBasedSpeed(MachineSpeed)
    case machineSelectedSpeed(MachineSpeed)
    case rearHitch(HitchStatus)
    case frontHitch(HitchStatus)
    case rearPTO(PTOStatus)
    case frontPTO(PTOStatus)
    /// Revolutions a minute.
    case engineSpeed(Measured<Double>)
    /// The engine's total hours of operation.
    case engineHours(Measured<Double>)
    /// Litres an hour.
    case fuelRate(Measured<Double>)
    /// Litres the engine has used in its life.
    case fuelUsed(Measured<Double>)

    /// The message a frame holds; nil for any other PGN, and for a frame of fewer or more than 8
    /// bytes, which no sender of these PGNs sends.
    public init?(_ frame: CANFrame) {
        let pgn = frame.pgn
        guard MachinePGN.all.contains(pgn), let field = J1939Field(frame.data) else { return nil }
        switch pgn {
        case MachinePGN.wheelBasedSpeed:
            var speed = Self.speed(field)
            speed.keyNotOff = field.flag(7, shift: 2)
            speed.implementOperations = field.flag(7, shift: 4)
            self = .wheelBasedSpeed(speed)
        case MachinePGN.groundBasedSpeed: self = .groundBasedSpeed(Self.speed(field))
        case MachinePGN.machineSelectedSpeed:
            var speed = Self.speed(field)
            speed.source = field.bits(7, shift: 2, count: 3).flatMap(Self.speedSource)
            self = .machineSelectedSpeed(speed)
        case MachinePGN.rearHitch: self = .rearHitch(Self.hitch(field))
        case MachinePGN.frontHitch: self = .frontHitch(Self.hitch(field))
        case MachinePGN.rearPTO: self = .rearPTO(Self.pto(field))
        case MachinePGN.frontPTO: self = .frontPTO(Self.pto(field))
        case MachinePGN.engineSpeed: self = .engineSpeed(field.u16(3, scale: 0.125))
        case MachinePGN.engineHours: self = .engineHours(field.u32(0, scale: 0.05))
        case MachinePGN.fuelRate: self = .fuelRate(field.u16(0, scale: 0.05))
        case MachinePGN.fuelUsed: self = .fuelUsed(field.u32(4, scale: 0.5))
        default: return nil
        }
    }

    /// Bytes 1-2 speed (0.001 m/s), 3-6 distance (0.001 m), 8.1 direction: the same in all three.
    private static func speed(_ field: J1939Field) -> MachineSpeed {
        let direction: Measured<Direction> = field.flag(7, shift: 0).map { $0 ? .forward : .reverse }
        return MachineSpeed(
            speed: field.u16(0, scale: 0.001), distance: field.u32(2, scale: 0.001), direction: direction)
    }

    /// 0 wheel, 1 ground, 2 navigation, 3 blended, 4 simulated; 5 and 6 are reserved.
    private static func speedSource(_ raw: Int) -> Measured<SpeedSource> {
        let sources: [SpeedSource] = [.wheelBased, .groundBased, .navigationBased, .blended, .simulated]
        return raw < sources.count ? .value(sources[raw]) : .notAvailable
    }

    /// Byte 1 position (0.4 %), 2.7 in-work indication.
    private static func hitch(_ field: J1939Field) -> HitchStatus {
        HitchStatus(position: field.u8(0, scale: 0.4), inWork: field.flag(1, shift: 6))
    }

    /// Bytes 1-2 shaft speed (0.125 rpm), 5.7 engagement.
    private static func pto(_ field: J1939Field) -> PTOStatus {
        PTOStatus(shaftSpeed: field.u16(0, scale: 0.125), engaged: field.flag(4, shift: 6))
    }
}
