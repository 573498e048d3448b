import Foundation
import GNSS
import GRDB
import TestSupport
import Testing

@testable import Track

private func utc() -> Calendar {
    var calendar = Calendar(identifier: .gregorian)
    calendar.timeZone = TimeZone(identifier: "UTC")!
    return calendar
}

private let t0 = Date(timeIntervalSince1970: 1_790_000_000)  // 2026-09-21T14:13:20Z

private func point(_ second: Double, latitude: Double = 52, state: FixState = .fix(.threeD, .rtkFixed)) -> TrackPoint {
    TrackPoint(
        time: t0.addingTimeInterval(second), state: state, coordinate: Coordinate(latitude: latitude, longitude: 10),
        speed: 1)
}

/// Rows in the file itself, read on a connection of the test's own.
private func storedPoints(_ path: String) throws -> Int {
    try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM point") ?? -1 }
}

/// Values out of range written into the file, as damage or an editor would leave them.
private func tamper(_ path: String) throws {
    try DatabaseQueue(path: path).write { db in
        try db.execute(
            sql:
                "INSERT INTO point (time_ms, state, latitude, longitude, speed) VALUES (?, 'fix_3d_rtk_fixed', 95, 10, -4)",
            arguments: [Int64(t0.timeIntervalSince1970 * 1000) + 5000])
        try db.execute(
            sql: "INSERT INTO point (time_ms, state) VALUES (?, 'flying')",
            arguments: [Int64(t0.timeIntervalSince1970 * 1000) + 6000])
        try db.execute(sql: "UPDATE day SET samples = -5, rtk_fixed = 1e300, metres = 'many'")
    }
}

/// The machine's values out of range, as damage or an editor would leave them.
private func damageMachine(_ path: String) throws {
    try DatabaseQueue(path: path).write { db in
        try db.execute(sql: "UPDATE point SET work = 7, engine_speed = 1e9, fuel_rate = -1")
        try db.execute(sql: "UPDATE day SET working = -3, fuel = 1e12, engine_running = 'long'")
    }
}

