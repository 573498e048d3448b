import Foundation
import GNSS
import GRDB
import TestSupport
import Testing

@testable import Spool

extension TemporaryDirectory {
    var spoolPath: String { file("spool.sqlite") }
}

/// An hour ago, on a whole second: recent enough that the default age cap keeps every sample.
let epoch = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3600).rounded(.down))

func sample(_ seq: Int, at time: Date = epoch, state: FixState = .fix(.threeD, .rtkFixed)) -> PositionSample {
    guard state.hasPosition else {
        return PositionSample(sampledAt: time.addingTimeInterval(Double(seq)), state: state, detail: "seq \(seq)")
    }
    let report = PositionReport(
        time: time.addingTimeInterval(Double(seq)), gpsdMode: 3, gpsdStatus: 3,
        latitude: 48 + Double(seq) * 1e-6, longitude: 11.25, altitudeHAE: 547.25,
        altitudeMSL: 500.5, speed: 2.25, track: 181.5, hdop: 0.8, pdop: 1.4,
        satellitesUsed: 14, device: "/dev/ttyACM0")
    return PositionSample(
        sampledAt: time.addingTimeInterval(Double(seq)), state: state, report: report,
        clockSkew: 75.5, detail: "seq \(seq)")
}

func isStored(_ outcome: AppendOutcome) -> Bool {
    if case .stored = outcome { return true }
    return false
}

func seqs(_ samples: [SpooledSample]) -> [Int] {
    samples.compactMap { $0.sample.detail.flatMap { Int($0.dropFirst(4)) } }
}

func configuration(_ change: (inout SpoolConfiguration) -> Void = { _ in }) -> SpoolConfiguration {
    var configuration = SpoolConfiguration()
    configuration.wireSize = { _ in 60 }
    change(&configuration)
    return configuration
}

/// `configuration` with gps:info and EFDI both enabled.
func both(_ change: (inout SpoolConfiguration) -> Void = { _ in }) -> SpoolConfiguration {
    configuration {
        $0.outputs = [.gpsInfo, .efdi]
        change(&$0)
    }
}

@Suite struct SpoolTests {
    @Test func appendCommitsEveryFieldAndCountsIt() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        let samples = [
            sample(1), sample(2, state: .noFix), sample(3, state: .noReceiver(.silent)),
            sample(4, state: .gpsdUnreachable),
        ]
        for item in samples { #expect(isStored(await spool.append(item))) }
        let stored = try await spool.allSamples()
        #expect(stored.map(\.0.sample) == samples)
        #expect(stored.allSatisfy { $0.delivery == "pending" })
        let status = await spool.status(now: epoch.addingTimeInterval(100))
        #expect(status.pending == 4)
        #expect(status.oldestPendingAge == 99)
        #expect(status.lastAppendAt != nil)
        #expect(status.storageFault == nil)

        // A second process opening the file sees what the first committed.
        let again = Spool(path: scratch.spoolPath, configuration: configuration())
        #expect(try await again.allSamples().count == 4)
        let journalMode = try await DatabaseQueue(path: scratch.spoolPath).read { db in
            try String.fetchOne(db, sql: "PRAGMA journal_mode")
        }
        #expect(journalMode == "wal")
        // 2 is FULL: the WAL is synced at every commit, so a power cut keeps what append returned for.
        for opened in [spool, again] {
            let durability = await opened.durability()
            #expect(durability.journalMode == "wal")
            #expect(durability.synchronous == 2)
        }
        // Takes and acknowledgements are synced as appends are: one lost to a power cut would send
        // its batch twice.
        let batch = try #require(try await spool.takeBatch(id: "synced", now: epoch))
        #expect(await spool.durability().synchronous == 2)
        #expect(try await spool.acknowledge(batch: batch.id) == batch.samples.count)
        #expect(await spool.durability().synchronous == 2)
    }

