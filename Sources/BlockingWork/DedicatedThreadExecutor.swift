#if canImport(Glibc)
import Glibc
#endif

/// A serial executor that runs every job on one thread of its own.
///
/// For actors whose calls block: a SQLite commit waits for fsync, and a busy database for its
/// timeout. On Swift's cooperative pool such a call holds one of its threads, and a two-core box has
/// only two. An actor that names this executor as its `unownedExecutor` keeps its synchronous code as
/// it is, and that code runs here instead.
///
/// It is a task executor too: a task that prefers it (`withTaskExecutorPreference`) runs its
/// nonisolated code on this thread, and goes to and from actors on it without a thread switch.
public final class DedicatedThreadExecutor: SerialExecutor, TaskExecutor, Sendable {
    private let queue: JobQueue

    /// Starts the thread. It ends when the executor is released: an actor that keeps its executor in
    /// a stored property takes the thread with it when it goes, and no job of that actor can be
    /// waiting then (a queued job keeps its actor alive).
    public init(name: String) {
        queue = JobQueue()
        let (queue, executor) = (queue, asUnownedSerialExecutor())
        // Without its thread the executor could run nothing; a process that cannot start one thread
        // cannot do its work at all.
        let started = startDetachedThread { Self.serve(queue, on: executor, name: name) }
        precondition(started == 0, "cannot start the thread \(name): error \(started)")
    }

    deinit { queue.close() }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.push(UnownedJob(job))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    private static func serve(_ queue: JobQueue, on executor: UnownedSerialExecutor, name: String) {
        nameThisThread(name)
        while let job = queue.pop() {
            job.runSynchronously(on: executor)
        }
    }
}

/// Jobs in the order they were enqueued, behind a mutex and a condition the thread sleeps on.
private final class JobQueue: @unchecked Sendable {
    // Heap-allocated: pthread objects must not move, and a Swift stored property may.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var closed = false

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    func push(_ job: UnownedJob) {
        pthread_mutex_lock(mutex)
        jobs.append(job)
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Ends the thread once the jobs already queued have run.
    func close() {
        pthread_mutex_lock(mutex)
        closed = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// The next job, waiting for one; nil once closed and empty.
    func pop() -> UnownedJob? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while head == jobs.count && !closed { pthread_cond_wait(condition, mutex) }
        guard head < jobs.count else { return nil }
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
func nameThisThread(_ name: String) {
    let file = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard file >= 0 else { return }
    defer { close(file) }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(file, $0.baseAddress, $0.count) }
}
