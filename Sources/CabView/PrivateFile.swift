import Foundation

/// The cab view's own small files in the state directory (the password hash, the failed-login
/// record): written whole or not at all, mode 0600 whatever the umask, never through a symbolic link,
/// and owned by whoever owns the directory when root writes them (the service runs as agrigps).
enum PrivateFile {
    /// Replaces `path` with `bytes`: a temporary file beside it, synced, renamed over, and the
    /// directory synced so that the rename survives a power cut. Throws the failing call's errno.
    static func replace(_ path: String, with bytes: [UInt8]) throws(PrivateFileError) {
        let directory = (path as NSString).deletingLastPathComponent
        let temporary = path + ".new"
        unlink(temporary)
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw PrivateFileError(path: temporary, call: "open", code: errno) }
        var failure: PrivateFileError?
        var owner = stat()
        if geteuid() == 0, stat(directory, &owner) == 0, fchown(descriptor, owner.st_uid, owner.st_gid) != 0 {
            failure = PrivateFileError(path: temporary, call: "fchown", code: errno)
        }
        if failure == nil, fchmod(descriptor, 0o600) != 0 { failure = PrivateFileError(path: temporary, call: "fchmod", code: errno) }
        var offset = 0
        while failure == nil, offset < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { failure = PrivateFileError(path: temporary, call: "write", code: count < 0 ? errno : EIO); break }
            offset += count
        }
        if failure == nil, fsync(descriptor) != 0 { failure = PrivateFileError(path: temporary, call: "fsync", code: errno) }
        close(descriptor)
        if failure == nil, rename(temporary, path) != 0 { failure = PrivateFileError(path: path, call: "rename", code: errno) }
        if let failure {
            unlink(temporary)
            throw failure
        }
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folder >= 0 {
            _ = fsync(folder)
            close(folder)
        }
    }

    /// The file's bytes if it is a regular file of at most `limit` bytes; nil if it does not exist.
    /// A FIFO, a device, a symbolic link or a larger file is an error: opened without blocking and
    /// without following links, it is refused before anything is read from it.
    static func read(_ path: String, limit: Int) throws(PrivateFileError) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw PrivateFileError(path: path, call: "open", code: errno)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw PrivateFileError(path: path, call: "fstat", code: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw PrivateFileError(path: path, call: "open", code: EINVAL, notRegular: true) }
        guard status.st_size <= off_t(limit) else { throw PrivateFileError(path: path, call: "read", code: EFBIG) }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw PrivateFileError(path: path, call: "read", code: errno) }
            if count == 0 { break }
            offset += count
        }
        return Array(bytes.prefix(offset))
    }
}

struct PrivateFileError: Error, CustomStringConvertible {
    var path: String
    var call: String
    var code: Int32
    var notRegular = false

    var description: String {
        if notRegular { return "\(path) is not a regular file; remove it and let agrigps make it anew" }
        if code == ELOOP { return "\(path) is a symbolic link; remove it and let agrigps make it anew" }
        return "cannot \(call) \(path): \(String(cString: strerror(code)))"
    }
}
