import Foundation
import TestSupport
import Testing

@testable import CabView

@Suite("State directory watch")
struct DirectoryWatchTests {
    /// `next()`, or nil if it has not returned within `seconds`.
    static func next(_ watch: DirectoryWatch, within seconds: Double) async -> DirectoryWatch.Wake? {
        await withTaskGroup(of: DirectoryWatch.Wake?.self) { group in
            group.addTask { await watch.next() }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    @Test("a write to a watched file, or its -wal, wakes the monitor at once; other files in the directory do not")
    func wakesOnWatchedFiles() async throws {
        let scratch = TemporaryDirectory("watch")
        let directory = scratch.path
        let watch = try #require(
            DirectoryWatch(
                .init(
                    paths: [directory + "/spool.sqlite", directory + "/heartbeat.json"], refresh: 3600, fallback: 0.25))
        )
        defer { watch.close() }
        // A first wake may be pending from the start; take it if so.
        _ = await Self.next(watch, within: 0.3)

        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/track.sqlite"))
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/track.sqlite-wal"))
        #expect(await Self.next(watch, within: 1) == nil, "the track store is not what the page shows")

        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/spool.sqlite-wal"))
        #expect(await Self.next(watch, within: 5) == .changed)
        // An atomic write: a temporary file renamed into place.
        try Data("{}".utf8).write(to: URL(fileURLWithPath: directory + "/heartbeat.json"), options: .atomic)
        #expect(await Self.next(watch, within: 5) == .changed)
        // A write split by a busy machine's scheduler may wake it twice; what matters is that the
        // wakes stop with the writes (the monitor's own reads must never wake it).
        var more = 0
        while await Self.next(watch, within: 0.5) != nil, more < 10 { more += 1 }
        #expect(more <= 2, "\(more) more wakes after the last write")
    }

    @Test("without a change it wakes to refresh after its interval")
    func refreshes() async throws {
        let scratch = TemporaryDirectory("watch")
        let directory = scratch.path
        let watch = try #require(
            DirectoryWatch(.init(paths: [directory + "/spool.sqlite"], refresh: 0.4, fallback: 0.25)))
        defer { watch.close() }
        #expect(await Self.next(watch, within: 5) == .refresh)
        #expect(await Self.next(watch, within: 5) == .refresh)
    }

    @Test("a directory removed and made again is watched again; close ends the thread and may be called twice")
    func directoryReplaced() async throws {
        let scratch = TemporaryDirectory("watch")
        let directory = scratch.path
        var settings = DirectoryWatch.Settings(paths: [directory + "/spool.sqlite"], refresh: 3600, fallback: 0.2)
        settings.threadName = "watch-test-end"  // other tests' watches run beside this one
        let watch = try #require(DirectoryWatch(settings))
        let named = ContinuousClock.now + .seconds(5)  // the thread names itself as it starts
        while ThreadCensus.count(named: "watch-test-end") == 0, ContinuousClock.now < named {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(ThreadCensus.count(named: "watch-test-end") == 1)
        _ = await Self.next(watch, within: 0.3)
        try FileManager.default.removeItem(atPath: directory)
        #expect(await Self.next(watch, within: 5) == .changed)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        // Polling until the watch is back: each wake is a change the monitor compares stamps for.
        #expect(await Self.next(watch, within: 5) == .changed)
        try await Task.sleep(for: .seconds(0.5))
        while await Self.next(watch, within: 0.3) != nil {}
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory + "/spool.sqlite"))
        #expect(await Self.next(watch, within: 5) == .changed)
        try? FileManager.default.removeItem(atPath: directory)

        watch.close()
        watch.close()
        #expect(await Self.next(watch, within: 1) == .changed, "a closed watch lets its waiter go at once")
        #expect(await ThreadCensus.waitUntilGone(["watch-test-end"], seconds: 10))
    }
}
