import Clocks
import Foundation
import TestSupport
import Testing

@testable import GNSS

/// Drives the sampling rules with a synthetic clock: `at(t)` is t seconds after start on both clocks.
private struct Clock {
    static let origin = Date(timeIntervalSince1970: 1_774_490_000)  // 2026-03-26
    var offset: Double = 0  // wall clock minus receiver clock, to model skew
    func at(_ t: Double) -> ClockReading {
        ClockReading(uptime: 1000 + t, wall: Clock.origin.addingTimeInterval(t + offset))
    }
}

private func fix(_ t: Double, status: Int = 0, lat: Double = 48.0) -> SourceEvent {
    .report(
        PositionReport(
            time: Clock.origin.addingTimeInterval(t), gpsdMode: 3, gpsdStatus: status,
            latitude: lat, longitude: 11.0))
}

private func noFix(_ t: Double?) -> SourceEvent {
    .report(PositionReport(time: t.map { Clock.origin.addingTimeInterval($0) }, gpsdMode: 1))
}

private let address = GPSDAddress(host: "127.0.0.1", port: 2947)

@Suite struct SamplerCoreTests {
    /// Feeds events at the given arrival times, ticking every 0.1 s in between, then finishes.
    private func run(
        _ timeline: [(Double, SourceEvent)], interval: Double, until end: Double? = nil,
        clock: Clock = Clock(), skewLimit: Double? = 60
    ) -> [PositionSample] {
        var core = SamplerCore(interval: interval, skewLimit: skewLimit, start: clock.at(0))
        var out: [PositionSample] = []
        var now = 0.0
        let last = end ?? (timeline.last?.0 ?? 0)
        var pending = timeline[...]
        while now <= last + 1e-9 || !pending.isEmpty {
            while let next = pending.first, next.0 <= now + 1e-9 {
                out += core.handle(next.1, at: clock.at(next.0))
                pending = pending.dropFirst()
            }
            out += core.tick(at: clock.at(now))
            now += 0.1
        }
        return out + core.finish(at: clock.at(last))
    }

    @Test func fixIntervalsFollowReceiverTime() {
        let timeline = (0..<10).map { t in (Double(t), fix(Double(t), lat: Double(t))) }
        let samples = run(timeline, interval: 5)
        #expect(samples.map { $0.report?.latitude } == [4, 9])  // newest report of each 5 s bucket
        #expect(samples.allSatisfy { $0.state == .fix(.threeD, .autonomous) })
    }

    @Test func fastReplayGivesTheSamplesOfARealTimeDrive() {
        let reports = (0..<60).map { fix(Double($0) * 0.5, lat: Double($0)) }
        let realTime = run(reports.enumerated().map { (Double($0.offset) * 0.5, $0.element) }, interval: 5)
        let fast = run(reports.enumerated().map { (Double($0.offset) * 0.001, $0.element) }, interval: 5)
        #expect(realTime.count == 6)
        #expect(realTime.map(\.report) == fast.map(\.report))
    }

    @Test("a fix reported first without its time and then with it is one sample, with the time")
    func fixFirstWithoutTime() {
        let timeless = SourceEvent.report(
            PositionReport(time: nil, gpsdMode: 3, gpsdStatus: 0, latitude: 48.0, longitude: 11.0))
        let samples = run([(0.5, timeless), (0.5001, fix(0.5)), (1.5, fix(1.5)), (2.5, fix(2.5))], interval: 1)
        #expect(samples.count == 3, "\(samples.map { "\($0.state) \(String(describing: $0.report?.time))" })")
        #expect(samples.allSatisfy { $0.report?.time != nil })
        // A fix without time that stays alone for a whole interval, or one elsewhere, is a sample of its own.
        let alone = run([(0.5, timeless), (2.6, fix(2.6))], interval: 1)
        #expect(alone.contains { $0.report?.time == nil && $0.state.hasPosition })
        let elsewhere = run([(0.5, timeless), (0.5001, fix(0.5, lat: 48.001))], interval: 1)
        #expect(elsewhere.count == 2 && elsewhere.first?.report?.time == nil)
    }

