import Foundation
import Logging
import TestSupport
import Testing

@testable import CabView

/// The cab view's connection table and request deadlines in virtual time: the clock is the test's.
@Suite("Cab view connection table")
struct ConnectionTableTests {
    /// Records which connections the table closed.
    final class Closes: @unchecked Sendable {
        private let lock = NSLock()
        private var names: [String] = []
        var closed: [String] { lock.withLock { names } }
        func closer(_ name: String) -> @Sendable () -> Void { { self.lock.withLock { self.names.append(name) } } }
    }

    static let quiet: Logger = {
        var logger = Logger(label: "test")
        logger.logLevel = .critical
        return logger
    }()

    @Test(
        "a head must be whole 10 s after the connection opened or the last answer ended; a body gets 10 s and a second per 16 KiB"
    )
    func deadlines() {
        let limits = RequestDeadline.Limits(readTimeout: 10)
        var slowHead = RequestDeadline(limits: limits, openedAt: 100)
        #expect(slowHead.deadline == 110 && !slowHead.expired(at: 109.9) && slowHead.expired(at: 110))

        // A whole head, then a byte every 5 s: out of time at about 10 s, whatever length the head claimed.
        var trickle = RequestDeadline(limits: limits, openedAt: 100)
        trickle.headRead(at: 101)
        var time = 101.0
        while !trickle.expired(at: time) {
            time += 5
            trickle.bodyRead(bytes: 1, at: time)
        }
        #expect(time <= 111 + 5, "a trickled body held on until \(time)")

        // 64 MiB at 64 KiB a second, a quarter of the floor's pace again: never out of time; answered, it has none.
        var upload = RequestDeadline(limits: limits, openedAt: 0)
        upload.headRead(at: 1)
        time = 1
        for _ in 0..<4096 {
            time += 0.25
            #expect(!upload.expired(at: time))
            upload.bodyRead(bytes: 16_384, at: time)
        }
        upload.endRead(at: time)
        #expect(upload.phase == .answering && upload.deadline == nil && !upload.expired(at: time + 86_400))
        upload.answerEnded(at: time + 30)
        #expect(
            upload.phase == .waiting(since: time + 30) && upload.deadline == time + 40,
            "the next head is awaited from the answer's end")

