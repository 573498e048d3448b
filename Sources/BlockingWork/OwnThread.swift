#if canImport(Glibc)
import Glibc
#endif

/// Runs `body` on a thread started for it, and waits for the result without holding a thread of
/// Swift's cooperative pool: for the rare call that must block (waiting on a child process, a
/// synchronous set-up that polls) from async code. A thread per call costs about 50 µs, which is
/// nothing beside the waits it is for.
public func onOwnThread<T: Sendable, E: Error>(_ body: @escaping @Sendable () throws(E) -> T) async throws(E) -> T {
    let result: Result<T, E> = await withCheckedContinuation { continuation in
        let run: @Sendable () -> Void = {
            do throws(E) {
                continuation.resume(returning: .success(try body()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }
        // No thread to be had (the process is at its limit): run it here rather than never.
        if startDetachedThread(run) != 0 { run() }
    }
    return try result.get()
}

/// A thread of its own for a job that blocks for as long as it lives: a loop reading a socket, a
/// reaper waiting on a child. Named (as `top -H` shows it) and detached; false when the process
/// could not start one.
public func startThread(named name: String, _ body: @escaping @Sendable () -> Void) -> Bool {
    startDetachedThread {
        nameThisThread(name)
        body()
    } == 0
}

/// Starts a detached thread running `body`; returns pthread_create's result (0 when started).
func startDetachedThread(_ body: @escaping @Sendable () -> Void) -> Int32 {
    let box = Unmanaged.passRetained(ThreadBody(body))
    var thread = pthread_t()
    let started = pthread_create(
        &thread, nil,
        { raw in
            Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue().body()
            return nil
        }, box.toOpaque())
    if started == 0 {
        pthread_detach(thread)
    } else {
        box.release()
    }
    return started
}

private final class ThreadBody: Sendable {
    let body: @Sendable () -> Void
    init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