    @Test(
        "a fix that flickers within one epoch (fix, no fix, the same fix again) is sampled once, with the no fix between"
    )
    func theSameEpochIsNotSampledTwice() {
        let samples = run([(0.1, fix(0)), (0.2, noFix(nil)), (0.3, fix(0)), (1.1, fix(1, lat: 49))], interval: 1)
        #expect(samples.map(\.state) == [.fix(.threeD, .autonomous), .noFix, .fix(.threeD, .autonomous)])
        #expect(samples.compactMap { $0.report?.latitude } == [48, 49])
        // The same time with another position is another observation: it is kept.
        let moved = run(
            [(0.1, fix(0)), (0.2, noFix(nil)), (0.3, fix(0, lat: 48.5)), (1.1, fix(1, lat: 49))], interval: 1)
        #expect(moved.compactMap { $0.report?.latitude } == [48, 48.5, 49])
    }

    @Test func withoutAFixIntervalsFollowTheSystemClock() {
        // No-fix reports at 0.5, 1.5, 2.5; nothing after 3 s; interval 1 s, observed until 5 s.
        let timeline = [(0.5, noFix(100)), (1.5, noFix(101)), (2.5, noFix(102))]
        let samples = run(timeline, interval: 1, until: 5.05)
        #expect(samples.count == 5)
        #expect(
            samples.prefix(3).map { $0.receiverTime } == [100, 101, 102].map { Clock.origin.addingTimeInterval($0) })
        #expect(samples.prefix(4).allSatisfy { $0.state == .noFix })
        #expect(samples.suffix(2).allSatisfy { $0.report == nil && $0.detail != nil })
        // 2.5 s without a report from a receiver that was reporting: it is gone, not without a fix.
        #expect(samples.last?.state == .noReceiver(.silent))
    }

    @Test func fixLostAndRegainedAreBothSampled() throws {
        let timeline = [(0.0, fix(0)), (0.01, fix(1)), (0.02, noFix(2)), (0.03, noFix(3)), (0.04, fix(4))]
        let samples = run(timeline, interval: 1)
        #expect(samples.map(\.state.name) == ["fix_3d_autonomous", "fix_3d_autonomous", "no_fix", "fix_3d_autonomous"])
        try #require(samples.count == 4)
        #expect(samples[2].receiverTime == Clock.origin.addingTimeInterval(3))
    }

    @Test func gainingAFixWithoutTimeStillShowsTheNoFixBeforeIt() {
        let timeless = SourceEvent.report(PositionReport(gpsdMode: 3, latitude: 1, longitude: 2))
        let samples = run([(0.0, noFix(nil)), (0.01, timeless), (0.02, fix(5))], interval: 1)
        // Elsewhere than the fix with a time that follows it: another epoch's, so a sample of its own.
        #expect(samples.map(\.state.name) == ["no_fix", "fix_3d_autonomous", "fix_3d_autonomous"])
    }

    @Test func qualityIsKeptPerSample() {
        let timeline = [(0.0, fix(0, status: 2)), (0.1, fix(1, status: 3)), (0.2, fix(2, status: 4))]
        let samples = run(timeline, interval: 1)
        #expect(samples.map(\.state) == [.fix(.threeD, .dgps), .fix(.threeD, .rtkFixed), .fix(.threeD, .rtkFloat)])
    }

    @Test func gpsdUnreachableIsASampleEveryInterval() throws {
        let error = GPSDError(kind: .cannotConnect, address: address, code: -6, message: "can't connect")
        let timeline = [
            (0.0, fix(0)), (0.5, SourceEvent.disconnected(error)), (0.7, .unreachable(error)),
            (1.5, .unreachable(error)), (2.6, .unreachable(error)),
        ]
        let samples = run(timeline, interval: 1, until: 3.6)
        // The held fix is emitted at once; then one unreachable sample per second of system time.
        #expect(
            samples.map(\.state) == [.fix(.threeD, .autonomous), .gpsdUnreachable, .gpsdUnreachable, .gpsdUnreachable])
        try #require(samples.count == 4)
        #expect(samples[1].detail == error.description)
    }

    @Test func deviceRemovalAndSilenceMeanNoReceiver() {
        let removed = run([(0.0, fix(0)), (0.2, .deviceRemoved("/dev/ttyACM0"))], interval: 1, until: 1.3)
        #expect(removed.map(\.state) == [.fix(.threeD, .autonomous), .noReceiver(.removed)])

        let silent = run([(0.0, fix(0)), (0.2, .receiverSilent(seconds: 5))], interval: 1, until: 1.3)
        #expect(silent.map(\.state) == [.fix(.threeD, .autonomous), .noReceiver(.silent)])

        let none = run([(0.0, .connected(address)), (0.1, .devices([]))], interval: 1, until: 1.2)
        #expect(none.map(\.state) == [.noReceiver(.noDevice)])
    }

    @Test func aReceiverThatStopsMidFixIsClosedByTheSystemClock() {
        // A fix report, then nothing: the receiver-time interval must not stay open forever.
        let samples = run([(0.0, fix(0))], interval: 1, until: 4)
        #expect(samples.first?.state == .fix(.threeD, .autonomous))
        #expect(samples.count >= 2)
        #expect(samples.dropFirst().allSatisfy { $0.report == nil })
        #expect(
            samples.dropFirst().map(\.state) == [.noFix, .noReceiver(.silent), .noReceiver(.silent)],
            "silent from 2.5 s without a report")
    }

    @Test("no hole when the fix is lost and the receiver falls silent: a sample for every interval, none stamped twice")
    func noHoleWhenReportsStop() throws {
        // 1 Hz fixes for 10 s, then nothing; gpsd's source says "silent" after 5 s of quiet.
        var timeline = (0..<10).map { t in (Double(t), fix(Double(t))) }
        timeline.append((14.0, .receiverSilent(seconds: 5)))
        let samples = run(timeline, interval: 1, until: 20)
        let times = samples.map { $0.sampledAt.timeIntervalSince(Clock.origin) }
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        // A fix is stamped when it arrived, an explicit state at the end of its interval: so the one
        // gap of two seconds is between the last fix's interval and the first without one.
        #expect(gaps.allSatisfy { $0 > 0.5 && $0 <= 2.01 }, "times \(times.map { ($0 * 100).rounded() / 100 })")
        #expect(samples.count == 20, "\(samples.count) samples for 20 s")
        #expect(samples.prefix(10).allSatisfy { $0.state.hasPosition })
        #expect(samples.last?.state == .noReceiver(.silent))
    }

    @Test func clockSkewBeyondSixtySecondsIsFlagged() {
        let booted1970 = Clock(offset: -Clock.origin.timeIntervalSince1970)
        let skewed = run([(0.0, fix(0)), (0.1, fix(1))], interval: 1, clock: booted1970)
        #expect(skewed.allSatisfy { ($0.clockSkew ?? 0) < -1_700_000_000 })

        let slightlyOff = run([(0.0, fix(0)), (0.1, fix(1))], interval: 1, clock: Clock(offset: 30))
        #expect(slightlyOff.allSatisfy { $0.clockSkew == nil })

        let replay = run([(0.0, fix(0))], interval: 1, clock: booted1970, skewLimit: nil)
        #expect(replay.allSatisfy { $0.clockSkew == nil })
    }

    @Test func backwardsReceiverTimeStartsANewInterval() {
        let samples = run([(0.0, fix(100)), (0.1, fix(50)), (0.2, fix(51))], interval: 1)
        #expect(samples.map(\.receiverTime) == [100, 50, 51].map { Clock.origin.addingTimeInterval($0) })
    }

    @Test("nextTick says when a tick has something to emit, so a thread can sleep until then")
    func nextTickIsWhenTickEmits() {
        let clock = Clock()
        var core = SamplerCore(interval: 1, quietGrace: 1.5, start: clock.at(0))
        #expect(core.nextTick == Double(1001))
        #expect(core.tick(at: clock.at(0.99)).isEmpty)
        #expect(core.tick(at: clock.at(1.0)).map(\.state) == [.noFix])
        #expect(core.nextTick == Double(1002))

        // Counting receiver time: nothing until the quiet grace after the last report has passed.
        _ = core.handle(fix(1.2), at: clock.at(1.2))
        _ = core.handle(fix(2.2), at: clock.at(2.2))
        #expect(abs((core.nextTick ?? 0) - 1004.7) < 1e-9)
        #expect(core.tick(at: clock.at(4.7)).isEmpty)
        // The fix's interval, and the one the grace covered without reports: no hole.
        #expect(core.tick(at: clock.at(4.71)).map(\.state.hasPosition) == [true, false])
        #expect(abs((core.nextTick ?? 0) - 1005.2) < 1e-9)
    }
}

