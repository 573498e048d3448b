import Bounds
import Foundation

/// Small loopback TCP helpers; the replay never talks beyond 127.0.0.1.
public enum LoopbackSocket {
    /// A listening socket on 127.0.0.1 with a port chosen by the kernel.
    static func listen() throws(ReplayError) -> (fd: Int32, port: UInt16) {
        // not gpsd's to inherit
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .system("cannot create a socket: \(String(cString: strerror(errno)))") }
        var address = loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, Glibc.listen(fd, 4) == 0, let port = localPort(of: fd) else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .system("cannot listen on 127.0.0.1: \(reason)")
        }
        return (fd, port)
    }

    /// A port that was free a moment ago. Whoever uses it must cope with losing a race for it.
    static func freePort() throws(ReplayError) -> UInt16 {
        let (fd, port) = try listen()
        close(fd)
        return port
    }

    /// True when something accepts TCP connections on 127.0.0.1:`port`.
    public static func accepts(port: UInt16) -> Bool {
        // not gpsd's to inherit
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Writes all of `bytes`; false when the peer has gone. MSG_NOSIGNAL keeps SIGPIPE away.
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            guard sent > 0 else { return false }
            offset += sent
        }
        return true
    }

    /// Waits up to `timeout` seconds for `fd` to become readable (or acceptable).
    static func readable(_ fd: Int32, timeout: Double) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        // Clamped: a NaN or huge timeout must not trap the conversion.
        let milliseconds = timeout.isFinite ? Bounds.clamped(timeout * 1000, to: 0...86_400_000) ?? 0 : 86_400_000
        return poll(&entry, 1, Int32(milliseconds)) > 0
    }

    private static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private static func localPort(of fd: Int32) -> UInt16? {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) == 0 }
        }
        return ok ? UInt16(bigEndian: address.sin_port) : nil
    }
}
