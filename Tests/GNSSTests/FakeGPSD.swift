import Foundation
import Synchronization

/// A stand-in gpsd on 127.0.0.1 for one client, on a thread of its own: it says VERSION, waits for
/// the client's ?WATCH, writes `script`, and then either closes or holds the connection until the
/// client leaves. Every wait is bounded, so a client that misbehaves cannot hang the test.
final class FakeGPSD: Sendable {
    static let version =
        Array(#"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#.utf8) + [
            0x0D, 0x0A,
        ]

    let port: UInt16
    private let done = DispatchSemaphore(value: 0)
    /// What the stand-in saw go wrong, if anything; nil while it runs and when all went well.
    private let trouble = Mutex<String?>(nil)

    /// - Parameter holdOpen: keep the connection after the script, until the client closes it.
    init(script: [UInt8], holdOpen: Bool = false) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ready = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && listen(listener, 1) == 0 && getsockname(listener, $0, &length) == 0
            }
        }
        guard ready else {
            close(listener)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in
            defer { done.signal() }
            defer { close(listener) }
            let problem = Self.serve(listener: listener, script: script, holdOpen: holdOpen)
            trouble.withLock { $0 = problem }
        }
        thread.name = "fake-gpsd"
        thread.start()
    }

    /// Waits for the stand-in to finish; what went wrong on its side, if anything.
    func finish(timeout: Double = 5) -> String? {
        guard done.wait(timeout: .now() + timeout) == .success else { return "the fake gpsd did not finish" }
        done.signal()  // later callers return at once
        return trouble.withLock { $0 }
    }

    private static func serve(listener: Int32, script: [UInt8], holdOpen: Bool) -> String? {
        guard wait(for: POLLIN, on: listener, seconds: 5) else { return "no client connected" }
        let client = accept(listener, nil, nil)
        guard client >= 0 else { return "accept failed" }
        defer { close(client) }
        guard send(FakeGPSD.version, to: client) else { return "could not send VERSION" }
        var heard: [UInt8] = []
        let deadline = Date().addingTimeInterval(5)
        while !String(decoding: heard, as: UTF8.self).contains("?WATCH") {
            guard Date() < deadline else { return "no ?WATCH" }
            guard wait(for: POLLIN, on: client, seconds: 0.1) else { continue }
            var chunk = [UInt8](repeating: 0, count: 512)
            let count = chunk.withUnsafeMutableBytes { recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            guard count > 0 else { return "the client left before ?WATCH" }
            heard += chunk[..<count]
        }
        // The client may give up part-way through a long script; that is what some tests expect.
        _ = send(script, to: client)
        guard holdOpen else { return nil }
        let until = Date().addingTimeInterval(15)
        while Date() < until {
            guard wait(for: POLLIN, on: client, seconds: 0.1) else { continue }
            var chunk = [UInt8](repeating: 0, count: 512)
            if chunk.withUnsafeMutableBytes({ recv(client, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }) <= 0 {
                return nil
            }
        }
        return "the client never closed the connection"
    }

    private static func send(_ bytes: [UInt8], to fd: Int32) -> Bool {
        var offset = 0
        let deadline = Date().addingTimeInterval(5)
        while offset < bytes.count && Date() < deadline {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent > 0 {
                offset += sent
                continue
            }
            if sent < 0 && errno != EAGAIN && errno != EINTR { return false }
            _ = wait(for: POLLOUT, on: fd, seconds: 0.1)
        }
        return offset == bytes.count
    }

    private static func wait(for events: Int32, on fd: Int32, seconds: Double) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(events), revents: 0)
        return poll(&entry, 1, Int32(seconds * 1000)) > 0
    }
}

/// CPU time this whole process has used, in seconds: a spinning reader thread shows here.
func processCPUTime() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