@Suite("The best known UTC")
struct TrueTimeTests {
    let system = Date(timeIntervalSince1970: 1_790_000_000)

    func fix(gnss: Date, sampledAt: Date) -> PositionSample {
        Samples.fix(longitude: 8, quality: .autonomous, at: gnss, sampledAt: sampledAt)
    }

    @Test("before any fix: the system clock if plausible, else unknown")
    func beforeAFix() {
        #expect(TrueTime().now(systemNow: system, uptimeNow: 10) == system)
        #expect(
            TrueTime().now(systemNow: Date(timeIntervalSince1970: 5), uptimeNow: 10) == nil, "a box that booted at 1970"
        )
        #expect(
            TrueTime().corrected(
                Date(timeIntervalSince1970: 5), systemNow: Date(timeIntervalSince1970: 5), uptimeNow: 10)
                == Date(timeIntervalSince1970: 5), "unknown: left as it is")
    }

    @Test("after a fix: GNSS time carried forward on the monotonic clock, whatever the system clock does")
    func afterAFix() {
        let clock = TrueTime()
        // The system clock is 2 h fast; the sample was known 0.5 s ago.
        let gnss = system.addingTimeInterval(-7200)
        clock.observe(fix(gnss: gnss, sampledAt: system.addingTimeInterval(-0.5)), systemNow: system, uptimeNow: 100)
        #expect(clock.now(systemNow: system, uptimeNow: 100) == gnss.addingTimeInterval(0.5))
        #expect(clock.systemClockError(systemNow: system, uptimeNow: 100) == 7199.5)
        // 60 s later the system clock is stepped back to 1970: the truth moves on by 60 s all the same.
        #expect(clock.now(systemNow: Date(timeIntervalSince1970: 0), uptimeNow: 160) == gnss.addingTimeInterval(60.5))
        #expect(
            clock.corrected(system.addingTimeInterval(-10), systemNow: system, uptimeNow: 100)
                == gnss.addingTimeInterval(-9.5), "a system time moved onto the true clock")
    }

    /// On a busy box the sample taken at "1970" may be looked at only after NTP set the clock: its age
    /// by the system clock is then 56 years. Its monotonic stamp says 5 s, and the truth follows that.
    @Test("a clock set between sampling and observing moves nothing: the sample's monotonic stamp dates it")
    func clockSetBeforeTheSampleIsObserved() {
        let clock = TrueTime()
        var sample = fix(gnss: system, sampledAt: Date(timeIntervalSince1970: 1000))
        sample.sampledUptime = 95
        clock.observe(sample, systemNow: system.addingTimeInterval(5), uptimeNow: 100)
        #expect(clock.now(systemNow: system.addingTimeInterval(5), uptimeNow: 100) == system.addingTimeInterval(5))
        // Without a monotonic stamp, an age of 56 years is no age: a stamp early, never ahead.
        let unstamped = TrueTime()
        unstamped.observe(
            fix(gnss: system, sampledAt: Date(timeIntervalSince1970: 1000)), systemNow: system.addingTimeInterval(5),
            uptimeNow: 100)
        #expect(unstamped.now(systemNow: system.addingTimeInterval(5), uptimeNow: 100) == system)
    }

    @Test(
        "samples without a position or a time, a time before 2026 (GPS week rollover), and a replay's, do not set the clock"
    )
    func ignored() {
        let rollover = TrueTime()
        rollover.observe(
            fix(gnss: system.addingTimeInterval(-1024 * 7 * 86_400), sampledAt: system), systemNow: system, uptimeNow: 1
        )
        #expect(
            rollover.now(systemNow: system, uptimeNow: 1) == system, "19.6 years back is a receiver fault, not the time"
        )
        let clock = TrueTime()
        clock.observe(PositionSample(sampledAt: system, state: .noFix), systemNow: system, uptimeNow: 1)
        #expect(clock.systemClockError(systemNow: system, uptimeNow: 1) == 0)
        let replay = TrueTime(followsGNSS: false)
        replay.observe(
            fix(gnss: Date(timeIntervalSince1970: 1_500_000_000), sampledAt: system), systemNow: system, uptimeNow: 1)
        #expect(replay.now(systemNow: system, uptimeNow: 1) == system)
    }

    @Test("agrirouter's Date stands in until a fix: a lower bound that never steps back, and a fix wins")
    func serverTime() {
        let clock = TrueTime(wall: .shifted(by: 7200))
        #expect(!clock.isVerified)
        clock.observe(serverTime: system, uptimeNow: 10)
        #expect(clock.isVerified)
        #expect(clock.now(systemNow: system.addingTimeInterval(7200), uptimeNow: 15) == system.addingTimeInterval(5))
        // An earlier answer's Date (a second's resolution) does not move the time back.
        clock.observe(serverTime: system.addingTimeInterval(3), uptimeNow: 14)
        #expect(clock.now(systemNow: system, uptimeNow: 15) == system.addingTimeInterval(5))
        clock.observe(serverTime: Date(timeIntervalSince1970: 5), uptimeNow: 16)
        #expect(
            clock.now(systemNow: system, uptimeNow: 16) == system.addingTimeInterval(6),
            "an implausible Date is ignored")
        clock.observe(fix(gnss: system.addingTimeInterval(100), sampledAt: system), systemNow: system, uptimeNow: 20)
        #expect(clock.now(systemNow: system, uptimeNow: 21) == system.addingTimeInterval(101), "the fix wins")
    }

    @Test("a sample's monotonic stamp gets its true time once the clocks are related")
    func samplesFromBeforeTheFix() {
        let clock = TrueTime()
        #expect(clock.time(atUptime: 5) == nil)
        clock.observe(
            fix(gnss: system, sampledAt: Date(timeIntervalSince1970: 1000)),
            systemNow: Date(timeIntervalSince1970: 1000), uptimeNow: 100)
        #expect(
            clock.time(atUptime: 40) == system.addingTimeInterval(-60), "taken a minute before the fix, at \"1970\"")
    }

    @Test(
        "the wall clock a test shifts through a file follows the file, read again once a second (virtual time), and keeps its shift when the file is nonsense"
    )
    func wallClockFromAFile() throws {
        let directory = TemporaryDirectory("shift")
        let path = directory.file("shift")
        let time = ManualClock()
        try "-3600\n".write(toFile: path, atomically: true, encoding: .utf8)
        let wall = WallClock.shifted(byFile: path, monotonic: time.clock)
        #expect(abs(wall.now().timeIntervalSince(Date()) + 3600) < 1)
        try "7200".write(toFile: path, atomically: true, encoding: .utf8)
        time.advance(by: 0.9)
        #expect(abs(wall.now().timeIntervalSince(Date()) + 3600) < 1, "read again within a second")
        time.advance(by: 0.1)
        #expect(abs(wall.now().timeIntervalSince(Date()) - 7200) < 1, "read again after a second")
        try "not a number".write(toFile: path, atomically: true, encoding: .utf8)
        time.advance(by: 1)
        #expect(abs(wall.now().timeIntervalSince(Date()) - 7200) < 1, "nonsense keeps the last shift")
        try "\(201 * 365.25 * 86_400)".write(toFile: path, atomically: true, encoding: .utf8)
        time.advance(by: 1)
        #expect(abs(wall.now().timeIntervalSince(Date()) - 7200) < 1, "beyond 200 years keeps the last shift")
    }
}
