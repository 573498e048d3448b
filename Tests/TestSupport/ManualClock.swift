import Clocks
import Synchronization

/// A clock that only a test moves on, for the logic about time (spacing, backoff, ages): hand
/// `clock` (or `now` as a reading of seconds) to the code under test, wait until it sleeps
/// (`sleepers(atLeast:)`), and `advance`. Sleepers wake in the order of their deadlines, each at its
/// own reading, as a real clock wakes them. As a wall clock, it can also be stepped back.
public final class ManualClock: Sendable {
    private struct Sleeper {
        var deadline: Double
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Double
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
        /// Sleepers not registered yet, and those of them cancelled meanwhile.
        var arriving: Set<Int> = []
        var cancelled: Set<Int> = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    public init(startingAt now: Double = 1000) {
        state = Mutex(State(now: now))
    }

    public var clock: MonotonicClock {
        MonotonicClock(now: { [self] in now() }, sleepUntil: { [self] in try await sleep(until: $0) })
    }

    public func now() -> Double { state.withLock { $0.now } }

    /// How many tasks sleep on this clock.
    public var sleeping: Int { state.withLock { $0.sleepers.count } }

    /// Returns once `count` tasks at least sleep on this clock: the code under test has come to its wait.
    public func sleepers(atLeast count: Int = 1) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state in
                guard state.sleepers.count < count else { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Moves the clock on by `seconds`, waking each sleeper whose deadline it passes, earliest first,
    /// with the clock at that deadline.
    public func advance(by seconds: Double) {
        let target = now() + max(0, seconds)
        while let woken = wakeNext(until: target) { woken.resume() }
        state.withLock { $0.now = max($0.now, target) }
    }

    /// Takes the earliest sleeper due by `target` off the list, the clock at its deadline.
    /// Sets the clock `seconds` on or back at once, as a system clock is stepped; only a step
    /// forward wakes sleepers (at its end).
    public func step(by seconds: Double) {
        guard seconds >= 0 else { return state.withLock { $0.now += seconds } }
        advance(by: seconds)
    }

    private func wakeNext(until target: Double) -> CheckedContinuation<Void, any Error>? {
        state.withLock { state in
            let due = state.sleepers.filter { $0.value.deadline <= target }
            guard let (id, sleeper) = due.min(by: { $0.value.deadline < $1.value.deadline }) else { return nil }
            state.sleepers[id] = nil
            state.now = max(state.now, sleeper.deadline)
            return sleeper.continuation
        }
    }

    /// Puts a sleeper in the list, unless it is due or was cancelled; gives what it is to be resumed
    /// with at once, if anything, and the watchers its arrival satisfies.
    private func register(
        _ id: Int, until deadline: Double, _ continuation: CheckedContinuation<Void, any Error>
    ) -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) {
        state.withLock { state in
            state.arriving.remove(id)
            if state.cancelled.remove(id) != nil { return (.failure(CancellationError()), []) }
            if deadline <= state.now { return (.success(()), []) }
            state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
            let count = state.sleepers.count
            let ready = state.watchers.filter { $0.count <= count }.map(\.continuation)
            state.watchers.removeAll { $0.count <= count }
            return (nil, ready)
        }
    }

    private func sleep(until deadline: Double) async throws {
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.arriving.insert(state.nextID)
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, ready) = register(id, until: deadline, continuation)
                if let outcome { continuation.resume(with: outcome) }
                for watcher in ready { watcher.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state in
                if state.arriving.contains(id) { state.cancelled.insert(id) }
                return state.sleepers.removeValue(forKey: id)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }
}