    @Test(
        "the machine's running totals come back with their sample, and from beside the queue once it has left; totals kept before the engine's was count it from 0"
    )
    func machineTotalsRoundTrip() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        var item = sample(1)
        item.machine = MachineReading(work: .working, engineSpeed: 1_800)
        item.machine?.totals = MachineTotals(
            effectiveSeconds: 88.5, ineffectiveSeconds: 126, fuelMillilitres: 713.25, engineSeconds: 214.5)
        #expect(isStored(await spool.append(item)))
        #expect(try await spool.allSamples().first?.0.sample.machine?.totals == item.machine?.totals)
        #expect(await spool.machineTotals() == item.machine?.totals)
        // Kept beside the queue when the row leaves, by whatever deletes it; an older row leaving
        // after a newer one does not put its totals back over the newer ones.
        var later = sample(2)
        later.machine = item.machine
        later.machine?.totals?.effectiveSeconds = 89.5
        #expect(isStored(await spool.append(later)))
        #expect(await spool.machineTotals() == later.machine?.totals, "the newest row's")
        let queue = try DatabaseQueue(path: scratch.spoolPath)
        func kept() async throws -> String? {
            try await queue.read { db in
                try String.fetchOne(db, sql: "SELECT text FROM spool_state WHERE name = 'machine_totals'")
            }
        }
        #expect(try await kept() == nil, "nothing written beside the queue while the rows hold them")
        try await queue.write { db in try db.execute(sql: "DELETE FROM sample WHERE id = (SELECT MAX(id) FROM sample)")
        }
        #expect(try await kept() == "89.5 126 713.25 214.5")
        try await queue.write { db in try db.execute(sql: "DELETE FROM sample") }
        #expect(try await kept() == "89.5 126 713.25 214.5")
        #expect(await spool.machineTotals() == later.machine?.totals)
        for (kept, expected) in [
            (
                "88.5 126 713.25",
                MachineTotals(effectiveSeconds: 88.5, ineffectiveSeconds: 126, fuelMillilitres: 713.25)
            ),
            ("88.5 126 x 4", nil), ("1 2", nil), ("1 2 3 4 5", nil), ("1 2 3 3e10", nil),
        ] {
            try await queue.write { db in
                try db.execute(sql: "UPDATE spool_state SET text = ? WHERE name = 'machine_totals'", arguments: [kept])
            }
            #expect(await spool.machineTotals() == expected, "\(kept)")
        }
        // A row from before the engine's column: its totals count the engine from 0.
        #expect(isStored(await spool.append(item)))
        try await queue.write { db in try db.execute(sql: "UPDATE sample SET machine_engine_s = NULL") }
        #expect(try await spool.allSamples().first?.0.sample.machine?.totals?.engineSeconds == 0)
        // A kept row id that is no number counts as none, as `read` takes it: the next row to leave
        // still keeps its totals.
        try await queue.write { db in
            try db.execute(sql: "UPDATE spool_state SET number = 'x' WHERE name = 'machine_totals'")
            try db.execute(sql: "DELETE FROM sample")
        }
        #expect(try await kept() == "88.5 126 713.25 0")
    }

    @Test func batchesAreOldestFirstWithinBudgetAndInOrder() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        for seq in 1...10 { await spool.append(sample(seq)) }
        let first = try #require(try await spool.takeBatch(id: "b1", byteBudget: 250, now: epoch))
        #expect(seqs(first.samples) == [1, 2, 3, 4])  // 4 × 60 bytes fit in 250
        #expect(first.wireBytes == 240)
        let second = try #require(try await spool.takeBatch(id: "b2", maximumEntries: 3, now: epoch))
        #expect(seqs(second.samples) == [5, 6, 7])
        #expect(await spool.status().inFlight == 7)
        #expect(try await spool.acknowledge(batch: "b1") == 4)
        #expect(try await spool.acknowledge(batch: "b1") == 0)
        let status = await spool.status()
        #expect(status.pending == 3 && status.inFlight == 3)
        #expect(seqs(try await spool.allSamples().map(\.0)) == [5, 6, 7, 8, 9, 10])
        let rest = try #require(try await spool.takeBatch(id: "b3", now: epoch))
        #expect(seqs(rest.samples) == [8, 9, 10])
        #expect(try await spool.takeBatch(id: "b4", now: epoch) == nil)
    }

    @Test func aBatchFillsItsByteBudgetAndNoMore() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.wireSize = { _ in 75 } })
        await spool.append((1...12_000).map { sample($0) })
        let batch = try #require(try await spool.takeBatch(byteBudget: 767_997, now: epoch))
        #expect(batch.samples.count == 767_997 / 75)
        #expect(batch.wireBytes <= 767_997)
    }

    @Test func inFlightBatchesTimeOutBackToPending() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.inFlightTimeout = 300 })
        for seq in 1...3 { await spool.append(sample(seq)) }
        _ = try await spool.takeBatch(id: "lost", now: epoch)
        #expect(try await spool.takeBatch(id: "early", now: epoch.addingTimeInterval(299)) == nil)
        #expect(try await spool.reclaimExpiredBatches(now: epoch.addingTimeInterval(299)) == 0)
        // Taking a batch never reclaims by itself: a clock stepped ahead must not resend what is
        // still awaiting its answer (the publisher times its batches on the monotonic clock).
        #expect(try await spool.takeBatch(id: "early", now: epoch.addingTimeInterval(10_000)) == nil)
        #expect(try await spool.reclaimExpiredBatches(now: epoch.addingTimeInterval(301)) == 3)
        let resend = try #require(try await spool.takeBatch(id: "resend", now: epoch.addingTimeInterval(301)))
        #expect(seqs(resend.samples) == [1, 2, 3])
        // An acknowledgement that arrives late for the first send still settles the samples.
        _ = try await spool.reclaimExpiredBatches(now: epoch.addingTimeInterval(700))
        #expect(try await spool.acknowledge(batch: "resend") == 3)
        #expect(await spool.status().pending == 0)
    }

    @Test(
        "a batch is remembered for 1024 newer ones: then its rows still in flight go back to pending, and its answer finds nothing"
    )
    func oldBatchesAreForgottenAndTheirRowsReleased() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        await spool.append((1...1200).map { sample($0) })
        let old = try #require(try await spool.takeBatch(id: "old", maximumEntries: 1, now: epoch))
        var taken = 1
        while taken < SpoolBatches.kept + SpoolBatches.forgetEvery {
            let batch = try #require(try await spool.takeBatch(id: "b\(taken)", maximumEntries: 1, now: epoch))
            _ = try await spool.acknowledge(batch: batch.id)
            taken += 1
            // Remembered until the forgetting that passes it: its row stays in flight, found at a restart.
            if taken == SpoolBatches.kept + 1 { #expect(try await spool.inFlightBatches().map(\.id) == ["old"]) }
        }
        #expect(try await spool.inFlightBatches().isEmpty)
        #expect(await spool.status().inFlight == 0)
        #expect(try await spool.acknowledge(batch: "old") == 0)
        let resend = try #require(try await spool.takeBatch(id: "again", maximumEntries: 1, now: epoch))
        #expect(resend.samples.map(\.rowID) == old.samples.map(\.rowID))
        let remembered = try await DatabaseQueue(path: scratch.spoolPath).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM batch")
        }
        #expect(
            remembered.map { $0 <= SpoolBatches.kept + SpoolBatches.forgetEvery } == true,
            "\(String(describing: remembered))")
    }

    @Test(
        "a row in flight in a batch the spool does not know (a damaged or edited file) goes back to pending when it opens"
    )
    func rowsInFlightInUnknownBatchesAreReleasedAtOpen() async throws {
        let scratch = TemporaryDirectory("spool")
        do {
            let spool = Spool(path: scratch.spoolPath, configuration: configuration())
            for seq in 1...3 { await spool.append(sample(seq)) }
            _ = try await spool.takeBatch(id: "known", maximumEntries: 1, now: epoch)
        }
        try await DatabaseQueue(path: scratch.spoolPath).write { db in
            try db.execute(
                sql:
                    "UPDATE sample SET delivery = 'in_flight', batch_id = CASE id WHEN 2 THEN 999 ELSE NULL END WHERE id IN (2, 3)"
            )
        }
        let reopened = Spool(path: scratch.spoolPath, configuration: configuration())
        #expect(await reopened.status().byOutput == ["gps_info": ["in_flight": 1, "pending": 2]])
        #expect(try await reopened.inFlightBatches().map(\.id) == ["known"])
    }

    @Test func failedBatchesRetryWithBackoffThenPark() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(
            path: scratch.spoolPath,
            configuration: configuration {
                $0.retryDelay = 10
                $0.maximumRetryDelay = 1000
                $0.parkAfterFailures = 3
            })
        await spool.append(sample(1))
        var now = epoch
        for (attempt, delay) in [(1, 10.0), (2, 20.0)] {
            let batch = try #require(try await spool.takeBatch(id: "try\(attempt)", now: now))
            try await spool.fail(batch: batch.id, reason: "VAL_000006 missing recipient", now: now)
            #expect(try await spool.takeBatch(now: now.addingTimeInterval(delay - 1)) == nil)
            now = now.addingTimeInterval(delay)
        }
        let last = try #require(try await spool.takeBatch(id: "try3", now: now))
        try await spool.fail(batch: last.id, reason: "still failing", now: now)
        #expect(try await spool.takeBatch(now: now.addingTimeInterval(10_000)) == nil)
        let status = await spool.status()
        #expect(status.parked == 1 && status.failed == 0 && status.pending == 0)
        #expect(try await spool.retryParked() == 1)
        #expect(try await spool.takeBatch(now: now)?.samples.count == 1)
    }

    @Test("a retry set by a clock since stepped back is due now, not hours later")
    func retryAfterABackwardClockStep() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(
            path: scratch.spoolPath,
            configuration: configuration {
                $0.retryDelay = 30
                $0.maximumRetryDelay = 3600
            })
        await spool.append(sample(1))
        let fast = epoch.addingTimeInterval(7200)  // two hours fast when it failed
        _ = try await spool.takeBatch(id: "fast", now: fast)
        try await spool.fail(batch: "fast", reason: "HTTP 503", now: fast)
        #expect(try await spool.takeBatch(now: fast.addingTimeInterval(29)) == nil, "its own delay still holds")
        #expect(
            try await spool.takeBatch(id: "set-back", now: epoch)?.samples.count == 1,
            "due at once once the clock is set back")
    }

    @Test("a sample's monotonic stamp is kept while this boot lasts and forgotten after a reboot")
    func monotonicStampsBelongToOneBoot() async throws {
        let scratch = TemporaryDirectory("spool")
        var stamped = sample(1)
        stamped.sampledUptime = 1234.5
        await Spool(path: scratch.spoolPath, configuration: configuration()).append(stamped)
        #expect(
            try await Spool(path: scratch.spoolPath, configuration: configuration()).allSamples().first?.0.sample
                .sampledUptime == 1234.5)
        try await DatabaseQueue(path: scratch.spoolPath).write { db in
            try db.execute(sql: "UPDATE spool_state SET text = 'another-boot' WHERE name = 'boot_id'")
        }
        #expect(
            try await Spool(path: scratch.spoolPath, configuration: configuration()).allSamples().first?.0.sample
                .sampledUptime == nil)
    }

    @Test func acknowledgedHistoryIsKeptThenPurged() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.acknowledgedHistory = 60 })
        for seq in 1...2 { await spool.append(sample(seq)) }
        _ = try await spool.takeBatch(id: "a", maximumEntries: 1, now: epoch)
        try await spool.acknowledge(batch: "a", now: epoch)
        #expect(await spool.status().acknowledgedKept == 1)
        _ = try await spool.takeBatch(id: "b", now: epoch)
        try await spool.acknowledge(batch: "b", now: epoch.addingTimeInterval(61))
        let kept = try await spool.allSamples()
        #expect(kept.map(\.delivery) == ["acknowledged"])
        #expect(seqs(kept.map(\.0)) == [2])
    }

    @Test func rowCapEvictsOldestUnsentFirstAndCountsIt() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumRows = 5 })
        for seq in 1...3 { await spool.append(sample(seq)) }
        _ = try await spool.takeBatch(id: "flying", maximumEntries: 1, now: epoch)  // seq 1 is in flight
        for seq in 4...9 { await spool.append(sample(seq)) }
        // In-flight seq 1 stays; the oldest unsent (2, 3, 4, 5) go, in that order.
        #expect(seqs(try await spool.allSamples().map(\.0)) == [1, 6, 7, 8, 9])
        #expect(await spool.status().dropped == ["rows": 4])
        // The counter is in the database: it survives a restart.
        #expect(await Spool(path: scratch.spoolPath, configuration: configuration()).status().dropped == ["rows": 4])
    }

    @Test func byteAndAgeCapsEvictToo() async throws {
        let scratch = TemporaryDirectory("spool")
        let bytes = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumBytes = 300 })
        await bytes.append((1...7).map { sample($0) })
        #expect(seqs(try await bytes.allSamples().map(\.0)) == [3, 4, 5, 6, 7])
        #expect(await bytes.status().dropped == ["bytes": 2])

        let other = TemporaryDirectory("spool")
        let aged = Spool(path: other.spoolPath, configuration: configuration { $0.maximumAge = 3600 })
        let now = Date()
        await aged.append(sample(1, at: now.addingTimeInterval(-7200)))
        await aged.append(sample(2, at: now))
        // The age sweep runs at most once a minute: on the first append here.
        let fresh = Spool(path: other.spoolPath, configuration: configuration { $0.maximumAge = 3600 })
        await fresh.append(sample(3, at: now))
        #expect(seqs(try await fresh.allSamples().map(\.0)) == [2, 3])
        #expect(await fresh.status().dropped == ["age": 1])
    }

    @Test func samplesTakenWhileTheClockSaid1970KeepTheirGNSSTimeAndAreNotAged() async throws {
        let scratch = TemporaryDirectory("spool")
        let now = Date()
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumAge = 3600 })
        // A box without a real-time clock: system time 1970, receiver time now.
        for seq in 1...3 {
            let report = PositionReport(
                time: now.addingTimeInterval(Double(seq)), gpsdMode: 3, gpsdStatus: 1, latitude: 52, longitude: 8)
            await spool.append(
                PositionSample(
                    sampledAt: Date(timeIntervalSince1970: Double(seq)), state: .fix(.threeD, .autonomous),
                    report: report))
        }
        // A no-fix sample from the same stretch has nothing but its 1970 system time: no true time at
        // all, so it is not aged either (it goes out with its time left out).
        await spool.append(PositionSample(sampledAt: Date(timeIntervalSince1970: 4), state: .noFix))
        // The clock is set right; the next start's first append sweeps by age.
        let later = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumAge = 3600 })
        await later.append(sample(5, at: now))
        #expect(await later.status().dropped.isEmpty, "nothing dropped by age")
        #expect(try await later.allSamples().count == 5)
        // A sample old by a true clock still goes.
        await later.append(PositionSample(sampledAt: now.addingTimeInterval(-7200), state: .noFix))
        let sweeping = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumAge = 3600 })
        await sweeping.append(sample(6, at: now))
        #expect(await sweeping.status().dropped == ["age": 1])
    }

    @Test func corruptFileIsQuarantinedAndANewSpoolStarts() async throws {
        for damage in ["header", "pages"] {
            let scratch = TemporaryDirectory("spool")
            let marking = configuration { $0.keepsCommitMark = true }
            do {
                let spool = Spool(path: scratch.spoolPath, configuration: marking)
                await spool.append((1...2000).map { sample($0) })
            }
            // Fold the WAL into the file, then write garbage over it.
            _ = try await DatabaseQueue(path: scratch.spoolPath).writeWithoutTransaction {
                try $0.checkpoint(.truncate)
            }
            let handle = try #require(FileHandle(forWritingAtPath: scratch.spoolPath))
            try handle.seek(toOffset: damage == "header" ? 0 : 8192)
            handle.write(Data((0..<16384).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ 7) }))
            try handle.close()

            let spool = Spool(path: scratch.spoolPath, configuration: marking)
            let status = await spool.status()
            let aside = try #require(status.quarantinedFile, "\(damage): not quarantined")
            #expect(aside.hasPrefix(scratch.spoolPath + ".corrupt-"))
            #expect(
                aside.dropFirst(scratch.spoolPath.count).wholeMatch(of: /\.corrupt-20\d{6}T\d{6}Z/) != nil,
                "ISO 8601's basic form: \(aside)")
            #expect(FileManager.default.fileExists(atPath: aside))
            #expect(status.pending == 0 && status.storageFault == nil)
            // What the file held is counted as lost, and the new spool's ids go on after its own.
            let lost = await spool.takeLostRows()
            #expect(lost?.count == 2000)
            #expect(
                lost?.reason.contains("moved aside to \(aside), where they may still be read") == true,
                "\(lost?.reason ?? "")")
            #expect(await spool.append(sample(1)) == .stored(rowID: 2001))
        }
    }

    @Test func diskFullHoldsSamplesInMemoryThenFlushesThemInOrder() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumPageCount = 24 })
        var seq = 0
        var held: [Int] = []
        while held.count < 5 && seq < 100_000 {
            seq += 1
            if case .heldInMemory(let error) = await spool.append(sample(seq)) {
                #expect(error.kind == .diskFull)
                held.append(seq)
            }
        }
        #expect(held.count == 5)
        let full = await spool.status()
        #expect(full.storageFault?.kind == .diskFull && full.heldInMemory == 5)
        // Space comes back (here another connection clears old rows, as an operator would clear the
        // disk); the next append writes the held samples first, in order.
        try await DatabaseQueue(path: scratch.spoolPath).write {
            try $0.execute(sql: "DELETE FROM sample WHERE id <= 200")
        }
        #expect(isStored(await spool.append(sample(seq + 1))))
        let stored = seqs(try await spool.allSamples().map(\.0))
        #expect(Array(stored.suffix(6)) == held + [seq + 1])
        #expect(stored == stored.sorted())
        let recovered = await spool.status()
        #expect(recovered.storageFault == nil && recovered.heldInMemory == 0)
        #expect(recovered.lastStorageFault?.contains("database or disk is full") == true)
        #expect(recovered.lastStorageFaultAt != nil)
    }

    @Test("acknowledged rows leave together once 256 have gathered, and when the spool opens again")
    func acknowledgedRowsAreClearedTogether() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        func cycle(_ seqs: Range<Int>, id: String) async throws -> Int {
            _ = await spool.append(seqs.map { sample($0) })
            #expect(try await spool.takeBatch(id: id)?.samples.count == seqs.count)
            return try await spool.acknowledge(batch: id)
        }
        #expect(try await cycle(0..<250, id: "a") == 250)
        #expect(await spool.status().acknowledgedKept == 250)
        #expect(try await spool.allSamples().isEmpty, "without history, acknowledged rows have left")
        #expect(try await cycle(250..<260, id: "b") == 10)
        #expect(await spool.status().acknowledgedKept == 0)
        #expect(try await cycle(260..<265, id: "c") == 5)
        #expect(await spool.status().acknowledgedKept == 5)
        // The daemon opens it with its outputs, which clears them; a command that only looks does not.
        #expect(await Spool(path: scratch.spoolPath).status().acknowledgedKept == 5)
        let reopened = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo] })
        #expect(await reopened.status().acknowledgedKept == 0)
        #expect(await reopened.append(sample(265)) == .stored(rowID: 266))
    }

    @Test("on a full disk an acknowledgement deletes its rows at once, so held samples find room")
    func acknowledgementOnAFullDiskDeletes() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumPageCount = 64 })
        _ = await spool.append((0..<40).map { sample($0) })
        #expect(try await spool.takeBatch(id: "early")?.samples.count == 40)
        var (seq, held) = (40, 0)
        while held < 3 && seq < 100_000 {
            seq += 1
            if case .heldInMemory = await spool.append(sample(seq)) { held += 1 }
        }
        #expect(held == 3)
        #expect(try await spool.acknowledge(batch: "early") == 40)
        let left = try await DatabaseQueue(path: scratch.spoolPath).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM sample WHERE id <= 40")
        }
        #expect(left == 0, "the batch's rows were deleted, not left to be cleared later")
        #expect(isStored(await spool.append(sample(seq + 1))))
        #expect(Array(seqs(try await spool.allSamples().map(\.0)).suffix(4)) == [seq - 2, seq - 1, seq, seq + 1])
    }

    @Test func atShutdownHeldSamplesAreWrittenIfTheDiskAllowsAndCountedAsLostIfNot() async throws {
        for recovers in [true, false] {
            let scratch = TemporaryDirectory("spool")
            let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.maximumPageCount = 24 })
            var seq = 0
            var held = 0
            while held < 3 && seq < 100_000 {
                seq += 1
                if case .heldInMemory = await spool.append(sample(seq)) { held += 1 }
            }
            if recovers {
                try await DatabaseQueue(path: scratch.spoolPath).write {
                    try $0.execute(sql: "DELETE FROM sample WHERE id <= 200")
                }
            }
            let shutdown = await spool.flushHeld()
            if recovers {
                #expect(shutdown == Spool.Shutdown(written: 3, lost: 0, fault: nil))
                #expect(Array(seqs(try await spool.allSamples().map(\.0)).suffix(3)) == [seq - 2, seq - 1, seq])
            } else {
                #expect(shutdown.written == 0 && shutdown.lost == 3 && shutdown.fault?.kind == .diskFull)
            }
        }
        #expect(
            await Spool(path: TemporaryDirectory("spool").spoolPath, configuration: configuration()).flushHeld()
                == Spool.Shutdown())
    }

    @Test func upgradeFromTheFirstSchemaKeepsTheQueue() async throws {
        let scratch = TemporaryDirectory("spool")
        do {
            let old = try DatabaseQueue(path: scratch.spoolPath)
            try SpoolSchema.migrator.migrate(old, upTo: SpoolSchema.queueVersion)
            try await old.write { db in
                for seq in 1...3 {
                    try db.execute(
                        sql: """
                            INSERT INTO sample (sampled_at, state, gpsd_mode, gpsd_status, latitude, longitude, detail, wire_size, delivery, batch_id, sent_at)
                            VALUES (?, 'fix_3d_dgps', 3, 2, 48.5, 11.5, ?, 60, ?, ?, ?)
                            """,
                        arguments: [
                            epoch.timeIntervalSince1970 + Double(seq), "seq \(seq)", seq == 3 ? "in_flight" : "pending",
                            seq == 3 ? "old-batch" : nil, seq == 3 ? epoch.timeIntervalSince1970 + 10 : nil,
                        ])
                }
            }
        }
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        let rows = try await spool.allSamples()
        #expect(seqs(rows.map(\.0)) == [1, 2, 3])
        #expect(rows.first?.0.sample.state == .fix(.threeD, .dgps))
        let applied = try await DatabaseQueue(path: scratch.spoolPath).read {
            try SpoolSchema.migrator.appliedIdentifiers($0)
        }
        #expect(
            Set(applied) == [
                SpoolSchema.queueVersion, SpoolSchema.retriesVersion, SpoolSchema.uptimeVersion,
                SpoolSchema.efdiVersion,
                SpoolSchema.lighterAppendVersion, SpoolSchema.ownRowIDsVersion, SpoolSchema.batchTableVersion,
                SpoolSchema.acknowledgedBatchesVersion, SpoolSchema.machineVersion, SpoolSchema.machineTotalsVersion,
                SpoolSchema.engineTotalVersion, SpoolSchema.totalsOnDeleteVersion,
            ])
        #expect(await spool.status().pending == 2)
        #expect(await spool.status().byOutput == ["gps_info": ["pending": 2, "in_flight": 1]])
        // The batch in flight when the old version stopped keeps its id and send time, and its answer still counts.
        let inFlight = try await spool.inFlightBatches()
        #expect(inFlight.map(\.id) == ["old-batch"] && inFlight.map(\.sentAt) == [epoch.addingTimeInterval(10)])
        #expect(try await spool.acknowledge(batch: "old-batch") == 1)
        #expect(seqs(try await spool.allSamples().map(\.0)) == [1, 2])
    }
}

@Suite struct SpoolSharingTests {
    @Test func samplesTakenWhilePausedAreWithheldForGood() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        await spool.append(sample(1))
        // Another process (agrigps pause) reaches this spool through the database.
        try await Spool(path: scratch.spoolPath, configuration: configuration()).setSharing(paused: true)
        #expect(await spool.isSharingPaused())
        await spool.append(sample(2))
        try await spool.setSharing(paused: false)
        await spool.append(sample(3))
        let batch = try #require(try await spool.takeBatch(now: epoch))
        #expect(seqs(batch.samples) == [1, 3])
        #expect(try await spool.takeBatch(now: epoch) == nil)
        let status = await spool.status()
        #expect(status.withheld == 1 && !status.sharingPaused)
    }
}
