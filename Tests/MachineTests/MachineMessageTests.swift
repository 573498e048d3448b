import Machine
import NMEA2000
import PropertyBased
import TestSupport
import Testing

@Suite struct MachineMessageTests {
    typealias F = MachineFrames

    @Test("wheel-based speed: mm/s, mm, direction, key and the implement master switch")
    func wheelBasedSpeed() throws {
        let frame = F.wheelSpeed(2_500, distance: 123_456, forward: false, operations: 1)
        guard case .wheelBasedSpeed(let speed)? = MachineMessage(frame) else {
            Issue.record("not read")
            return
        }
        #expect(speed.speed == .value(2.5))
        #expect(speed.distance.value.map { abs($0 - 123.456) < 1e-9 } == true)
        #expect(speed.direction == .value(.reverse) && speed.signedSpeed == -2.5)
        #expect(speed.keyNotOff == .value(true) && speed.implementOperations == .value(true))
        #expect(speed.source == nil)
    }

    @Test("machine selected speed names its source; 5 and 6 are reserved, 7 not available")
    func machineSelectedSpeed() {
        let expected: [UInt8: Measured<SpeedSource>] = [
            0: .value(.wheelBased), 1: .value(.groundBased), 2: .value(.navigationBased),
            3: .value(.blended), 4: .value(.simulated), 5: .notAvailable, 6: .notAvailable, 7: .notAvailable,
        ]
        for (raw, source) in expected {
            guard case .machineSelectedSpeed(let speed)? = MachineMessage(F.selectedSpeed(1_000, source: raw)) else {
                Issue.record("not read")
                continue
            }
            #expect(speed.source == source, "source \(raw)")
            #expect(speed.signedSpeed == 1)
        }
    }

