import Foundation
import TestSupport
import Testing

@testable import CabView

/// Clients that open connections and then send their requests as slowly as they can, or hold event
/// streams open: on real sockets against a server in this process, with small numbers.
@Suite("Cab view under slow clients", .serialized, .timeLimit(.minutes(2)))
struct SlowClientTests {
    static func eventsRequest(port: Int) -> String {
        "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n\r\n"
    }

    /// A login whose body (within the 16 KiB the route reads) never finishes: the route waits for it.
    static func slowBody(port: Int) -> String {
        "POST /api/login HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{"
    }

    /// A head that never ends: one more byte of a header's value at each trickle.
    static func slowHead(port: Int) -> String {
        "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nX-Slow: a"
    }

    @Test(
        "with the connection cap taken by trickled bodies and held event streams, a fresh client still gets the page and the state"
    )
    func roomForTheCab() async throws {
        let fixture = try CabFixture()
        fixture.configuration.maxConnections = 32
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            // More streams than a quarter of the cap, and more slow bodies than the rest of it: before,
            // every one of them counted as busy, and a full table of busy connections turned newcomers away.
            let streams = try HeldConnections(
                port: fixture.port, count: 20, sending: Self.eventsRequest(port: fixture.port))
            defer { streams.close() }
            let bodies = try HeldConnections(
                port: fixture.port, count: 30, sending: Self.slowBody(port: fixture.port), trickling: " ", every: 0.5)
            defer { bodies.close() }
            try await Task.sleep(for: .milliseconds(500))
            let clock = ContinuousClock()
            let started = clock.now
            var statuses: [Int] = []
            for path in ["/", "/api/state"] {
                do {
                    statuses.append(try await fixture.get(path, headers: ["Connection": "close"]).status)
                } catch {
                    Issue.record(
                        "\(path) was refused behind \(streams.count) streams and \(bodies.count) slow bodies: \(error)")
                }
            }
            let took = clock.now - started
            #expect(statuses == [200, 200])
            #expect(took < .seconds(5), "answered after \(took)")
            // The streams past the cap were closed, oldest first (all from one client here).
            let deadline = clock.now + .seconds(5)
            while streams.stillOpen() > 8, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            let openStreams = streams.stillOpen()
            #expect(openStreams <= 8, "\(openStreams) of 20 event streams still open; the cap is 8")
            print(
                "cab view behind 20 held event streams and 30 trickled bodies (cap 32): page and state in \(took); "
                    + "\(openStreams) streams and \(bodies.stillOpen()) bodies left open")
        }
    }

    @Test("a head or a body trickled a byte at a time is closed within the read timeout; an event stream is not")
    func tricklesAreClosed() async throws {
        let fixture = try CabFixture()
        fixture.configuration.readTimeout = 1
        try fixture.writeHeartbeat(onboarded: false)
        try await fixture.start()
        try await tearingDown({ await fixture.stop() }) {
            let stream = try HeldConnections(
                port: fixture.port, count: 1, sending: Self.eventsRequest(port: fixture.port))
            defer { stream.close() }
            let heads = try HeldConnections(
                port: fixture.port, count: 5, sending: Self.slowHead(port: fixture.port), trickling: "a", every: 0.3)
            defer { heads.close() }
            let bodies = try HeldConnections(
                port: fixture.port, count: 5, sending: Self.slowBody(port: fixture.port), trickling: " ", every: 0.3)
            defer { bodies.close() }
            let clock = ContinuousClock()
            let started = clock.now
            // 1 s for the head, 1 s for the body and a byte's worth more: a generous bound beyond that for a loaded machine.
            let deadline = started + .seconds(12)
            while heads.stillOpen() + bodies.stillOpen() > 0, clock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            let took = clock.now - started
            #expect(heads.stillOpen() == 0, "\(heads.stillOpen()) of 5 trickled heads still open after \(took)")
            #expect(bodies.stillOpen() == 0, "\(bodies.stillOpen()) of 5 trickled bodies still open after \(took)")
            #expect(stream.stillOpen() == 1, "the event stream was closed as well")
            #expect(try await fixture.get("/api/state").status == 200)
            print("trickled heads and bodies closed \(took) after they began, with a read timeout of 1 s")
        }
    }
}

/// Connections to a loopback port that each send the start of a request and then, if asked, one
/// more byte every `interval` seconds from a thread of their own: what a slow-sending attacker holds.
final class HeldConnections: @unchecked Sendable {
    private let lock = NSLock()
    private var descriptors: [Int32] = []
    private var stopped = false

    var count: Int { lock.withLock { descriptors.count } }

    init(port: Int, count: Int, sending start: String, trickling byte: String? = nil, every interval: Double = 1) throws
    {
        for _ in 0..<count {
            let descriptor = try LoopbackHTTP.connectedSocket(port: port)
            descriptors.append(descriptor)
            let bytes = Array(start.utf8)
            _ = send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL))
        }
        guard let byte else { return }
        let thread = Thread { [self] in
            let bytes = Array(byte.utf8)
            while true {
                Thread.sleep(forTimeInterval: interval)
                // Under the lock, so that no descriptor is closed (and its number taken by another test) while sent to.
                let going = lock.withLock {
                    for descriptor in descriptors where !stopped {
                        _ = send(descriptor, bytes, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                    }
                    return !stopped
                }
                guard going else { return }
            }
        }
        thread.start()
    }

    /// How many the server has not closed yet: whatever it sent is read and dropped, then a read that
    /// would wait means the connection is still open.
    func stillOpen() -> Int {
        let open = lock.withLock { descriptors }
        var buffer = [UInt8](repeating: 0, count: 4096)
        return open.filter { descriptor in
            while true {
                let count = recv(descriptor, &buffer, buffer.count, Int32(MSG_DONTWAIT))
                if count > 0 { continue }
                return count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            }
        }.count
    }

    func close() {
        lock.withLock {
            stopped = true
            for descriptor in descriptors { Glibc.close(descriptor) }
            descriptors = []
        }
    }

    deinit { close() }
}
