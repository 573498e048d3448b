import Foundation
import StateFiles

/// One daemon per state directory: two would append to one spool and publish the same batches
/// twice. An advisory lock (flock) on `agrigps.lock` in the directory, held for the life of the
/// process; the kernel drops it however the process ends, so a crash never leaves it stale.
public struct StateDirectoryLock: ~Copyable {
    public struct Held: Error, CustomStringConvertible {
        public var directory: String
        public var holder: String?
        public var description: String {
            "another 'agrigps run'\(holder.map { " (pid \($0))" } ?? "") already uses the state directory \(directory); "
                + "stop it first, or give this one its own --state-dir"
        }
    }

    public struct Failed: Error, CustomStringConvertible {
        public var path: String
        public var errno: Int32
        public var description: String {
            "cannot lock \(path): \(String(cString: strerror(errno))); check that the state directory exists and is writable"
        }
    }

    private let descriptor: Int32

    /// Takes the lock or says who holds it. Creates the directory if needed.
    public init(directory: String) throws {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/agrigps.lock"
        // Not through a link, not waiting on a FIFO; and only a regular file is taken as the lock.
        let descriptor = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw Failed(path: path, errno: errno) }
        var status = stat()
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw Failed(path: path, errno: EINVAL)
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &buffer, buffer.count, 0)
            close(descriptor)
            guard code == EWOULDBLOCK else { throw Failed(path: path, errno: code) }
            let holder = String(decoding: buffer.prefix(max(0, count)), as: UTF8.self).trimmingCharacters(
                in: .whitespacesAndNewlines)
            throw Held(directory: directory, holder: Int32(holder).map(String.init))
        }
        // Who holds it, for the next one's message; the lock, not this text, is what counts.
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }
}