    @Test("hitch position in 0.4 % steps and the in-work indication's four states")
    func hitch() {
        let states: [UInt8: Measured<Bool>] = [0: .value(false), 1: .value(true), 2: .error, 3: .notAvailable]
        for (raw, state) in states {
            for rear in [true, false] {
                let message = MachineMessage(F.hitch(rear: rear, position: 50, inWork: raw))
                let status = HitchStatus(position: .value(20), inWork: state)
                #expect(message == (rear ? .rearHitch(status) : .frontHitch(status)))
            }
        }
        // 250 is the top (100 %); 0xFE is an error, 0xFF and the reserved 0xFB to 0xFD not available.
        let positions: [UInt8: Measured<Double>] = [
            250: .value(100), 0xFB: .notAvailable, 0xFE: .error, 0xFF: .notAvailable,
        ]
        for (raw, position) in positions {
            #expect(
                MachineMessage(F.hitch(position: raw, inWork: 0))
                    == .rearHitch(HitchStatus(position: position, inWork: .value(false))))
        }
    }

    @Test("PTO shaft speed in eighths of an rpm and its engagement")
    func pto() {
        #expect(
            MachineMessage(F.pto(eighths: 8_640, engaged: 1))
                == .rearPTO(PTOStatus(shaftSpeed: .value(1_080), engaged: .value(true))))
        #expect(
            MachineMessage(F.pto(rear: false, eighths: 0, engaged: 0))
                == .frontPTO(PTOStatus(shaftSpeed: .value(0), engaged: .value(false))))
        #expect(
            MachineMessage(F.pto(eighths: 0xFE10, engaged: 2))
                == .rearPTO(PTOStatus(shaftSpeed: .error, engaged: .error)))
    }

    @Test("engine speed, hours, fuel rate and total fuel at their scales; the top of each range still a value")
    func engine() {
        let eec1 = F.frame(MachinePGN.engineSpeed, from: 0, [0xF0, 0x7D, 0x7D] + F.le16(9_840) + [0x00, 0xFF, 0xFF])
        #expect(MachineMessage(eec1) == .engineSpeed(.value(1_230)))
        let hours = F.frame(MachinePGN.engineHours, from: 0, F.le32(2_951) + [0xFF, 0xFF, 0xFF, 0xFF], priority: 6)
        #expect(MachineMessage(hours) == .engineHours(.value(147.55)))
        let rate = F.frame(
            MachinePGN.fuelRate, from: 0, F.le16(56) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], priority: 6)
        #expect(MachineMessage(rate)?.fuelRateValue.map { abs($0 - 2.8) < 1e-9 } == true)
        let used = F.frame(MachinePGN.fuelUsed, from: 0, [0xFF, 0xFF, 0xFF, 0xFF] + F.le32(0xFAFF_FFFF), priority: 6)
        #expect(MachineMessage(used) == .fuelUsed(.value(Double(0xFAFF_FFFF) * 0.5)))
    }

    @Test("all ones read as not available and 0xFE… as error in every field, never as 0; all zeros are real zeros")
    func reservedValues() {
        for pgn in MachinePGN.all {
            let ones = MachineMessage(F.frame(pgn, from: 0xF0, Array(repeating: 0xFF, count: 8)))
            #expect(ones != nil)
            #expect(ones?.knownValues.isEmpty == true, "\(pgn): \(String(describing: ones))")
            let zeros = MachineMessage(F.frame(pgn, from: 0xF0, Array(repeating: 0, count: 8)))
            #expect(zeros?.knownValues.allSatisfy { $0 == 0 } == true, "\(pgn)")
        }
        // 16-bit: 0xFAFF is the top value; 0xFB00 to 0xFDFF reserved, 0xFExx error, 0xFFxx not available.
        let cases: [(UInt16, Measured<Double>)] = [
            (0xFAFF, .value(64.255)), (0xFB00, .notAvailable), (0xFDFF, .notAvailable),
            (0xFE00, .error), (0xFE7F, .error), (0xFF00, .notAvailable),
        ]
        for (raw, expected) in cases {
            guard
                case .groundBasedSpeed(let speed)? = MachineMessage(
                    F.frame(MachinePGN.groundBasedSpeed, from: 1, F.le16(raw) + [0, 0, 0, 0, 0xFF, 0xFD]))
            else {
                Issue.record("not read")
                continue
            }
            #expect(
                speed.speed.value.map { abs($0 - (expected.value ?? -1)) < 1e-9 } ?? (speed.speed == expected), "\(raw)"
            )
        }
    }

    @Test("a frame of other than 8 bytes, or of another PGN, is not a machine message")
    func notMachineMessages() {
        #expect(MachineMessage(F.frame(MachinePGN.rearHitch, from: 0xF0, [0, 0x40, 0xFF])) == nil)
        #expect(MachineMessage(F.frame(129_025, from: 0x1C, Array(repeating: 0, count: 8))) == nil)
        #expect(MachineMessage(F.claim(0xF0, function: 134)) == nil)
    }

    @Test("any 8 bytes of any machine PGN read without a trap, every value within its published range")
    func anyBytes() async {
        let bytes = Gen<UInt8>.value(in: 0...255).array(of: 8...8)
        await propertyCheck(count: 2_000, input: bytes, Gen.int(in: 0...(MachinePGN.all.count - 1))) { data, index in
            guard let message = MachineMessage(F.frame(MachinePGN.all[index], from: 0x20, data)) else {
                Issue.record("8 bytes not read")
                return
            }
            for value in message.knownValues { #expect(value >= 0 && value <= 2_105_540_607.5, "\(message)") }
        }
    }
}

extension MachineMessage {
    /// Every numeric value the message holds, known ones only.
    var knownValues: [Double] {
        switch self {
        case .wheelBasedSpeed(let speed), .groundBasedSpeed(let speed), .machineSelectedSpeed(let speed):
            let flags = [speed.keyNotOff?.value, speed.implementOperations?.value].compactMap { $0 }.map {
                $0 ? 1.0 : 0
            }
            return [speed.speed.value, speed.distance.value].compactMap { $0 } + flags
        case .rearHitch(let status), .frontHitch(let status):
            return [status.position.value, status.inWork.value.map { $0 ? 1 : 0 }].compactMap { $0 }
        case .rearPTO(let status), .frontPTO(let status):
            return [status.shaftSpeed.value, status.engaged.value.map { $0 ? 1 : 0 }].compactMap { $0 }
        case .engineSpeed(let value), .engineHours(let value), .fuelRate(let value), .fuelUsed(let value):
            return [value.value].compactMap { $0 }
        }
    }

    var fuelRateValue: Double? {
        if case .fuelRate(let value) = self { return value.value }
        return nil
    }
}
