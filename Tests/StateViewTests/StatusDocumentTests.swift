import Foundation
import GNSS
import JSONText
import Spool
import StateDirectory
import TestSupport
import Testing

@testable import StateView

/// `status --json` and `others --json` against golden files: every key there, and unknown values written as null.
/// With AGRIGPS_WRITE_GOLDEN=1 the files are written afresh (then read the diff before committing).
@Suite("status --json and others --json")
struct StatusDocumentTests {
    let now = Date(timeIntervalSince1970: 1_790_000_000)

    func matches(_ snapshot: StatusSnapshot, _ name: String) throws {
        try written(StatusDocument(snapshot, verdict: snapshot.verdict(StatusThresholds())).json(), matches: name)
    }

    @Test("others --json: a machine without a name or a position has nulls, and our own position is given")
    func others() throws {
        let listing = OthersListingTests()
        let here = Coordinate(latitude: 52, longitude: 8)
        let own = Heartbeat.Sample(
            PositionSample(
                sampledAt: now, state: .fix(.threeD, .dgps),
                report: PositionReport(time: now, gpsdMode: 3, gpsdStatus: 2, latitude: 52, longitude: 8)))
        let document = OthersDocument(
            OthersListing(view: listing.view, ownPosition: here, now: now, includeStale: true),
            view: listing.view, ownFix: own, now: now)
        try written(JSONWriter.encode(document), matches: "others")
    }

    func written(_ json: String, matches name: String) throws {
        let path = Fixtures.root.appendingPathComponent("Fixtures/golden/\(name).json").path
        if ProcessInfo.processInfo.environment["AGRIGPS_WRITE_GOLDEN"] == "1" {
            try Data((json + "\n").utf8).write(to: URL(fileURLWithPath: path))
        }
        let golden = try String(contentsOfFile: path, encoding: .utf8).trimmingCharacters(in: .newlines)
        #expect(json == golden, "\(name): \(json)")
    }

    @Test("running, onboarded, no fix: the last fix is null, nothing is 0, 0")
    func noFix() throws {
        var heartbeat = Heartbeat(pid: 42, startedAt: now.addingTimeInterval(-3600), onboarded: true)
        heartbeat.lastSample = Heartbeat.Sample(PositionSample(sampledAt: now.addingTimeInterval(-1), state: .noFix))
        heartbeat.transport = "rest"
        var snapshot = StatusSnapshot(
            takenAt: now, daemon: .running(pid: 42, heartbeatAge: 2), heartbeat: heartbeat, environment: "qa",
            spool: SpoolStatus(), others: OthersView())
        snapshot.diskFree = 1 << 30
        try matches(snapshot, "status-no-fix")
    }

    @Test("a last fix whose coordinates did not read back: null coordinates, not the Gulf of Guinea")
    func unreadableCoordinates() throws {
        var heartbeat = Heartbeat(pid: 42, startedAt: now.addingTimeInterval(-3600), onboarded: true)
        var fix = Heartbeat.Sample(
            PositionSample(
                sampledAt: now.addingTimeInterval(-1), state: .fix(.threeD, .rtkFixed),
                report: PositionReport(time: now, gpsdMode: 3, gpsdStatus: 3, latitude: 52.5, longitude: 8.25)))
        (fix.latitude, fix.longitude) = (nil, nil)
        heartbeat.lastFix = fix
        var snapshot = StatusSnapshot(
            takenAt: now, daemon: .notRunning(lastHeartbeat: now.addingTimeInterval(-600)), heartbeat: heartbeat,
            environment: nil, spool: nil, others: OthersView())
        snapshot.spoolProblem = "no spool yet at /var/lib/agrigps/spool.sqlite: the daemon has not run here"
        try matches(snapshot, "status-not-running")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(StatusDocument(snapshot, verdict: (.critical, [])).json().utf8))
                as? [String: Any])
        let lastFix = try #require(object["last_fix"] as? [String: Any])
        #expect(lastFix["latitude"] is NSNull && lastFix["longitude"] is NSNull)
    }
}