/// A track file as the first version wrote it: one day of figures, no delivery counts.
private func writeFirstSchema(_ path: String) throws {
    try DatabaseQueue(path: path).write { db in
        try db.execute(
            sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1');
                CREATE TABLE point (time_ms INTEGER PRIMARY KEY, state TEXT NOT NULL, reason TEXT,
                                    latitude REAL, longitude REAL, altitude REAL, speed REAL);
                CREATE TABLE day (day TEXT PRIMARY KEY, samples INTEGER NOT NULL, rtk_fixed REAL NOT NULL, rtk_float REAL NOT NULL,
                                  dgps REAL NOT NULL, autonomous REAL NOT NULL, other_fix REAL NOT NULL, without_fix REAL NOT NULL,
                                  without_receiver REAL NOT NULL, moving REAL NOT NULL, metres REAL NOT NULL) WITHOUT ROWID;
                INSERT INTO day VALUES ('2026-09-20', 100, 99, 0, 0, 0, 0, 0, 0, 50, 120.5);
                """)
    }
}

@Suite struct TrackStoreTests {
    func store(_ path: String, _ change: (inout TrackStore.Configuration) -> Void = { _ in }) -> TrackStore {
        var configuration = TrackStore.Configuration()
        configuration.calendar = utc()
        change(&configuration)
        return TrackStore(path: path, configuration: configuration)
    }

    @Test("points are held, then written together once a minute: one commit for sixty samples")
    func heldThenWrittenTogether() async throws {
        let scratch = TemporaryDirectory("track")
        let path = scratch.file("track.sqlite")
        let track = store(path)
        for second in 0..<60 {
            try await track.record(point(Double(second)), now: t0.addingTimeInterval(Double(second)))
        }
        #expect(try storedPoints(path) == 0, "nothing is written within the minute")
        #expect(try await track.points(from: t0, to: t0.addingTimeInterval(60)).count == 60, "held points are read too")
        try await track.record(point(60), now: t0.addingTimeInterval(60))
        #expect(try storedPoints(path) == 61)
        let day = try #require(try await track.days()[LocalDay(year: 2026, month: 9, day: 21)])
        #expect(
            (day.secondsByQuality[.rtkFixed] ?? -1) == 60.0 && day.samples == 61,
            "the newest point waits for the next to say how long it stood")
    }

    @Test("a new run goes on from the newest stored point: its time counts, and no sample is counted twice")
    func aRestartGoesOn() async throws {
        let scratch = TemporaryDirectory("track")
        let path = scratch.file("track.sqlite")
        let first = store(path)
        for second in 0..<10 { try await first.record(point(Double(second)), now: t0) }
        try await first.flush(now: t0)
        let second = store(path)
        for next in 10..<20 { try await second.record(point(Double(next)), now: t0) }
        try await second.flush(now: t0)
        let reader = TrackStore(readingOnly: path, calendar: utc())
        let day = try #require(try await reader.days()[LocalDay(year: 2026, month: 9, day: 21)])
        #expect(
            day.samples == 20 && day.secondsWithFix == 19,
            "20 samples once each; 19 steps of 1 s, across the restart too")
        #expect(try await reader.points(from: t0, to: t0.addingTimeInterval(100)).count == 20)
    }

    @Test("points older than the retention go, then the oldest beyond the cap; days' figures stay")
    func retentionAndCap() async throws {
        let scratch = TemporaryDirectory("track")
        let path = scratch.file("track.sqlite")
        let track = store(path) {
            $0.retention = 100
            $0.maximumPoints = 30
        }
        for second in 0..<200 { try await track.record(point(Double(second)), now: t0) }
        try await track.flush(now: t0.addingTimeInterval(200))
        let kept = try await track.points(from: t0, to: t0.addingTimeInterval(1000))
        #expect(kept.count == 30, "retention leaves 100, the cap 30")
        #expect(kept.first?.time == t0.addingTimeInterval(170) && kept.last?.time == t0.addingTimeInterval(199))
        let day = try #require(try await track.days()[LocalDay(year: 2026, month: 9, day: 21)])
        #expect(day.samples == 200, "the figures outlive the points")
    }

    @Test("a reader finds nothing and creates nothing where no track has been kept")
    func aReaderCreatesNothing() async throws {
        let scratch = TemporaryDirectory("track")
        let path = scratch.file("track.sqlite")
        let reader = TrackStore(readingOnly: path, calendar: utc())
        #expect(try await reader.days().isEmpty)
        #expect(try await reader.points(from: t0, to: t0.addingTimeInterval(10)).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: path))
        await #expect(throws: TrackStoreError.self) {
            try await reader.record(point(0), now: t0.addingTimeInterval(3600))
        }
    }

    @Test("values out of range in the file are not believed")
    func damagedRowsAreChecked() async throws {
        let scratch = TemporaryDirectory("track")
        let path = scratch.file("track.sqlite")
        let track = store(path)
        try await track.record(point(0), now: t0)
        try await track.record(point(1), now: t0)
        try await track.flush(now: t0)
        try tamper(path)
        let points = try await TrackStore(readingOnly: path, calendar: utc()).points(
            from: t0, to: t0.addingTimeInterval(10))
        #expect(points.count == 3, "an unknown state is skipped")
        #expect(points.count == 3 && points[2].coordinate == nil && points[2].speed == nil && !points[2].isFix)
        let day = try await TrackStore(readingOnly: path, calendar: utc()).days().values.first
        #expect(day?.samples == 0 && day?.secondsWithFix == 0 && day?.metresDriven == 0)
    }

    @Test(
        "what became of samples is counted on the day they were taken, written with the next flush even without new points"
    )
    func deliveries() async throws {
        let scratch = TemporaryDirectory("track")
        let path = scratch.file("track.sqlite")
        let track = store(path)
        try await track.record(point(0), now: t0)
        try await track.flush(now: t0)
        let lateEvening = Date(timeIntervalSince1970: 1_790_035_200 - 900)  // 23:45 UTC on 21 September
        try await track.count(
            [
                DeliveryCount(time: t0, sent: 5, acknowledged: 4), DeliveryCount(time: lateEvening, sent: 1, lost: 2),
                DeliveryCount(time: lateEvening.addingTimeInterval(900), acknowledged: 3),
            ], now: t0)
        try await track.flush(now: t0.addingTimeInterval(60))
        try await track.count([DeliveryCount(time: t0, acknowledged: 1)], now: t0)
        try await track.flush(now: t0.addingTimeInterval(120))
        let days = try await TrackStore(readingOnly: path, calendar: utc()).days()
        let monday = try #require(days[LocalDay(year: 2026, month: 9, day: 21)])
        #expect(monday.sent == 6 && monday.acknowledged == 5 && monday.lost == 2 && monday.samples == 1)
        let tuesday = try #require(days[LocalDay(year: 2026, month: 9, day: 22)])
        #expect(tuesday.acknowledged == 3 && tuesday.samples == 0)
        #expect(WorkLedger.sum(days, by: .year).first?.figures.acknowledged == 8)
    }

    @Test("a track file from before the delivery counts keeps its days and gains the counts")
    func upgradeKeepsDays() async throws {
        let scratch = TemporaryDirectory("track")
        let path = scratch.file("track.sqlite")
        try writeFirstSchema(path)
        let old = try await TrackStore(readingOnly: path, calendar: utc()).days()
        #expect(
            old[LocalDay(year: 2026, month: 9, day: 20)]?.samples == 100 && old.first?.value.sent == 0,
            "read before the upgrade")
        let track = store(path)
        try await track.count([DeliveryCount(time: t0.addingTimeInterval(-86_400), acknowledged: 7)], now: t0)
        try await track.flush(now: t0)
        let day = try #require(
            try await TrackStore(readingOnly: path, calendar: utc()).days()[LocalDay(year: 2026, month: 9, day: 20)])
        #expect(day.samples == 100 && day.metresDriven == 120.5 && day.acknowledged == 7 && day.sent == 0)
    }

    @Test("what the machine did is kept with each point and each day, and read back only within its ranges")
    func machineKept() async throws {
        let scratch = TemporaryDirectory("track")
        let path = scratch.file("track.sqlite")
        let track = store(path)
        let works: [MachineReading.Work?] = [.working, .working, .notWorking, .unknown, nil]
        for (second, work) in works.enumerated() {
            var kept = point(Double(second), latitude: 52 + Double(second) * 0.00001)
            (kept.work, kept.engineSpeed, kept.fuelRate) = (work, work == nil ? nil : 1_500, work == nil ? nil : 18)
            try await track.record(kept, now: t0)
        }
        try await track.flush(now: t0)
        let reader = TrackStore(readingOnly: path, calendar: utc())
        let points = try await reader.points(from: t0, to: t0.addingTimeInterval(10))
        #expect(points.map(\.work) == works && points.map(\.engineSpeed) == [1_500, 1_500, 1_500, 1_500, nil])
        let day = try #require(try await reader.days().values.first)
        #expect(day.secondsWorking == 2 && day.secondsWorkKnown == 3 && day.secondsEngineRunning == 4)
        #expect(abs(day.litresFuel - 4 * 18 / 3_600.0) < 1e-12 && abs(day.metresWorking - 2 * 1.1119) < 0.01, "\(day)")

        try damageMachine(path)
        let damaged = try await reader.points(from: t0, to: t0.addingTimeInterval(10))
        #expect(
            damaged.count == 5 && damaged.allSatisfy { $0.work == nil && $0.engineSpeed == nil && $0.fuelRate == nil })
        let read = try #require(try await TrackStore(readingOnly: path, calendar: utc()).days().values.first)
        #expect(
            read.secondsWorking == 0 && read.litresFuel == 0 && read.secondsEngineRunning == 0
                && read.secondsWorkKnown == 3)
    }
}
