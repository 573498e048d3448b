import Machine
import NMEA2000

/// Frames built from the published layouts (docs/machine-data.md), as a tractor would send them.
enum MachineFrames {
    /// A PDU2 broadcast, or for PDU1 PGNs a frame to everyone.
    static func frame(_ pgn: UInt32, from source: UInt8, _ data: [UInt8], priority: UInt32 = 3, time: Double? = nil) -> CANFrame {
        let format = (pgn >> 8) & 0xFF
        let specific = format < 240 ? UInt32(0xFF) : pgn & 0xFF
        let identifier = priority << 26 | (pgn >> 16 & 0x3) << 24 | format << 16 | specific << 8 | UInt32(source)
        return CANFrame(time: time, identifier: identifier, data: data)!
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    /// 65096: speed in mm/s, distance in mm, direction 1 forward, key 1 not off, operations 1 on.
    static func wheelSpeed(_ millimetres: UInt16, distance: UInt32 = 0, forward: Bool = true, operations: UInt8 = 3, from source: UInt8 = 0xF0) -> CANFrame {
        let last = UInt8(forward ? 1 : 0) | 1 << 2 | operations << 4 | 0b11 << 6
        return frame(MachinePGN.wheelBasedSpeed, from: source, le16(millimetres) + le32(distance) + [0xFF, last])
    }

    /// 61474 with its source (0 wheel, 1 ground, 2 navigation, …) and limit status 7.
    static func selectedSpeed(_ millimetres: UInt16, source speedSource: UInt8, forward: Bool = true, from source: UInt8 = 0xF0) -> CANFrame {
        let last = UInt8(forward ? 1 : 0) | speedSource << 2 | 0b111 << 5
        return frame(MachinePGN.machineSelectedSpeed, from: source, le16(millimetres) + le32(0) + [0xFF, last])
    }

    /// 65093 / 65094: position in 0.4 % steps, in-work 0 out, 1 in, 2 error, 3 not available.
    static func hitch(rear: Bool = true, position: UInt8, inWork: UInt8, from source: UInt8 = 0xF0) -> CANFrame {
        frame(rear ? MachinePGN.rearHitch : MachinePGN.frontHitch, from: source,
              [position, 0b111 << 3 | inWork << 6 | 0b111, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    }

    /// 65091 / 65092: shaft speed in 0.125 rpm, engagement 0 off, 1 on.
    static func pto(rear: Bool = true, eighths: UInt16, engaged: UInt8, from source: UInt8 = 0xF0) -> CANFrame {
        frame(rear ? MachinePGN.rearPTO : MachinePGN.frontPTO, from: source,
              le16(eighths) + [0xFF, 0xFF, 0b0011_1111 | engaged << 6, 0xFF, 0xFF, 0xFF])
    }

    /// An address claim: NAME with the given function, device class and industry group.
    static func claim(_ source: UInt8, function: UInt8, deviceClass: UInt8 = 0, industryGroup: UInt8 = 2, identity: UInt32 = 1) -> CANFrame {
        let data = le32(identity & 0x1F_FFFF) + [0, function, deviceClass << 1, industryGroup << 4 | 0x80]
        return frame(GNSSPGN.addressClaim, from: source, data, priority: 6)
    }
}
