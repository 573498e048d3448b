import Foundation
import GNSS
import GRDB
import TestSupport
import Testing

@testable import Spool

/// A clock a test can set: the spool reads it at every pause and resume.
private final class SettableClock: @unchecked Sendable {
    private let lock = NSLock()
    private var current: Date
    init(_ start: Date) { current = start }
    var now: Date {
        get { lock.withLock { current } }
        set { lock.withLock { current = newValue } }
    }
}

/// What the cab view's pause receipt reads: when the pause began and how many samples it kept back.
@Suite struct PauseReceiptTests {
    @Test("a pause counts the samples kept since it began, by row id, once per sample whatever its clocks say")
    func keptWhilePausedCountsSincePause() async throws {
        let scratch = TemporaryDirectory("spool")
        let pausedAt = epoch.addingTimeInterval(100)
        let clock = SettableClock(pausedAt)
        let spool = Spool(path: scratch.spoolPath, configuration: both { $0.clock = { clock.now } })
        await spool.append([sample(1), sample(2)])
        var status = await spool.status()
        #expect(status.pausedSince == nil && status.keptWhilePaused == 0, "not paused: no receipt")

        try await spool.setSharing(paused: true)
        status = await spool.status()
        #expect(status.pausedSince == pausedAt && status.keptWhilePaused == 0)
        // One sample stamped half an hour before the pause (a receiver or system clock behind): still kept in it.
        await spool.append([sample(3, at: epoch.addingTimeInterval(-1800)), sample(4), sample(5)])
        status = await spool.status()
        #expect(status.keptWhilePaused == 3 && status.withheld == 3, "each row once, though both outputs withhold it")

        // Pausing again while paused keeps the pause the user began.
        clock.now = pausedAt.addingTimeInterval(500)
        try await spool.setSharing(paused: true)
        let read = try await SpoolReader(path: scratch.spoolPath).status()
        #expect(read.pausedSince == pausedAt && read.keptWhilePaused == 3, "another process reads the same receipt")

        try await spool.setSharing(paused: false)
        status = await spool.status()
        #expect(status.pausedSince == nil && status.keptWhilePaused == 0 && status.withheld == 3)

        // A clock set back before the first pause: the new pause counts only its own sample.
        clock.now = pausedAt.addingTimeInterval(-3000)
        try await spool.setSharing(paused: true)
        await spool.append(sample(6))
        status = await spool.status()
        #expect(status.pausedSince == pausedAt.addingTimeInterval(-3000))
        #expect(status.keptWhilePaused == 1 && status.withheld == 4)
    }

    @Test("a pause with no readable mark (an older agrigps, a damaged row) counts every withheld sample, never traps")
    func pauseWithoutMarkCountsAllWithheld() async throws {
        let scratch = TemporaryDirectory("spool")
        let spool = Spool(path: scratch.spoolPath, configuration: configuration())
        try await spool.setSharing(paused: true)
        await spool.append([sample(1), sample(2)])
        let database = try DatabaseQueue(path: scratch.spoolPath)
        try await database.write {
            try $0.execute(sql: "UPDATE spool_state SET number = 'garbage' WHERE name = 'paused_after_id'")
        }
        #expect(await spool.status().keptWhilePaused == 2)
        try await database.write {
            try $0.execute(sql: "UPDATE spool_state SET number = 1e300 WHERE name IN ('paused_after_id', 'sharing')")
        }
        let status = await spool.status()
        #expect(status.keptWhilePaused == 2 && status.pausedSince == nil && status.sharingPaused)
    }
}
