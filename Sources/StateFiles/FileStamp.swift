#if canImport(Glibc)
import Glibc
#endif

/// A file's inode, size and modification time as one string: equal while the file is the same file
/// with the same content as far as a reader polling it can tell. A file replaced by a rename gets
/// another inode, one written in place another time or size.
public enum FileStamp {
    /// The stamp of a path that does not exist (or cannot be looked at).
    public static let absent = "-"

    public static func of(_ path: String) -> String {
        var info = stat()
        guard stat(path, &info) == 0 else { return absent }
        return "\(info.st_ino):\(info.st_size):\(info.st_mtim.tv_sec).\(info.st_mtim.tv_nsec)"
    }
}
