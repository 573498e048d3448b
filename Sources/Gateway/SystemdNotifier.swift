import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// systemd's notify protocol: datagrams of `KEY=VALUE` lines to the AF_UNIX socket named by
/// $NOTIFY_SOCKET (a leading "@" means the abstract namespace). Documented in sd_notify(3); a few
/// lines of socket code spare the daemon a libsystemd dependency.
public struct SystemdNotifier: Sendable {
    public let socketPath: String
    /// Half of $WATCHDOG_USEC, as systemd advises; nil when the unit has no watchdog.
    public let watchdogInterval: Double?

    public init(socketPath: String, watchdogInterval: Double? = nil) {
        self.socketPath = socketPath
        self.watchdogInterval = watchdogInterval
    }

    /// The notifier systemd asked for, or nil when not started by systemd with Type=notify.
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> SystemdNotifier?
    {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty else { return nil }
        var interval: Double?
        if let usec = environment["WATCHDOG_USEC"].flatMap(Double.init), usec > 0,
            environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true
        {
            interval = usec / 2_000_000
        }
        return SystemdNotifier(socketPath: path, watchdogInterval: interval)
    }

    public func ready(status: String) { send("READY=1\nSTATUS=\(status)") }
    public func watchdog() { send("WATCHDOG=1") }
    public func status(_ text: String) { send("STATUS=\(text)") }
    public func stopping() { send("STOPPING=1") }

    /// Sends one datagram. Failures are ignored: a missing listener must never stop the daemon.
    @discardableResult
    public func send(_ message: String) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let bytes = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                sendto(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL), socketAddress, length)
            }
        }
        return sent == bytes.count
    }
}
