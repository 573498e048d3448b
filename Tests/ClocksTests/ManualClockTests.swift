import Clocks
import TestSupport
import Testing

/// The clock tests move by hand, which the tests of spacing, backoff and ages stand on.
@Suite(.timeLimit(.minutes(1)))
struct ManualClockTests {
    @Test("each sleeper wakes once the clock reaches its deadline, and not before")
    func wakesWhenDue() async throws {
        let time = ManualClock(startingAt: 100)
        let clock = time.clock
        try await withThrowingTaskGroup(of: Int.self) { group in
            for (index, deadline) in [(0, 130.0), (1, 110.0), (2, 120.0)] {
                group.addTask {
                    try await clock.sleep(until: deadline)
                    return index
                }
            }
            await time.sleepers(atLeast: 3)
            time.advance(by: 15)
            #expect(time.sleeping == 2, "only the one due by 115 woke")
            #expect(try await group.next() == 1)
            time.advance(by: 100)
            var rest: [Int] = []
            for try await index in group { rest.append(index) }
            #expect(rest.sorted() == [0, 2])
        }
        #expect(time.now() == 215)
        #expect(time.sleeping == 0)
    }

    @Test("a reading already passed does not sleep; a sleep for some seconds counts from now")
    func pastDeadlines() async throws {
        let time = ManualClock(startingAt: 50)
        try await time.clock.sleep(until: 40)
        try await time.clock.sleep(until: 50)
        #expect(time.sleeping == 0)
        let waiting = Task { try await time.clock.sleep(for: 5) }
        await time.sleepers(atLeast: 1)
        time.advance(by: 4.999)
        #expect(time.sleeping == 1)
        time.advance(by: 0.001)
        try await waiting.value
        #expect(time.now() == 55)
    }

    @Test("a sleeper cancelled, before or while it sleeps, throws CancellationError and leaves the list")
    func cancellation() async {
        let time = ManualClock()
        let sleeping = Task { try await time.clock.sleep(for: 60) }
        await time.sleepers(atLeast: 1)
        sleeping.cancel()
        await #expect(throws: CancellationError.self) { try await sleeping.value }
        #expect(time.sleeping == 0)
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await time.clock.sleep(for: 60)
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        #expect(time.sleeping == 0)
    }

    @Test("stepped back as a wall clock is, it wakes nobody; stepped on, it wakes who is due")
    func steps() async throws {
        let time = ManualClock(startingAt: 1_000)
        let waiting = Task { try await time.clock.sleep(until: 1_010) }
        await time.sleepers(atLeast: 1)
        time.step(by: -3_600)
        #expect(time.now() == -2_600 && time.sleeping == 1)
        time.advance(by: -5)
        #expect(time.now() == -2_600, "advance only goes forward")
        time.step(by: 3_610)
        try await waiting.value
        #expect(time.now() == 1_010)
    }

    @Test(
        "the system's clock sleeps in real time, ends its sleep when cancelled, and takes a deadline that never comes")
    func systemClock() async throws {
        let clock = MonotonicClock.system
        let start = clock.now()
        try await clock.sleep(for: 0.02)
        #expect(clock.now() - start >= 0.02)
        let long = Task { try await clock.sleep(for: 60) }
        long.cancel()
        await #expect(throws: CancellationError.self) { try await long.value }
        let never = Task { try await clock.sleep(until: .infinity) }  // a day at a time, no trap
        never.cancel()
        await #expect(throws: CancellationError.self) { try await never.value }
        #expect(clock.now() - start < 30)
    }
}