        // An answer that refused the request before its body came: the rest of the body is still timed.
        var refused = RequestDeadline(limits: limits, openedAt: 0)
        refused.headRead(at: 0)
        refused.answerEnded(at: 1)
        #expect(refused.phase == .reading(since: 0, received: 0) && refused.deadline == 10)
        refused.endRead(at: 2)
        #expect(refused.phase == .waiting(since: 2))
        slowHead.headRead(at: 105)
        slowHead.endRead(at: 105)
        #expect(slowHead.phase == .answering)
        #expect(
            RequestDeadline.Limits(readTimeout: .infinity).headTimeout == 10
                && RequestDeadline.Limits(readTimeout: 0).headTimeout == 0.1)
    }

    @Test(
        "a full table closes the longest-waiting connection first, then the slowest body; one being answered never, the newcomer instead"
    )
    func victims() {
        let time = ManualClock(startingAt: 1_000)
        let closes = Closes()
        let table = ConnectionTable(
            capacity: 4, limits: .init(readTimeout: 10), logger: Self.quiet, now: { time.now() })
        _ = table.opened(client: "10.0.0.1", close: closes.closer("idle"))
        time.advance(by: 1)
        let trickle = table.opened(client: "10.0.0.2", close: closes.closer("trickle"))
        let upload = table.opened(client: "10.0.0.3", close: closes.closer("upload"))
        let answered = table.opened(client: "10.0.0.4", close: closes.closer("answered"))
        _ = table.headRead(trickle)
        _ = table.headRead(upload)
        _ = table.headRead(answered)
        _ = table.endRead(answered)
        time.advance(by: 2)
        _ = table.bodyRead(trickle, bytes: 1)
        _ = table.bodyRead(upload, bytes: 500_000)
        #expect(closes.closed.isEmpty)

        let first = table.opened(client: "10.0.0.5", close: closes.closer("first"))
        #expect(closes.closed == ["idle"], "the connection that never asked goes first")
        _ = table.headRead(first)
        _ = table.endRead(first)
        _ = table.opened(client: "10.0.0.6", close: closes.closer("second"))
        #expect(
            closes.closed == ["idle", "trickle"], "then the body at a byte in two seconds, not the upload at 250 kB/s")
        // Two answered, the upload, and the second waiting for its head: a connection that has not
        // asked yet makes way before a body that is coming, the newest too.
        _ = table.opened(client: "10.0.0.7", close: closes.closer("third"))
        _ = table.opened(client: "10.0.0.8", close: closes.closer("fourth"))
        #expect(closes.closed == ["idle", "trickle", "second", "third"])
        #expect(table.counts.connections == 4)
    }

    @Test("with every connection being answered, a newcomer is the one closed")
    func allAnswered() {
        let time = ManualClock(startingAt: 0)
        let closes = Closes()
        let table = ConnectionTable(capacity: 2, logger: Self.quiet, now: { time.now() })
        for name in ["a", "b"] {
            let id = table.opened(client: "10.0.0.1", close: closes.closer(name))
            _ = table.headRead(id)
            _ = table.endRead(id)
        }
        let newcomer = table.opened(client: "10.0.0.2", close: closes.closer("newcomer"))
        #expect(closes.closed == ["newcomer"])
        #expect(table.counts.connections == 2 && table.check(newcomer) == nil)
    }

    @Test(
        "past the streams' cap, the oldest stream of the client holding the most is closed; another client's stream stays"
    )
    func streamCap() {
        let time = ManualClock(startingAt: 0)
        let closes = Closes()
        let table = ConnectionTable(capacity: 100, streamCapacity: 3, logger: Self.quiet, now: { time.now() })
        func stream(_ client: String, _ name: String) {
            time.advance(by: 1)
            let id = table.opened(client: client, close: closes.closer(name))
            _ = table.headRead(id)
            _ = table.endRead(id)
            table.streamStarted(id)
        }
        stream("10.0.0.9", "cab")
        stream("10.0.0.66", "flood 1")
        stream("10.0.0.66", "flood 2")
        #expect(closes.closed.isEmpty)
        stream("10.0.0.66", "flood 3")
        #expect(closes.closed == ["flood 1"], "the cab's stream is the oldest, but the flood's client holds the most")
        for number in 4...20 { stream("10.0.0.66", "flood \(number)") }
        #expect(table.counts.streams == 3 && !closes.closed.contains("cab"))
        // The cab's page reloaded: two clients with two streams each, and the older stream goes (the
        // page that was left); then the flood's, the older again; then the cab's own, holding the most.
        stream("10.0.0.9", "cab again")
        #expect(closes.closed.last == "cab")
        stream("10.0.0.9", "cab once more")
        #expect(closes.closed.last == "flood 19")
        stream("10.0.0.9", "cab a fourth time")
        #expect(closes.closed.last == "cab again" && table.counts.streams == 3)
    }

    @Test(
        "at its deadline a connection still without a whole request is closed; one whose body keeps coming is looked at again later"
    )
    func check() {
        let time = ManualClock(startingAt: 0)
        let closes = Closes()
        let table = ConnectionTable(
            capacity: 10, limits: .init(readTimeout: 10), logger: Self.quiet, now: { time.now() })
        let silent = table.opened(client: "10.0.0.1", close: closes.closer("silent"))
        let uploading = table.opened(client: "10.0.0.2", close: closes.closer("uploading"))
        let streaming = table.opened(client: "10.0.0.3", close: closes.closer("streaming"))
        #expect(table.check(silent) == 10, "not yet: look again at 10 s")
        _ = table.headRead(uploading)
        _ = table.headRead(streaming)
        _ = table.endRead(streaming)
        table.streamStarted(streaming)
        time.advance(by: 10)
        #expect(table.check(silent) == nil && closes.closed == ["silent"])
        #expect(table.bodyRead(uploading, bytes: 16_384 * 20) == 30)
        #expect(table.check(uploading) == 30 && table.check(streaming) == nil)
        time.advance(by: 20)
        #expect(table.check(uploading) == nil && closes.closed == ["silent", "uploading"])
        time.advance(by: 86_400)
        #expect(table.check(streaming) == nil && table.counts == (1, 1), "an event stream has no deadline")
    }
}
