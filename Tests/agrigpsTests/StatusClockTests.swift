import Foundation
import GNSS
import Spool
import StateDirectory
import TestSupport
import Testing

/// `agrigps status` just after a box without a battery-backed clock was set right from 1970: the
/// heartbeat and the spool still hold the old clock's stamps, and its error. No age it prints may be
/// longer than the system has been running.
@Suite("agrigps status after the clock steps from 1970", .timeLimit(.minutes(1)))
struct StatusClockTests {
    /// Seconds since boot, as /proc/uptime says.
    static func systemUptime() throws -> Double {
        let text = try String(contentsOfFile: "/proc/uptime", encoding: .utf8)
        return try #require(text.split(separator: " ").first.flatMap { Double($0) })
    }

    @Test("no reason and no age in the JSON is longer than the system has run, where it said 1795840913 s")
    func agesBoundedByUptime() async throws {
        let scratch = TemporaryDirectory("stepped")
        let state = scratch.path
        let now = Date()
        let nineteenSeventy = Date(timeIntervalSince1970: 95)
        let fix = PositionSample(
            sampledAt: nineteenSeventy, state: .fix(.threeD, .rtkFixed),
            report: PositionReport(
                time: now.addingTimeInterval(-4), gpsdMode: 3, gpsdStatus: 3, latitude: 52, longitude: 8))
        // A sample waiting, taken on the right clock; the spool is read at the time the heartbeat's
        // old clock error makes of now, 56 years ahead.
        _ = await Spool(path: state + "/spool.sqlite").append(
            PositionSample(sampledAt: now.addingTimeInterval(-3), state: .noFix, report: nil))
        // Written by a daemon that is this process (so it runs) just after the step: the right time
        // on the file, the last fix at 1970, and the clock's old error.
        var heartbeat = Heartbeat(pid: getpid(), startedAt: Date(timeIntervalSince1970: 5), onboarded: false)
        heartbeat.updatedAt = now.addingTimeInterval(-2)
        heartbeat.lastFix = Heartbeat.Sample(fix)
        heartbeat.lastSample = Heartbeat.Sample(
            PositionSample(sampledAt: nineteenSeventy.addingTimeInterval(1), state: .noFix, report: nil))
        heartbeat.systemClockError = nineteenSeventy.timeIntervalSince(now)
        try heartbeat.write(to: state + "/heartbeat.json")

        let status = try await AgrigpsCommand.run(["status", "--state-dir", state])
        let json = try await AgrigpsCommand.run(["status", "--json", "--state-dir", state])
        // Read after status ran, plus the half second its whole numbers may round up.
        let uptime = try Self.systemUptime() + 1
        let headline = try #require(status.stdout.first)
        let numbers = headline.split(whereSeparator: { !$0.isNumber }).compactMap { Double($0) }
        #expect(numbers.allSatisfy { $0 <= uptime }, "\(headline) (up \(uptime) s)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [String: Any])
        let daemon = try #require(object["daemon"] as? [String: Any])
        #expect(daemon["state"] as? String == "running")
        #expect((daemon["heartbeat_age_s"] as? Double).map { $0 <= uptime } == true, "\(daemon)")
        let spool = try #require(object["spool"] as? [String: Any])
        #expect((spool["oldest_pending_age_s"] as? Double).map { $0 <= uptime } == true, "\(spool)")
        for reason in object["reasons"] as? [String] ?? [] {
            #expect(
                reason.split(whereSeparator: { !$0.isNumber }).compactMap { Double($0) }.allSatisfy { $0 <= uptime },
                "\(reason)")
        }
    }
}
