import Foundation
import GNSS
import GRDB
import Spool
import TestSupport
import Testing

@testable import Gateway

#if canImport(Glibc)
import Glibc
#endif

/// A datagram socket standing in for systemd's notify socket; it records what arrives and when.
final class NotifySocketListener: @unchecked Sendable {
    let path: String
    private let fd: Int32
    private let lock = NSLock()
    private var received: [(message: String, at: Date)] = []
    private var thread: Thread?
    /// The socket is closed by the receiving thread as it ends, never under it: a recv after the
    /// close would read from whatever socket took the number since.
    private let finished = DispatchSemaphore(value: 0)

    init() throws {
        path =
            FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString.prefix(8))").path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard fd >= 0, bound == 0 else {
            if fd >= 0 { Glibc.close(fd) }
            throw POSIXError(.EADDRINUSE)
        }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in self.receive() }
        self.thread = thread
        thread.start()
    }

    private var stopped: Bool {
        lock.lock()
        defer { lock.unlock() }
        return thread == nil
    }

    private func receive() {
        defer {
            Glibc.close(fd)
            finished.signal()
        }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !stopped {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { continue }
            let message = String(decoding: buffer[0..<count], as: UTF8.self)
            lock.lock()
            received.append((message, Date()))
            lock.unlock()
        }
    }

    var messages: [(message: String, at: Date)] {
        lock.lock()
        defer { lock.unlock() }
        return received
    }

    func close() {
        lock.lock()
        let running = thread != nil
        thread = nil
        lock.unlock()
        // The thread looks at `stopped` at least every 100 ms (its receive timeout).
        if running { _ = finished.wait(timeout: .now() + 5) }
        unlink(path)
    }
}

@Suite("systemd notify", .serialized, .timeLimit(.minutes(1)))
struct SystemdNotifierTests {
    @Test("the environment names the socket and the watchdog, for this process only")
    func environment() {
        #expect(SystemdNotifier.fromEnvironment([:]) == nil)
        #expect(SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": "/run/systemd/notify"])?.watchdogInterval == nil)
        let watched = SystemdNotifier.fromEnvironment([
            "NOTIFY_SOCKET": "@abstract", "WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "\(getpid())",
        ])
        #expect(watched?.watchdogInterval == 30 && watched?.socketPath == "@abstract")
        #expect(
            SystemdNotifier.fromEnvironment(["NOTIFY_SOCKET": "/x", "WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "1"])?
                .watchdogInterval == nil)
    }

    @Test("READY once gpsd was tried, then WATCHDOG with STATUS from the sampling loop; a stalled loop stops the pings")
    func readyWatchdogAndStall() async throws {
        let listener = try NotifySocketListener()
        let scratch = TemporaryDirectory("notify")
        let directory = scratch.path
        defer { listener.close() }
        var spoolConfiguration = SpoolConfiguration()
        spoolConfiguration.busyTimeout = 10
        let spool = Spool(path: directory + "/spool.sqlite", configuration: spoolConfiguration)
        var configuration = GatewayDaemon.Configuration()
        configuration.samplingInterval = 0.1
        configuration.notifier = SystemdNotifier(socketPath: listener.path, watchdogInterval: 5)
        let daemon = GatewayDaemon(spool: spool, connection: nil, setup: nil, configuration: configuration)
        let (events, source) = AsyncStream<SourceEvent>.makeStream()
        let running = Task { await daemon.run(events: events) }
        #expect(listener.messages.isEmpty, "not ready before gpsd was tried")
        source.yield(
            .unreachable(
                GPSDError(
                    kind: .cannotConnect, address: try GPSDAddress(parsing: "127.0.0.1:1"), code: -2,
                    message: "connection refused")))

        #expect(
            await eventually(within: 15) { listener.messages.filter { $0.message.hasPrefix("WATCHDOG=1") }.count >= 5 })
        let first = try #require(listener.messages.first)
        #expect(first.message.hasPrefix("READY=1\nSTATUS=started; gpsd unreachable"))
        #expect(listener.messages.contains { $0.message.contains("STATUS=gpsd_unreachable; ") })

        // Another writer holds the spool for 2 s: appends wait, and so must the watchdog.
        let held = DatabaseHolder(path: directory + "/spool.sqlite", seconds: 2)
        let (lockedAt, releasedAt) = try await held.run()
        #expect(
            await eventually(within: 15) {
                listener.messages.contains { $0.at > releasedAt && $0.message.hasPrefix("WATCHDOG=1") }
            })
        let during = listener.messages.filter {
            $0.at > lockedAt.addingTimeInterval(0.5) && $0.at < releasedAt && $0.message.hasPrefix("WATCHDOG=1")
        }
        #expect(during.isEmpty, "\(during.count) pings while the loop was stalled")

        running.cancel()
        source.finish()
        _ = await running.value
        #expect(await eventually(within: 15) { listener.messages.last?.message == "STOPPING=1" })
    }

}

/// Holds an exclusive write lock on a database from a thread of its own, as a stuck writer would.
struct DatabaseHolder: Sendable {
    let path: String
    let seconds: Double

    func run() async throws -> (lockedAt: Date, releasedAt: Date) {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                do {
                    let queue = try DatabaseQueue(path: path)
                    var lockedAt = Date()
                    try queue.writeWithoutTransaction { db in
                        try db.execute(sql: "BEGIN EXCLUSIVE")
                        lockedAt = Date()
                        Thread.sleep(forTimeInterval: seconds)
                        try db.execute(sql: "COMMIT")
                    }
                    continuation.resume(returning: (lockedAt, Date()))
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
