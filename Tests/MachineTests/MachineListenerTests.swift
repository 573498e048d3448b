import Machine
import NMEA2000
import TestSupport
import Testing

@Suite struct MachineListenerTests {
    typealias F = MachineFrames

    @Test("the tractor ECU's reading wins over another sender's, and the other is named")
    func tractorECUWins() {
        var listener = MachineListener()
        listener.take(F.claim(0xF0, function: 134), at: 0)
        listener.take(F.claim(0x80, function: 130), at: 0)  // a task controller sending speeds too
        listener.take(F.wheelSpeed(3_000, from: 0x80), at: 1)
        listener.take(F.wheelSpeed(2_000, from: 0xF0), at: 1.05)
        listener.take(F.wheelSpeed(3_100, from: 0x80), at: 1.1)
        let snapshot = listener.snapshot(at: 1.2)
        #expect(snapshot.tractorECU == 0xF0)
        #expect(snapshot[.wheelBasedSpeed]?.source == 0xF0 && snapshot[.wheelBasedSpeed]?.alsoSentBy == [0x80])
        #expect(snapshot.speed?.metresPerSecond == 2 && snapshot.speed?.signal == .wheelBasedSpeed)
        // Without the tractor ECU's claim, the lowest address wins.
        var unnamed = MachineListener()
        unnamed.take(F.wheelSpeed(3_000, from: 0x80), at: 1)
        unnamed.take(F.wheelSpeed(2_000, from: 0xF0), at: 1)
        #expect(unnamed.snapshot(at: 1).speed?.metresPerSecond == 3)
    }

    @Test("a sender that stops is gone 3 s after its last frame: its reading no longer counts")
    func readingsAge() {
        var listener = MachineListener()
        listener.take(F.hitch(position: 10, inWork: 1), at: 100)
        #expect(listener.snapshot(at: 102.9).rearHitch?.inWork == .value(true))
        #expect(listener.snapshot(at: 102.9)[.rearHitch]?.age.rounded() == 3)
        #expect(listener.snapshot(at: 103.1).rearHitch == nil)
        // Totals, sent rarely, stay for an hour.
        listener.take(F.frame(MachinePGN.engineHours, from: 0, F.le32(2_951) + [0xFF, 0xFF, 0xFF, 0xFF]), at: 100)
        #expect(listener.snapshot(at: 3_000).engineHours == 147.55)
        #expect(listener.snapshot(at: 3_701).engineHours == nil)
    }

    @Test(
        "another controller claiming an address takes the old one's readings away; a controller that moves leaves its old address"
    )
    func addressClaims() {
        var listener = MachineListener()
        listener.take(F.claim(0xF0, function: 134), at: 0)
        listener.take(F.pto(eighths: 8_000, engaged: 1), at: 1)
        #expect(listener.snapshot(at: 1).rearPTO?.engaged == .value(true))
        // An implement's controller now claims 0xF0: the PTO reading was the tractor's, not its.
        listener.take(F.claim(0xF0, function: 130, identity: 7), at: 1.5)
        #expect(listener.snapshot(at: 1.5).rearPTO == nil && listener.snapshot(at: 1.5).tractorECU == nil)
        // The tractor ECU comes back at 0xF1; a claim of 0xFE (cannot claim) is no address.
        listener.take(F.claim(0xF1, function: 134), at: 2)
        #expect(listener.snapshot(at: 2).tractorECU == 0xF1)
        let taken = listener.take(F.claim(0xFE, function: 134, identity: 9), at: 2)
        #expect(!taken)
        #expect(listener.name(of: 0xF1)?.isTractorECU == true)
    }

    @Test("other traffic is looked at and left: a flood of it holds nothing")
    func otherTraffic() {
        var listener = MachineListener()
        for index in 0..<20_000 {
            let frame = F.frame(
                UInt32(126_000 + index % 5_000), from: UInt8(index % 250), [UInt8(index % 256), 1, 2, 3, 4, 5, 6, 7])
            _ = listener.take(frame, at: Double(index) / 2_000)
        }
        #expect(listener.snapshot(at: 10).signals.isEmpty)
    }
}

@Suite struct WorkRulesTests {
    typealias F = MachineFrames

    func snapshot(_ frames: [CANFrame]) -> MachineSnapshot {
        var listener = MachineListener()
        for frame in frames { listener.take(frame, at: 0) }
        return listener.snapshot(at: 0)
    }

