import AgrirouterWire
import Foundation
import GRDB
import Spool
import StateDirectory
import SwiftProtobuf
import TestSupport
import Testing

/// The state directory is the daemon's own, but a damaged disk, a bad edit or a hostile copy can put
/// anything in it. Reading it back must never trap: values out of range read as unknown.
@Suite("a damaged state directory", .serialized, .timeLimit(.minutes(2)))
struct DamagedStateTests {
    let scratch = TemporaryDirectory("damaged")
    /// Made by the code under test, as a first run makes it.
    var state: String { scratch.file("state") }

    /// A spool, a store of others and a heartbeat, each with extreme numbers and hostile text in it.
    func damage() async throws {
        let spool = Spool(path: state + "/spool.sqlite")
        _ = await spool.append(Samples.fix(latitude: 52, longitude: 8, quality: .autonomous))
        _ = await spool.append(Samples.fix(latitude: 52.1, longitude: 8.1, quality: .autonomous))
        let spoolFile = try DatabaseQueue(path: state + "/spool.sqlite")
        try await spoolFile.write { db in
            try db.execute(
                sql:
                    "UPDATE sample SET sampled_at = -1e300, latitude = 'north', gpsd_mode = 1e300, wire_size = 'big' WHERE id = 1"
            )
            try db.execute(
                sql: "UPDATE sample SET clock_skew = 1e300, altitude_hae = 1e308, receiver_time = 1e300 WHERE id = 2")
            try db.execute(
                sql:
                    "INSERT OR REPLACE INTO spool_state (name, number) VALUES ('dropped_caps', 1e300), ('resent', -1e300), ('last_append', 1e300)"
            )
        }
        try spoolFile.close()

        let store = OtherMachinesStore(path: state + "/others.sqlite")
        var entry = GPSEntry()
        (entry.positionStatus, entry.positionNorth, entry.positionEast) = (.dGnss, 52.2, 8.2)
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date())
        var list = Agrirouter_Technicalmessagetype_GPSList()
        list.gpsEntries = [entry]
        let message = ReceivedFeedMessage(
            messageID: "m1", senderID: "peer", technicalMessageType: TechnicalMessageType.gpsInfo,
            sentAt: Date(), content: try list.serializedBytes())
        _ = try await store.record([message], ownEndpointID: "me", receivedAt: Date())
        try await store.applyEndpointList([("peer", "Peer")], ownEndpointID: "me", at: Date())
        let othersFile = try DatabaseQueue(path: state + "/others.sqlite")
        try await othersFile.write { db in
            try db.execute(
                sql:
                    "UPDATE position SET report_time = 1e300, latitude = 'x', longitude = 1e308, altitude = -1e300, satellites = 1e300"
            )
            try db.execute(
                sql: "UPDATE machine SET last_received_at = -1e300, name = ?", arguments: ["Evil\u{1B}[31m\nName"])
            try db.execute(
                sql:
                    "INSERT OR REPLACE INTO view_state (key, value) VALUES ('endpoints_listed_at', 1e300), ('refused_messages', 'many')"
            )
        }
        try othersFile.close()

