import BlockingWork
import Clocks
import FoundationEssentials
import Glibc
import Synchronization

/// Wakes the cab view's monitor when one of the state directory's files it reads is written,
/// replaced or removed (inotify), and after `refresh` seconds without that, so that ages move on.
///
/// A look at the files every quarter second cost the page process a timer and a thread wake-up each
/// time, and more CPU than the daemon it shows. Where inotify cannot watch (no instance left, a
/// directory missing), it wakes every `fallback` seconds instead, and tries to watch again each time.
final class DirectoryWatch: Sendable {
    struct Settings: Sendable {
        /// The files, by path; their directories are watched.
        var paths: [String]
        var refresh: Double
        var fallback: Double
        /// A commit is several writes: after the first, this long for the rest, then one wake-up for all.
        var settle: Double = 0.03
        /// As `top -H` shows it.
        var threadName = "agrigps-watch"
    }

    /// Why `next()` returned.
    enum Wake: Sendable, Equatable {
        /// A watched file changed (or may have: the kernel's queue overflowed, a directory went).
        case changed
        /// `refresh` seconds passed without a change.
        case refresh
    }

    private let wakeups = Wakeups()
    /// One end of a socket pair, closed once by `close()`: the thread sees the other end hang up,
    /// ends, and closes that end itself.
    private let stop: Int32

    /// Starts the watching thread; nil when the process can start no thread or open no socket pair.
    init?(_ settings: Settings) {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            return nil
        }
        stop = ends[1]
        let (wakeups, hangUp) = (wakeups, ends[0])
        guard startThread(named: settings.threadName, { Self.watch(settings, wakeups: wakeups, stop: hangUp) }) else {
            Glibc.close(ends[0])
            Glibc.close(ends[1])
            return nil
        }
    }

    deinit { close() }

    /// The next change or refresh since the last return; at once if one came in between, or when
    /// the task is cancelled or the watch closed.
    ///
    /// On the caller's executor: a plain nonisolated function would go to Swift's pool to wait and
    /// come back from it at every wake-up, two thread switches a sample for the monitor.
    func next(isolation: isolated (any Actor)? = #isolation) async -> Wake {
        await withTaskCancellationHandler(
            operation: {
                await withCheckedContinuation(isolation: isolation) { continuation in wakeups.wait(continuation) }
            },
            onCancel: {
                wakeups.fire(.changed)
            }, isolation: isolation)
    }

    /// Ends the thread; later `next()` calls return at once. Safe to call more than once: only the
    /// first closes `stop`, whose number may belong to another file by the second.
    func close() {
        guard wakeups.close() else { return }
        Glibc.close(stop)
    }

    /// What the thread hands to the waiting task, behind a lock.
    private final class Wakeups: Sendable {
        private struct State {
            var pending: Wake?
            var waiter: CheckedContinuation<Wake, Never>?
            var closed = false
        }
        private let state = Mutex(State())

        func wait(_ continuation: CheckedContinuation<Wake, Never>) {
            let ready = state.withLock { state -> Wake? in
                if state.closed { return .changed }
                guard let pending = state.pending else {
                    state.waiter = continuation
                    return nil
                }
                state.pending = nil
                return pending
            }
            if let ready { continuation.resume(returning: ready) }
        }

        /// Resumes the waiter, or keeps the wake for the next wait (a refresh outranks a change: it rebuilds whatever).
        func fire(_ wake: Wake) {
            let waiter = state.withLock { state -> CheckedContinuation<Wake, Never>? in
                if let waiter = state.waiter {
                    state.waiter = nil
                    return waiter
                }
                state.pending = state.pending == .refresh ? .refresh : wake
                return nil
            }
            waiter?.resume(returning: wake)
        }

        /// Lets the waiter go for good; true for the call that closed it.
        func close() -> Bool {
            let first = state.withLock { state -> Bool in
                defer { state.closed = true }
                return !state.closed
            }
            fire(.changed)
            return first
        }
    }

    // MARK: - The thread

    private static func watch(_ settings: Settings, wakeups: Wakeups, stop: Int32) {
        let inotify = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
        defer {
            if inotify >= 0 { Glibc.close(inotify) }
            Glibc.close(stop)
        }
        let files = settings.paths.map { URL(fileURLWithPath: $0) }
        let directories = Set(files.map { $0.deletingLastPathComponent().path })
        // As bytes, to compare with each event's name where it lies: a commit is a dozen events.
        let names = Set(files.flatMap { [$0.lastPathComponent, $0.lastPathComponent + "-wal"] }).map { Array($0.utf8) }
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var watching = addWatches(inotify, directories)
        var last = uptime()
        while true {
            let wait = (watching ? settings.refresh : settings.fallback) - (uptime() - last)
            var fds = [
                pollfd(fd: stop, events: Int16(POLLIN), revents: 0),
                pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
            ]
            let ready = poll(&fds, inotify >= 0 ? 2 : 1, Int32(max(0, min(wait, 3600)) * 1000))
            if ready < 0 && errno == EINTR { continue }
            if ready < 0 || fds[0].revents != 0 { return }
            var wake = Wake.refresh
            if ready > 0 {
                var seen = drain(inotify, names: names, into: &buffer)
                guard seen.relevant else { continue }  // the track store, temporary files: not what the page shows
                usleep(UInt32(settings.settle * 1_000_000))
                let rest = drain(inotify, names: names, into: &buffer)
                seen.lost = seen.lost || rest.lost
                if seen.lost { watching = false }
                wake = .changed
            } else if !watching {
                watching = addWatches(inotify, directories)
                wake = .changed  // polling: the monitor compares the files' stamps
            }
            last = uptime()
            wakeups.fire(wake)
        }
    }

    private static func addWatches(_ inotify: Int32, _ directories: Set<String>) -> Bool {
        guard inotify >= 0 else { return false }
        let events = UInt32(
            IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB
                | IN_DELETE_SELF | IN_MOVE_SELF)
        return directories.allSatisfy { inotify_add_watch(inotify, $0, events) >= 0 }
    }

    /// Reads every queued event: whether one concerns a watched file (or may: an overflow, the
    /// directory itself), and whether a watch was lost (the directory removed or moved).
    private static func drain(_ inotify: Int32, names: [[UInt8]], into buffer: inout [UInt8]) -> (
        relevant: Bool, lost: Bool
    ) {
        var (relevant, lost) = (false, false)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(inotify, $0.baseAddress, $0.count) }
            guard count > 0 else { return (relevant, lost) }
            buffer.withUnsafeBytes { bytes in
                var offset = 0
                let header = MemoryLayout<inotify_event>.size
                while offset + header <= count {
                    let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
                    let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
                    guard length <= count - offset - header else { break }
                    let nameBytes = bytes[(offset + header)..<(offset + header + length)].prefix { $0 != 0 }
                    if mask & UInt32(IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF) != 0 { lost = true }
                    if nameBytes.isEmpty || mask & UInt32(IN_Q_OVERFLOW) != 0
                        || names.contains(where: { $0.elementsEqual(nameBytes) })
                    {
                        relevant = true
                    }
                    offset += header + length
                }
            }
        }
    }
}