    @Test("working needs an implement in work and the machine moving above the minimum speed")
    func working() {
        let rules = WorkRules()
        let lowered = snapshot([F.hitch(position: 10, inWork: 1)])
        #expect(rules.state(lowered, workSwitch: false, speed: 2, insideField: true) == .working)
        #expect(rules.state(lowered, workSwitch: false, speed: 0.2, insideField: true) == .notWorking)
        #expect(rules.state(lowered, workSwitch: false, speed: nil, insideField: true) == .unknown)
        // In work outside every known field is still work: the map may lack the field.
        #expect(rules.state(lowered, workSwitch: false, speed: -2, insideField: false) == .working)
        let raised = snapshot([F.hitch(position: 240, inWork: 0)])
        #expect(rules.state(raised, workSwitch: false, speed: 5, insideField: true) == .notWorking)
        #expect(rules.state(raised, workSwitch: false, speed: 5, insideField: false) == .road)
        #expect(rules.state(raised, workSwitch: false, speed: 5, insideField: nil) == .notWorking)
        #expect(
            rules.state(snapshot([F.pto(eighths: 8_000, engaged: 1)]), workSwitch: false, speed: 1, insideField: true)
                == .working)
    }

    @Test("a silent bus is unknown unless the work switch counts; the switch alone works a tractor that sends nothing")
    func silentBus() {
        let silent = snapshot([])
        #expect(
            WorkRules(signals: [.rearHitch, .rearPTO]).state(silent, workSwitch: true, speed: 2, insideField: true)
                == .unknown)
        #expect(
            WorkRules(signals: [.rearHitch, .rearPTO]).state(silent, workSwitch: false, speed: 2, insideField: false)
                == .road)
        #expect(WorkRules().state(silent, workSwitch: true, speed: 2, insideField: true) == .working)
        #expect(WorkRules().state(silent, workSwitch: false, speed: 2, insideField: true) == .notWorking)
        // An error in the hitch's sensor is not "out of work": with nothing else known, unknown.
        let failed = snapshot([F.hitch(position: 0xFE, inWork: 2)])
        #expect(
            WorkRules(signals: [.rearHitch]).state(failed, workSwitch: false, speed: 2, insideField: true) == .unknown)
        // A signal that does not count changes nothing: the hitch in work is not looked at, and the switch
        // off on a machine whose bus spoke is no word. On, it works the machine.
        let lowered = snapshot([F.hitch(position: 10, inWork: 1)])
        #expect(
            WorkRules(signals: [.rearPTO, .workSwitch]).state(lowered, workSwitch: false, speed: 2, insideField: true)
                == .unknown)
        #expect(
            WorkRules(signals: [.rearPTO, .workSwitch]).state(lowered, workSwitch: true, speed: 2, insideField: true)
                == .working)
        // A bus that spoke and fell silent, the switch off: unknown, not "not working".
        var listener = MachineListener()
        listener.take(F.hitch(position: 10, inWork: 1), at: 0)
        #expect(WorkRules().state(listener.snapshot(at: 1), workSwitch: false, speed: 2, insideField: true) == .working)
        #expect(
            WorkRules().state(listener.snapshot(at: 3.5), workSwitch: false, speed: 2, insideField: true) == .unknown)
    }
}

@Suite struct RecordedTractorTests {
    @Test(
        "the John Deere 5055E recording through the listener: its engine controller, speeds, fuel, hours and idle PTOs")
    func johnDeere() throws {
        let log = try CandumpFile.read(Fixtures.can("jd5055e-engine.log"), keeping: .atMost(20_000))
        var listener = MachineListener()
        var (fastest, hours, rates) = (0.0, Set<Double>(), [Double]())
        var (ptos, groundSpeeds) = (Set<String>(), 0)
        for frame in log.frames {
            guard let time = frame.time else { continue }
            listener.take(frame, at: time)
            let now = listener.snapshot(at: time)
            fastest = max(fastest, now.engineSpeed ?? 0)
            if let value = now.engineHours { hours.insert(value) }
            if let rate = now.fuelRate, (now.engineSpeed ?? 0) > 1_200 { rates.append(rate) }
            for pto in [now.rearPTO, now.frontPTO].compactMap({ $0 }) {
                ptos.insert("\(pto.engaged) \(pto.shaftSpeed)")
            }
            if now[.groundBasedSpeed] != nil, now.speed == nil { groundSpeeds += 1 }
        }
        let end = listener.snapshot(at: try #require(log.frames.last?.time))
        #expect(end.engine == 0 && end.tractorECU == nil)
        #expect(listener.name(of: 0)?.industryGroup == 2 && listener.name(of: 0x47)?.function == 52)
        #expect(fastest == 1_256.25)
        #expect(hours == [147.55])
        // At 1,230 rpm standing: 2.6 to 3.0 L/h, more while it revs up.
        let median = rates.sorted()[rates.count / 2]
        #expect(
            rates.count > 100 && (2.5...3.1).contains(median) && rates.allSatisfy { (0...6.25).contains($0) },
            "\(median)")
        // The PTOs say disengaged at 0 rpm, or nothing at all (all ones, not available, never 0).
        #expect(ptos == ["value(false) value(0.0)", "notAvailable notAvailable"], "\(ptos)")
        // Ground speed comes, all ones: heard, but no speed.
        #expect(groundSpeeds > 1_000)
        #expect(end.engineSpeed == 0 && end[.engineSpeed]?.source == 0)
    }
}