        let heartbeat = """
            {"pid":1,"startedAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z","onboarded":false,
             "lastSample":{"state":"fix_3d_autonomous\\u001b[2J","time":"2026-01-01T00:00:00Z","latitude":1e300,"longitude":8,"clockSkew":1e300},
             "lastFix":{"state":"fix_3d_autonomous","time":"2026-01-01T00:00:00Z","latitude":95,"longitude":8,"clockSkew":-1e300},
             "lastError":"bad\\u001b]0;title\\u0007\\nforged line","lastErrorAt":"2026-01-01T00:00:00Z"}
            """
        try Data(heartbeat.utf8).write(to: URL(fileURLWithPath: state + "/heartbeat.json"))
    }

    @Test(
        "status, status --json, others and others --json answer with no trap, valid JSON, and no raw control character")
    func readers() async throws {
        try await damage()
        for arguments in [
            ["status"], ["status", "--json"], ["others", "--include-stale"], ["others", "--json", "--include-stale"],
        ] {
            let result = try await AgrigpsCommand.run(arguments + ["--state-dir", state])
            let code = try #require(result.code, "\(arguments) did not end")
            #expect((0...3).contains(code), "\(arguments): exit \(code), \(result.stderr)")
            let output = (result.stdout + result.stderr).joined(separator: "\n")
            #expect(
                !output.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" && $0 != "\t" },
                "\(arguments): \(output)")
            if arguments.contains("--json") {
                let object = try JSONSerialization.jsonObject(with: Data(result.stdout.joined().utf8)) as? [String: Any]
                #expect(object?.isEmpty == false, "\(arguments): \(result.stdout)")
            }
        }
        let others = try await AgrigpsCommand.run(["others", "--include-stale", "--state-dir", state])
        #expect(others.code == 0)
        #expect(others.stdout.contains { $0.contains("Evil\\x1b[31m\\nName") }, "\(others.stdout)")
    }

    @Test(
        "the daemon starts on the damaged spool, samples and stops cleanly; the damaged rows are still counted, not lost"
    )
    func daemon() async throws {
        try await damage()
        let run = try await AgrigpsCommand.run(["run", "--replay", Fixtures.log("ublox-8"), "--state-dir", state])
        #expect(run.code == 0, "\(run.stderr)")
        let spool = Spool(path: state + "/spool.sqlite")
        let samples = try await spool.allSamples()
        #expect(samples.count > 2)
        // The row whose numbers are out of range is kept, with those numbers unknown.
        let damaged = try #require(samples.first { $0.0.rowID == 2 }?.0.sample)
        #expect(
            damaged.clockSkew == nil && damaged.report?.altitudeHAE == nil && damaged.report?.time == nil
                && damaged.report?.latitude == 52.1)
        // The row whose system time is damaged reads as taken at its receiver time, which the age cap
        // respects: it is kept, its latitude (text) unknown.
        let status = await spool.status()
        let first = try #require(samples.first { $0.0.rowID == 1 }?.0.sample)
        #expect(first.sampledAt == first.receiverTime && first.report?.latitude == nil)
        #expect(status.dropped.isEmpty && status.resent == 0, "\(status.dropped)")
    }

    @Test(
        "committed rows that vanish between two runs (a lost write-ahead log, a spool moved aside) are counted as lost, and status is CRITICAL"
    )
    func vanishedRows() async throws {
        let first = try await AgrigpsCommand.run(["run", "--replay", Fixtures.log("ublox-8"), "--state-dir", state])
        #expect(first.code == 0, "\(first.stderr)")
        let taken = try #require(first.stdout.last?.split(separator: " ").dropFirst().first.flatMap { Int($0) })
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: state + "/spool.sqlite" + suffix)
        }
        let second = try await AgrigpsCommand.run([
            "run", "--replay", Fixtures.log("ublox-lea-4h"), "--state-dir", state,
        ])
        #expect(second.code == 0)
        let counted = "the spool lost \(taken) committed samples (ids 1 to \(taken)) that were never sent"
        #expect(second.stderr.contains { $0.contains(counted) }, "\(second.stderr)")
        let status = try await AgrigpsCommand.run(["status", "--state-dir", state])
        #expect(status.code == 2)
        #expect(status.stdout.first?.contains("\(taken) samples lost: \(counted)") == true, "\(status.stdout)")
        // A third run over an intact spool finds nothing new to report (the first loss stays reported for a day).
        let third = try await AgrigpsCommand.run([
            "run", "--replay", Fixtures.log("ublox-lea-4h"), "--state-dir", state,
        ])
        #expect(third.code == 0)
        #expect(!third.stderr.contains { $0.contains("the spool lost") }, "\(third.stderr)")
        // The spool deleted with its commit mark: the previous run's heartbeat still notices, as a bound.
        for suffix in ["", "-wal", "-shm", "-mark"] {
            try? FileManager.default.removeItem(atPath: state + "/spool.sqlite" + suffix)
        }
        let fourth = try await AgrigpsCommand.run([
            "run", "--replay", Fixtures.log("ublox-lea-4h"), "--state-dir", state,
        ])
        #expect(
            fourth.stderr.contains { $0.contains("the spool lost committed rows") && $0.contains("up to") },
            "\(fourth.stderr)")
    }

    @Test(
        "times stamped while the clock read 1970, or ahead of a clock set back, are said to be unknown, not 20,000 days ago"
    )
    func clockSteps() async throws {
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        // A pid no process has, so the daemon reads as not running.
        var heartbeat = Heartbeat(pid: Int32.max, startedAt: Date(timeIntervalSince1970: 5), onboarded: false)
        heartbeat.lastError = "gpsd unreachable"
        heartbeat.lastErrorAt = Date(timeIntervalSince1970: 5)
        heartbeat.lastAcknowledgedAt = Date().addingTimeInterval(7200)
        try heartbeat.write(to: state + "/heartbeat.json")
        let status = try await AgrigpsCommand.run(["status", "--state-dir", state])
        #expect(
            status.stdout.contains("Last error: gpsd unreachable (at a time the clock did not know yet)"),
            "\(status.stdout)")
        #expect(
            status.stdout.contains("Last acknowledged: later than this clock says it is now: the clock was set back"))
        #expect(
            status.stdout.contains {
                $0.hasPrefix("Daemon: NOT RUNNING (last heartbeat at a time the clock did not know yet)")
            })
    }
}
