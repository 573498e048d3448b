import ChildProcesses
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization
import X509

/// Debian's mosquitto as a child: unprivileged (it runs as whoever runs the simulator, so it can read
/// its 0600 key), in a temporary directory, on a loopback port of its own. TLS with a server
/// certificate from the simulator's CA; every client shows a certificate from the same CA, whose
/// common name becomes its user name, and an ACL lets each endpoint publish only to its own measures
/// topic and read only its own commands topic. The simulator itself is the one privileged user.
final class SimBroker: Sendable {
    let port: Int
    let directory: String
    private let process: Mutex<TetheredProcess?>
    private let host: String

    /// The simulator's own client certificate's common name: the ACL's privileged user.
    static let simulatorUser = "agrirouter-sim"

    var logPath: String { directory + "/broker.log" }

    init(host: String, authority: CertificateAuthority, serverCertificatePEM: String, serverKeyPEM: String) throws {
        let directory = try Self.temporaryDirectory()
        self.directory = directory
        self.host = host
        port = try Self.freePort(host: host)
        let files: [(String, String)] = [
            ("ca.pem", authority.certificatePEM), ("server.pem", serverCertificatePEM), ("server.key", serverKeyPEM),
            (
                "acl",
                """
                user \(Self.simulatorUser)
                topic readwrite #

                pattern write measures/%u
                pattern read commands/%u

                """
            ),
            (
                "mosquitto.conf",
                """
                persistence false
                log_dest stderr
                log_type error
                log_type warning
                log_type notice
                log_type information
                log_type debug
                connection_messages true
                user \(Self.currentUser())
                listener \(port) \(host)
                cafile \(directory)/ca.pem
                certfile \(directory)/server.pem
                keyfile \(directory)/server.key
                require_certificate true
                use_identity_as_username true
                allow_anonymous false
                acl_file \(directory)/acl

                """
            ),
        ]
        for (name, text) in files {
            guard
                FileManager.default.createFile(
                    atPath: directory + "/" + name, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
            else {
                throw SimBrokerError.cannotStart("cannot write \(name) in \(directory)")
            }
        }
        process = Mutex(nil)
    }

    /// mosquitto switches to the configured user when started as root: name the user it already is.
    private static func currentUser() -> String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return "root" }
        return String(cString: name)
    }

    private static func temporaryDirectory() throws -> String {
        var template = Array((NSTemporaryDirectory() + "/agrirouter-sim-broker-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw SimBrokerError.cannotStart("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    /// A port the kernel had free a moment ago. mosquitto cannot be told to pick one and report it.
    private static func freePort(host: String) throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw SimBrokerError.cannotStart("no socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, host, &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw SimBrokerError.cannotStart("cannot find a free port on \(host)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Starts mosquitto and waits (at most 10 s) until its port takes connections. It is tethered
    /// to this process: if the simulator dies without `stop`, the kernel kills the broker.
    func start() async throws {
        let child: TetheredProcess
        do {
            child = try await TetheredProcess.start(
                executable: "/usr/sbin/mosquitto", arguments: ["-c", directory + "/mosquitto.conf"],
                environment: ProcessInfo.processInfo.environment, outputPath: logPath, appending: true,
                threadName: "agrirouter-sim.broker-reaper")
        } catch {
            throw SimBrokerError.cannotStart("cannot run /usr/sbin/mosquitto (install Debian's mosquitto): \(error)")
        }
        process.withLock { $0 = child }
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, !child.hasExited {
            if Self.accepts(host: host, port: port) { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
        let tail = (try? String(contentsOfFile: logPath, encoding: .utf8))?.suffix(400) ?? ""
        await stop()
        throw SimBrokerError.cannotStart("mosquitto did not listen on \(host):\(port): \(tail)")
    }

    private static func accepts(host: String, port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Stops mosquitto and waits (at most 10 s) for it: every client's connection drops at once.
    /// Killed, not asked: it keeps nothing (persistence is off).
    func stop() async {
        guard
            let child = process.withLock({ process in
                defer { process = nil }
                return process
            })
        else { return }
        _ = await child.kill(within: 10)
    }

    /// Removes the directory, keys and all.
    func remove() async {
        await stop()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

enum SimBrokerError: Error, CustomStringConvertible {
    case cannotStart(String)

    var description: String {
        switch self {
        case .cannotStart(let reason): return "the local MQTT broker could not start: \(reason)"
        }
    }
}
