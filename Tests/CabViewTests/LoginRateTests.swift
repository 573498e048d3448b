import Foundation
import TestSupport
import Testing

@testable import CabView

@Suite("Cab view login rate over all clients")
struct LoginRateTests {
    /// Counts the password checks a throttle lets through.
    final class Checks: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0
        var count: Int { lock.withLock { value } }
        func check(_ result: Bool) -> Bool {
            lock.withLock { value += 1 }
            return result
        }
    }

    @Test(
        "a fresh address for every guess gets no more checks than the rate over all clients; the refused are told when to try again"
    )
    func freshAddressPerGuess() async throws {
        let scratch = TemporaryDirectory("login-rate")
        let directory = scratch.path
        let time = ManualClock(startingAt: 1_800_000_000)
        let throttle = LoginThrottle(
            path: directory + "/web-logins.json", checksPerSecond: 2, checkBurst: 4, now: { time.now() })
        let checks = Checks()
        var refused = 0
        // 1,000 guesses over 10 s of virtual time, each from an address never seen before.
        for guess in 0..<1_000 {
            time.advance(by: 0.01)
            switch await throttle.attempt(
                "10.\(guess / 65_536).\(guess / 256 % 256).\(guess % 256)", verify: { checks.check(false) })
            {
            case .accepted:
                Issue.record("a wrong guess was accepted")
            case .wrong:
                break
            case .tooSoon(let retryAfter):
                refused += 1
                if !(retryAfter > 0 && retryAfter <= 0.5) {
                    Issue.record("told to retry after \(retryAfter) s, not within the next token's 0.5 s")
                }
            }
        }
        // The burst of 4, then 2 a second for 10 s.
        #expect(checks.count <= 4 + 20, "\(checks.count) of 1,000 guesses were checked in 10 s")
        #expect(checks.count >= 20, "the rate let too few through: \(checks.count)")
        #expect(refused == 1_000 - checks.count)
        print("1,000 guesses from fresh addresses over 10 s: \(checks.count) checked, \(refused) told to wait")
        // Once the flood stops, the driver's right password is checked at once.
        time.advance(by: 1)
        #expect(await throttle.attempt("10.200.0.1", verify: { checks.check(true) }) == .accepted)
    }

    @Test("a quiet box keeps its burst: four logins at once are all checked, the fifth waits half a second")
    func burst() async throws {
        let scratch = TemporaryDirectory("login-rate")
        let directory = scratch.path
        let time = ManualClock(startingAt: 1_800_000_000)
        let throttle = LoginThrottle(
            path: directory + "/web-logins.json", checksPerSecond: 2, checkBurst: 4, now: { time.now() })
        for client in 1...4 {
            #expect(await throttle.attempt("10.0.0.\(client)", verify: { true }) == .accepted)
        }
        #expect(await throttle.attempt("10.0.0.5", verify: { true }) == .tooSoon(retryAfter: 0.5))
        time.advance(by: 0.5)
        #expect(await throttle.attempt("10.0.0.5", verify: { true }) == .accepted)
        // A clock stepped back (the wall clock of a box without a battery) neither refills nor traps.
        time.step(by: -3600)
        #expect(await throttle.attempt("10.0.0.6", verify: { true }) == .tooSoon(retryAfter: 0.5))
    }
}
