#if canImport(Glibc)
import Glibc
#endif

/// A file's inode, size and modification time: equal while the file is the same file with the same
/// content as far as a reader polling it can tell. A file replaced by a rename gets another inode,
/// one written in place another time or size.
///
/// Numbers, not text: the cab view takes a dozen of them at every sample.
public struct FileStamp: Equatable, Sendable {
    private var inode: UInt64
    private var size: Int64
    private var seconds: Int64
    private var nanoseconds: Int64

    /// The stamp of a path that does not exist (or cannot be looked at).
    public static let absent = FileStamp(inode: 0, size: -1, seconds: 0, nanoseconds: 0)

    private init(inode: UInt64, size: Int64, seconds: Int64, nanoseconds: Int64) {
        (self.inode, self.size, self.seconds, self.nanoseconds) = (inode, size, seconds, nanoseconds)
    }

    public static func of(_ path: String) -> FileStamp {
        var info = stat()
        guard stat(path, &info) == 0 else { return absent }
        return FileStamp(
            inode: UInt64(truncatingIfNeeded: info.st_ino), size: Int64(truncatingIfNeeded: info.st_size),
            seconds: Int64(truncatingIfNeeded: info.st_mtim.tv_sec),
            nanoseconds: Int64(truncatingIfNeeded: info.st_mtim.tv_nsec))
    }
}
