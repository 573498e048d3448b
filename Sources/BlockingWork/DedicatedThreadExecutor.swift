#if canImport(Glibc)
import Glibc
#endif

/// A serial executor that runs every job on one thread of its own.
///
/// For actors whose calls block: a SQLite commit waits for fsync, and a busy database for its
/// timeout. On Swift's cooperative pool such a call holds one of its threads, and a two-core box has
/// only two. An actor that names this executor as its `unownedExecutor` keeps its synchronous code as
/// it is, and that code runs here instead. Actors that share an executor are also serialised against
/// each other, which suits stores that write to the same disk.
public final class DedicatedThreadExecutor: SerialExecutor, Sendable {
    private let queue: JobQueue

    /// Starts the thread; it runs for the life of the process (the executors are made once and kept
    /// in statics, so there is nothing to stop).
    public init(name: String) {
        queue = JobQueue()
        let (queue, executor) = (queue, asUnownedSerialExecutor())
        // Without its thread the executor could run nothing; a process that cannot start one thread
        // cannot do its work at all.
        let started = startDetachedThread { Self.serve(queue, on: executor, name: name) }
        precondition(started == 0, "cannot start the thread \(name): error \(started)")
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.push(UnownedJob(job))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    private static func serve(_ queue: JobQueue, on executor: UnownedSerialExecutor, name: String) {
        nameThisThread(name)
        while true {
            queue.pop().runSynchronously(on: executor)
        }
    }
}

/// The executor of the stores that write to the state directory (the spool, the other machines, the
/// heartbeat): one thread, so their commits and fsyncs queue behind each other instead of competing
/// for the disk and for the cooperative pool.
public enum StorageThread {
    public static let executor = DedicatedThreadExecutor(name: "agrigps-storage")
}

/// Jobs in the order they were enqueued, behind a mutex and a condition the thread sleeps on.
private final class JobQueue: @unchecked Sendable {
    // Heap-allocated: pthread objects must not move, and a Swift stored property may.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    private var head = 0

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    func push(_ job: UnownedJob) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    func pop() -> UnownedJob {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while head == jobs.count { pthread_cond_wait(condition, mutex) }
        let next = jobs[head]
        head += 1
        // Compact now and then rather than removing from the front each time.
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        }
        return next
    }
}

/// Names the calling thread, as `top -H` and `/proc/PID/task` show it. Through /proc rather than
/// pthread_setname_np, which glibc declares only for _GNU_SOURCE and Swift does not see. Linux keeps
/// 15 bytes of it; a name that cannot be set leaves the thread unnamed, nothing worse.
private func nameThisThread(_ name: String) {
    let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard file >= 0 else { return }
    defer { close(file) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
}
