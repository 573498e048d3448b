import Foundation
import Machine
import NMEA2000

/// Frames built from the published layouts (docs/machine-data.md), as a tractor would send them.
public enum MachineFrames {
    /// A PDU2 broadcast, or for PDU1 PGNs a frame to everyone.
    public static func frame(
        _ pgn: UInt32, from source: UInt8, _ data: [UInt8], priority: UInt32 = 3, time: Double? = nil
    ) -> CANFrame {
        let format = (pgn >> 8) & 0xFF
        let specific = format < 240 ? UInt32(0xFF) : pgn & 0xFF
        let identifier = priority << 26 | (pgn >> 16 & 0x3) << 24 | format << 16 | specific << 8 | UInt32(source)
        return CANFrame(time: time, identifier: identifier, data: data)!
    }

    public static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    public static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }

    /// 65096: speed in mm/s, distance in mm, direction 1 forward, key 1 not off, operations 1 on.
    public static func wheelSpeed(
        _ millimetres: UInt16, distance: UInt32 = 0, forward: Bool = true, operations: UInt8 = 3,
        from source: UInt8 = 0xF0
    ) -> CANFrame {
        let last = UInt8(forward ? 1 : 0) | 1 << 2 | operations << 4 | 0b11 << 6
        return frame(MachinePGN.wheelBasedSpeed, from: source, le16(millimetres) + le32(distance) + [0xFF, last])
    }

    /// 61474 with its source (0 wheel, 1 ground, 2 navigation, …) and limit status 7.
    public static func selectedSpeed(
        _ millimetres: UInt16, source speedSource: UInt8, forward: Bool = true, from source: UInt8 = 0xF0
    ) -> CANFrame {
        let last = UInt8(forward ? 1 : 0) | speedSource << 2 | 0b111 << 5
        return frame(MachinePGN.machineSelectedSpeed, from: source, le16(millimetres) + le32(0) + [0xFF, last])
    }

    /// 65093 / 65094: position in 0.4 % steps, in-work 0 out, 1 in, 2 error, 3 not available.
    public static func hitch(rear: Bool = true, position: UInt8, inWork: UInt8, from source: UInt8 = 0xF0) -> CANFrame {
        frame(
            rear ? MachinePGN.rearHitch : MachinePGN.frontHitch, from: source,
            [position, 0b111 << 3 | inWork << 6 | 0b111, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
    }

    /// 65091 / 65092: shaft speed in 0.125 rpm, engagement 0 off, 1 on.
    public static func pto(rear: Bool = true, eighths: UInt16, engaged: UInt8, from source: UInt8 = 0xF0) -> CANFrame {
        frame(
            rear ? MachinePGN.rearPTO : MachinePGN.frontPTO, from: source,
            le16(eighths) + [0xFF, 0xFF, 0b0011_1111 | engaged << 6, 0xFF, 0xFF, 0xFF])
    }

    /// 61444 EEC1: engine speed in 0.125 rpm.
    public static func engineSpeed(_ eighths: UInt16, from source: UInt8 = 0) -> CANFrame {
        frame(MachinePGN.engineSpeed, from: source, [0xF0, 0x7D, 0x7D] + le16(eighths) + [0x00, 0xFF, 0xFF])
    }

    /// 65266 LFE1: fuel rate in 0.05 L/h.
    public static func fuelRate(_ twentieths: UInt16, from source: UInt8 = 0) -> CANFrame {
        frame(MachinePGN.fuelRate, from: source, le16(twentieths) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], priority: 6)
    }

    /// 65253 HOURS: engine hours in 0.05 h.
    public static func engineHours(_ twentieths: UInt32, from source: UInt8 = 0) -> CANFrame {
        frame(MachinePGN.engineHours, from: source, le32(twentieths) + [0xFF, 0xFF, 0xFF, 0xFF], priority: 6)
    }

    /// A frame as `candump -l` writes it.
    public static func candumpLine(_ frame: CANFrame, at time: Double, interface: String = "can0") -> String {
        String(format: "(%.6f) %@ %08X#", time, interface, frame.identifier)
            + frame.data.map { String(format: "%02X", $0) }.joined()
    }

    /// An address claim: NAME with the given function, device class and industry group.
    public static func claim(
        _ source: UInt8, function: UInt8, deviceClass: UInt8 = 0, industryGroup: UInt8 = 2, identity: UInt32 = 1
    ) -> CANFrame {
        let data = le32(identity & 0x1F_FFFF) + [0, function, deviceClass << 1, industryGroup << 4 | 0x80]
        return frame(GNSSPGN.addressClaim, from: source, data, priority: 6)
    }
}

/// A drive built for the tests: gpsd's NMEA 2000 recording (a Garmin at address 2) with a tractor
/// ECU at 0xF0 and an engine at 0 broadcasting beside it, every 100 ms: wheel-based speed, the rear
/// hitch (in work from `hitchDown` to `hitchUp` seconds into the recording), engine speed, fuel rate,
/// and engine hours once a second. The receiver's own fixes are unchanged.
public enum TractorDrive {
    public static let receiverLog = "logfile_20140914_365495765_can.log"

    /// The recording's lines, merged in time order; `hitchDown`/`hitchUp` in seconds from its first frame.
    public static func lines(
        hitchDown: Double, hitchUp: Double, millimetresPerSecond: UInt16 = 2_500,
        tractorStopsAt: Double? = nil
    ) throws -> [String] {
        let receiver = try Fixtures.lines(of: Fixtures.can(receiverLog)).filter { $0.hasPrefix("(") }
        let times = receiver.compactMap { line in line.dropFirst().split(separator: ")").first.flatMap { Double($0) } }
        guard let first = times.first, let last = times.last else { return receiver }
        var tractor: [(Double, String)] = [
            (first, MachineFrames.candumpLine(MachineFrames.claim(0xF0, function: 134), at: first)),
            (first, MachineFrames.candumpLine(MachineFrames.claim(0, function: 0, deviceClass: 1), at: first)),
        ]
        var step = 0
        while first + Double(step) * 0.1 <= min(last, first + (tractorStopsAt ?? .infinity)) {
            let offset = Double(step) * 0.1, time = first + offset
            let inWork: UInt8 = offset >= hitchDown && offset < hitchUp ? 1 : 0
            let frames =
                [
                    MachineFrames.wheelSpeed(
                        millimetresPerSecond, distance: UInt32(Double(millimetresPerSecond) * offset), operations: 3),
                    MachineFrames.hitch(position: inWork == 1 ? 20 : 230, inWork: inWork),
                    MachineFrames.engineSpeed(14_400), MachineFrames.fuelRate(240),
                ]
                + (step % 10 == 0 ? [MachineFrames.engineHours(30_000)] : [])
            tractor += frames.map { (time, MachineFrames.candumpLine($0, at: time)) }
            step += 1
        }
        let merged = zip(times, receiver).map { ($0, $1) } + tractor
        return merged.enumerated().sorted { ($0.element.0, $0.offset) < ($1.element.0, $1.offset) }.map(\.element.1)
    }

    /// Writes the drive to a file and returns its path.
    public static func write(to path: String, hitchDown: Double, hitchUp: Double, tractorStopsAt: Double? = nil) throws
        -> String
    {
        try
            (lines(hitchDown: hitchDown, hitchUp: hitchUp, tractorStopsAt: tractorStopsAt).joined(separator: "\n")
            + "\n")
            .write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
