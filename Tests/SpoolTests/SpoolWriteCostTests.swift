import Foundation
import GRDB
import TestSupport
import Testing

@testable import Spool

/// What one append costs the flash card: every page a commit touches goes to the WAL again, as a
/// frame of the page's size plus a 24-byte header.
@Suite struct SpoolWriteCostTests {
    static func walFrames(_ path: String, pageSize: Int) -> Int {
        let size = (try? FileManager.default.attributesOfItem(atPath: path + "-wal")[.size] as? Int) ?? 0
        return size <= 32 ? 0 : (size - 32) / (pageSize + 24)
    }

    static func pageSize(_ path: String) throws -> Int? {
        try DatabaseQueue(path: path).read { db in try Int.fetchOne(db, sql: "PRAGMA page_size") }
    }

    static func checkpoint(_ path: String) throws {
        try DatabaseQueue(path: path).writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    static func journalMode(_ path: String) throws -> String? {
        try DatabaseQueue(path: path).read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
    }

    /// The journal modes it went through: out of WAL for the rebuild, and back.
    static func rebuild(_ path: String, pageSize: Int) throws -> [String?] {
        try DatabaseQueue(path: path).writeWithoutTransaction { db in
            let out = try String.fetchOne(db, sql: "PRAGMA journal_mode = DELETE")
            try db.execute(sql: "PRAGMA page_size = \(pageSize)")
            try db.execute(sql: "VACUUM")
            return [out, try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")]
        }
    }

    @Test(
        "a new spool has 512-byte pages, and an append with both outputs commits about 1 KiB of log: the row's page, and when it fills, the next and their parent"
    )
    func appendTouchesOneSmallPage() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo, .efdi] })
        for seq in 0..<50 { #expect(isStored(await spool.append(sample(seq)))) }
        #expect(try Self.pageSize(scratch.spoolPath) == SpoolFile.pageSize)
        // A batch sent and acknowledged, so that rows with batch ids exist, then the WAL emptied.
        let batch = try await spool.takeBatch(for: .gpsInfo, id: "first", maximumEntries: 10)
        #expect(batch?.samples.count == 10)
        // Acknowledged for gps:info only: the rows stay, waiting for EFDI.
        _ = try await spool.acknowledge(batch: "first")
        try Self.checkpoint(scratch.spoolPath)
        #expect(Self.walFrames(scratch.spoolPath, pageSize: SpoolFile.pageSize) == 0)

        var frames: [Int] = []
        for seq in 50..<80 {
            let before = Self.walFrames(scratch.spoolPath, pageSize: SpoolFile.pageSize)
            #expect(isStored(await spool.append(sample(seq))))
            frames.append(Self.walFrames(scratch.spoolPath, pageSize: SpoolFile.pageSize) - before)
        }
        // A row here is about 200 bytes, so every second append fills a table page and the split
        // adds the new page and its parent: 2 frames of 536 bytes on average. With 1 KiB pages it
        // was 1.4 frames of 1,048 bytes (1,467 bytes).
        print("frames per append: \(frames)")
        let bytes = Double(frames.reduce(0, +) * (SpoolFile.pageSize + 24)) / Double(frames.count)
        #expect(frames.min() == 1, "\(frames)")
        #expect(bytes <= 1_100, "\(frames)")
        #expect(frames.max() ?? 0 <= 5, "\(frames)")
    }

    @Test("a spool made with larger pages is rebuilt with 512-byte pages when it opens, every sample and state kept")
    func largerPagesAreRebuiltAtOpen() async throws {
        let scratch = TemporaryDirectory("spool")
        do {
            let spool = Spool(path: scratch.spoolPath, configuration: configuration())
            for seq in 0..<20 { #expect(isStored(await spool.append(sample(seq)))) }
            try await spool.setSharing(paused: true)
        }
        // As an older agrigps made it: 4 KiB pages, later 1 KiB.
        for older in [4096, 1024] {
            #expect(try Self.rebuild(scratch.spoolPath, pageSize: older) == ["delete", "wal"])
            #expect(try Self.pageSize(scratch.spoolPath) == older)
            let reopened = Spool(path: scratch.spoolPath, configuration: configuration())
            #expect(try await reopened.allSamples().map(\.0.sample) == (0..<20).map { sample($0) })
            #expect(try Self.pageSize(scratch.spoolPath) == SpoolFile.pageSize)
        }

        let reopened = Spool(path: scratch.spoolPath, configuration: configuration())
        let kept = try await reopened.allSamples().map(\.0.sample)
        #expect(kept == (0..<20).map { sample($0) })
        let status = await reopened.status()
        #expect(status.sharingPaused && status.storageFault == nil)
        #expect(try Self.pageSize(scratch.spoolPath) == SpoolFile.pageSize)
        #expect(try Self.journalMode(scratch.spoolPath) == "wal")
    }

    @Test("both outputs' acknowledgements in one commit: the samples leave the spool with one WAL sync")
    func acknowledgementsOfOneCycleShareACommit() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo, .efdi] })
        for seq in 0..<5 { #expect(isStored(await spool.append(sample(seq)))) }
        let gps = try await spool.takeBatch(for: .gpsInfo, id: "gps")
        let efdi = try await spool.takeBatch(for: .efdi, id: "efdi")
        #expect(gps?.samples.count == 5 && efdi?.samples.count == 5)
        try Self.checkpoint(scratch.spoolPath)
        let finished = try await spool.acknowledge(batches: ["gps", "efdi", "unknown"])
        #expect(finished == 5)
        let status = await spool.status()
        #expect(status.pending + status.inFlight == 0)
        #expect(try Self.commits(scratch.spoolPath) == 1)
    }

    @Test("both outputs' batches of a cycle are taken in one commit, sharing the budget as the publisher did")
    func batchesOfOneCycleShareACommit() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo, .efdi] })
        for seq in 0..<40 { #expect(isStored(await spool.append(sample(seq)))) }
        let size = try #require(try await spool.allSamples().first?.0.wireSize)
        try Self.checkpoint(scratch.spoolPath)
        // gps:info may take half of 20 rows' bytes; EFDI, at 3 times that per entry, a third of the rest.
        let batches = try await spool.takeBatches(
            [.init(output: .gpsInfo, id: "gps"), .init(output: .efdi, entryCost: 3 * size, id: "efdi")],
            byteBudget: 20 * size)
        #expect(batches.map(\.id) == ["gps", "efdi"])
        #expect(batches.map(\.samples.count) == [10, 3])
        #expect(try Self.commits(scratch.spoolPath) == 1)
        let status = await spool.status()
        #expect(
            status.byOutput["gps_info"]?["in_flight"] == 10 && status.byOutput["efdi"]?["in_flight"] == 3,
            "\(status.byOutput)")
        // Nothing waiting for an output, or an output not enabled: no batch, and nothing written.
        let quiet = Spool(
            path: scratch.path + "/quiet.sqlite", configuration: configuration { $0.outputs = [.gpsInfo] })
        #expect(
            try await quiet.takeBatches(
                [.init(output: .gpsInfo), .init(output: .efdi, entryCost: 100)], byteBudget: 1000
            ).isEmpty)
    }

    @Test("a send cycle in the steady state writes few pages: the take and the acknowledgement of both outputs")
    func sendCycleTouchesFewPages() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration { $0.outputs = [.gpsInfo, .efdi] })
        var (takes, acknowledgements): ([Int], [Int]) = ([], [])
        // 27 cycles: the log's first checkpoint, at 1000 frames, would start it again from the top.
        for cycle in 0..<27 {
            for seq in (cycle * 10)..<(cycle * 10 + 10) { #expect(isStored(await spool.append(sample(seq)))) }
            let ids = ["gps \(cycle)", "efdi \(cycle)"]
            var before = Self.walFrames(scratch.spoolPath, pageSize: SpoolFile.pageSize)
            let batches = try await spool.takeBatches(
                [.init(output: .gpsInfo, id: ids[0]), .init(output: .efdi, id: ids[1])], byteBudget: 100_000)
            #expect(batches.map(\.samples.count) == [10, 10])
            takes.append(Self.walFrames(scratch.spoolPath, pageSize: SpoolFile.pageSize) - before)
            before = Self.walFrames(scratch.spoolPath, pageSize: SpoolFile.pageSize)
            #expect(try await spool.acknowledge(batches: ids) == 10)
            acknowledgements.append(Self.walFrames(scratch.spoolPath, pageSize: SpoolFile.pageSize) - before)
        }
        // The first cycles make the tables' first pages; the steady state is what a day costs.
        let (steadyTakes, steadyAcknowledgements) = (takes.dropFirst(4), Array(acknowledgements.dropFirst(4)))
        print("frames per take: \(takes); per acknowledgement: \(acknowledgements)")
        // In frames of 512 bytes (536 with their headers): a take writes 6, an acknowledgement 1, for
        // 10 samples. A take writes its batch's row and the 10 rows' table pages, and the batch
        // table's parent page when its row starts a new page. An acknowledgement writes only its
        // batches' rows; when it wrote the state into the samples too it was 5, and with 1 KiB pages,
        // deleting the rows at once, 6. The one that clears the first 256 rows acknowledged, in
        // cycle 26, writes about one page per 20 rows.
        #expect(steadyTakes.max() ?? 99 <= 9 && steadyTakes.filter { $0 > 6 }.count <= 4, "\(takes)")
        #expect(steadyAcknowledgements.sorted().dropLast().max() ?? 99 <= 2, "\(acknowledgements)")
        #expect(acknowledgements[25] > 2 && acknowledgements[25] <= 25, "\(acknowledgements)")
        #expect(await spool.status().pending == 0)
        #expect(await spool.status().acknowledgedKept == 270 - 260)
    }

    /// Commits in the WAL since it was last emptied: frames that end a transaction carry the
    /// database's size in pages (bytes 4–7 of their header), other frames zero.
    static func commits(_ path: String) throws -> Int {
        let wal = try Data(contentsOf: URL(fileURLWithPath: path + "-wal"))
        var commits = 0
        var offset = 32
        while offset + 24 + SpoolFile.pageSize <= wal.count {
            let size = wal[(offset + 4)..<(offset + 8)].reduce(0) { $0 << 8 | Int($1) }
            if size != 0 { commits += 1 }
            offset += 24 + SpoolFile.pageSize
        }
        return commits
    }
}
