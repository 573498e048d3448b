import Foundation

/// The state directory's files as the daemon, the commands and the cab view open them.
///
/// Anything in the directory may have been replaced by something else: a FIFO, whose open blocks
/// for ever; a device; a symbolic link to a file elsewhere, which a write would go through. So no
/// file here is opened following links or waiting: what is not a regular file is refused with an
/// error that says so, before a byte is read or written.
///
/// Small files are written whole or not at all, with their mode set whatever the umask (0600 unless
/// said otherwise), and owned by whoever owns the directory when root writes them (the services run as
/// agrigps, the commands often as root).
public enum StateFile {
    /// Replaces `path` with `bytes`: a temporary file beside it, synced, renamed over, and the
    /// directory synced so that the rename survives a power cut. Throws the failing call's errno.
    public static func replace(_ path: String, with bytes: [UInt8], mode: mode_t = 0o600) throws(StateFileError) {
        let directory = (path as NSString).deletingLastPathComponent
        // A temporary name of its own (mkstemp), so that two writers of one file (the daemon and a
        // command run as root) never write into or remove each other's.
        var template = Array((path + temporaryInfix + "XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else {
            throw StateFileError(path: path + temporaryInfix + "XXXXXX", call: "mkstemp", code: errno)
        }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        let temporary = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var failure: StateFileError?
        var owner = stat()
        if geteuid() == 0, stat(directory, &owner) == 0, fchown(descriptor, owner.st_uid, owner.st_gid) != 0 {
            failure = StateFileError(path: temporary, call: "fchown", code: errno)
        }
        if failure == nil, fchmod(descriptor, mode) != 0 {
            failure = StateFileError(path: temporary, call: "fchmod", code: errno)
        }
        var offset = 0
        while failure == nil, offset < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + offset, $0.count - offset) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                failure = StateFileError(path: temporary, call: "write", code: count < 0 ? errno : EIO)
                break
            }
            offset += count
        }
        if failure == nil, fsync(descriptor) != 0 {
            failure = StateFileError(path: temporary, call: "fsync", code: errno)
        }
        close(descriptor)
        if failure == nil, rename(temporary, path) != 0 {
            failure = StateFileError(path: path, call: "rename", code: errno)
        }
        if let failure {
            unlink(temporary)
            throw failure
        }
        // The file itself is whole and in place by now; a directory that cannot be synced leaves
        // only the rename's durability to the file system's next commit.
        try? syncDirectory(directory)
        removeLeftovers(of: path)
    }

    /// Syncs `directory`, so that the renames and new names in it survive a power cut.
    public static func syncDirectory(_ directory: String) throws(StateFileError) {
        let folder = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { throw StateFileError(path: directory, call: "open", code: errno) }
        defer { close(folder) }
        guard fsync(folder) == 0 else { throw StateFileError(path: directory, call: "fsync", code: errno) }
    }

    /// Between a file's name and mkstemp's six characters: a name of agrigps's own, so that nothing
    /// else in the directory (an `endpoint.json.backup` made by hand) is ever taken for a leftover.
    static let temporaryInfix = ".agrigps-new-"

    /// A writer killed between its temporary file and the rename leaves `NAME.agrigps-new-XXXXXX`
    /// behind, which nothing else would ever remove: the next replace of NAME does, once it is a
    /// minute old (a younger one may be another writer's, about to be renamed).
    static func removeLeftovers(of path: String, olderThan age: Double = 60) {
        let directory = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + temporaryInfix
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.isEmpty ? "." : directory)
        else { return }
        let now = Date().timeIntervalSince1970
        for name in names where name.hasPrefix(prefix) && name.utf8.count == prefix.utf8.count + 6 {
            let suffix = name.utf8.suffix(6)
            guard
                suffix.allSatisfy({
                    (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                })
            else { continue }
            let leftover = (directory as NSString).appendingPathComponent(name)
            var status = stat()
            guard lstat(leftover, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
                now - Double(status.st_mtim.tv_sec) > age
            else { continue }
            unlink(leftover)
        }
    }

    /// Throws unless `path` is missing or a regular file: a symbolic link, a FIFO, a socket, a device
    /// or a directory is refused. For files another library opens (SQLite), checked first.
    public static func checkKind(_ path: String) throws(StateFileError) {
        var status = stat()
        guard lstat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw StateFileError(path: path, call: "lstat", code: errno)
        }
        if status.st_mode & S_IFMT == S_IFLNK { throw StateFileError(path: path, call: "open", code: ELOOP) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw StateFileError(path: path, call: "open", code: EINVAL, notRegular: true)
        }
    }

    /// A SQLite database and the files SQLite keeps beside it: each must be missing or regular.
    public static func checkDatabase(_ path: String) throws(StateFileError) {
        for file in [path, path + "-wal", path + "-shm", path + "-journal"] {
            try checkKind(file)
        }
    }

    /// Opens `path` for writing in place, creating it with `mode`: never through a link, never
    /// waiting on a FIFO, and only if it is a regular file. The caller closes the descriptor.
    public static func openForWriting(_ path: String, mode: mode_t) throws(StateFileError) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode)
        // ENXIO: a FIFO that nobody reads, which a blocking open would have waited on for ever.
        guard descriptor >= 0 else {
            throw StateFileError(path: path, call: "open", code: errno, notRegular: errno == ENXIO)
        }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let code = errno
            close(descriptor)
            throw StateFileError(path: path, call: "fstat", code: code)
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw StateFileError(path: path, call: "open", code: EINVAL, notRegular: true)
        }
        // Back to blocking writes: a regular file never waits anyway, and this keeps the flags plain.
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return descriptor
    }

    /// The file's bytes if it is a regular file of at most `limit` bytes; nil if it does not exist.
    /// A FIFO, a device, a symbolic link or a larger file is an error: opened without blocking and
    /// without following links, it is refused before anything is read from it. A file a person
    /// names (a recording) may be reached through links: `followingLinks`.
    public static func read(_ path: String, limit: Int, followingLinks: Bool = false) throws(StateFileError) -> [UInt8]?
    {
        let descriptor = open(path, O_RDONLY | (followingLinks ? 0 : O_NOFOLLOW) | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw StateFileError(path: path, call: "open", code: errno)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw StateFileError(path: path, call: "fstat", code: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw StateFileError(path: path, call: "open", code: EINVAL, notRegular: true)
        }
        guard status.st_size <= off_t(limit) else { throw StateFileError(path: path, call: "read", code: EFBIG) }
        var bytes = [UInt8](repeating: 0, count: Int(status.st_size))
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeMutableBytes {
                Glibc.read(descriptor, $0.baseAddress! + offset, $0.count - offset)
            }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else { throw StateFileError(path: path, call: "read", code: errno) }
            if count == 0 { break }
            offset += count
        }
        return Array(bytes.prefix(offset))
    }
}

/// A state file that could not be opened, read or written; `code` is the failing call's errno.
public struct StateFileError: Error, CustomStringConvertible, Sendable, Equatable {
    public var path: String
    public var call: String
    public var code: Int32
    public var notRegular = false

    public init(path: String, call: String, code: Int32, notRegular: Bool = false) {
        self.path = path
        self.call = call
        self.code = code
        self.notRegular = notRegular
    }

    public var description: String {
        if notRegular { return "\(path) is not a regular file; remove it and let agrigps make it anew" }
        if code == ELOOP { return "\(path) is a symbolic link; remove it and let agrigps make it anew" }
        return "cannot \(call) \(path): \(String(cString: strerror(code)))"
    }
}
