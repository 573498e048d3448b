import Foundation

/// A candump recording read from a file line by line, in memory that does not grow with the file:
/// a 64 KiB buffer and the first `CandumpLog.longestLine` bytes of the line being read. A recording
/// of a day on a busy bus is a gigabyte; a line of many megabytes (a damaged or wrong file) is
/// skipped as it streams past, never held or trimmed.
///
/// Only a regular file is opened: a FIFO's open waits for a writer for ever, a device such as
/// /dev/zero never ends, and opening some devices does something (a watchdog starts counting).
/// A file that holds no CAN frame in its first `judgedLines` lines or `judgedBytes` bytes is called
/// what it is, not a candump log, instead of being read to its end.
public enum CandumpFile {
    /// Lines that are not frames, before the first frame, after which a file is no candump log.
    public static let judgedLines = 1000
    /// Bytes read before the first frame after which a file is no candump log: room for thousands
    /// of candump lines, and what ends the reading of a file with no line break at all.
    public static let judgedBytes = 1 << 20
    static let chunk = 64 << 10

    /// What is kept of the frames read.
    public enum Keeping: Sendable, Equatable {
        /// None: each goes to the caller's closure only (`agrigps bus` counts them).
        case none
        /// Every frame, up to this many: more is `CandumpFileError.tooManyFrames`.
        case atMost(Int)
    }

    /// Reads `path` to its end, handing each frame to `each` as it is read; the log's `frames` holds
    /// those `keeping` asks for.
    public static func read(_ path: String, keeping: Keeping = .none, each: (CANFrame) -> Void = { _ in })
        throws(CandumpFileError) -> CandumpLog
    {
        let descriptor = try open(path)
        defer { close(descriptor) }
        var log = CandumpLog()
        let buffer = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: chunk)
        defer { buffer.deallocate() }
        // The current line's first bytes when it is split over reads, and its whole length so far.
        let held = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: CandumpLog.longestLine)
        defer { held.deallocate() }
        var heldCount = 0
        var lineLength = 0
        var bytesRead = 0

        func take(_ prefix: UnsafeBufferPointer<UInt8>, length: Int) throws(CandumpFileError) {
            if let frame = log.take(line: prefix, length: length) {
                each(frame)
                if case .atMost(let most) = keeping {
                    guard log.frames.count < most else { throw .tooManyFrames(path: path, limit: most) }
                    log.frames.append(frame)
                }
            }
            if log.readLines == 0 && log.unreadableLines >= judgedLines {
                throw .notCandump(path: path, judged: "in its first \(judgedLines) lines", problem: log.firstProblem)
            }
        }

        func hold(_ start: UnsafePointer<UInt8>, count: Int) {
            let kept = min(count, held.count - heldCount)
            if kept > 0 { (held.baseAddress! + heldCount).update(from: start, count: kept) }
            heldCount += kept
            lineLength += count
        }

        while true {
            let count = try readChunk(descriptor, into: buffer, path: path)
            if count == 0 { break }
            bytesRead += count
            let base = UnsafePointer(buffer.baseAddress!)
            var start = 0
            while start < count {
                guard let found = memchr(base + start, 0x0A, count - start) else {
                    hold(base + start, count: count - start)
                    break
                }
                let end = UnsafeRawPointer(found) - UnsafeRawPointer(base)
                if lineLength == 0 {
                    // The whole line is in the buffer: no copy.
                    try take(
                        UnsafeBufferPointer(start: base + start, count: min(end - start, CandumpLog.longestLine)),
                        length: end - start)
                } else {
                    hold(base + start, count: end - start)
                    try take(UnsafeBufferPointer(start: held.baseAddress!, count: heldCount), length: lineLength)
                    heldCount = 0
                    lineLength = 0
                }
                start = end + 1
            }
            if log.readLines == 0 && bytesRead >= judgedBytes {
                throw .notCandump(
                    path: path, judged: "in its first \(judgedBytes >> 20) MiB", problem: log.firstProblem)
            }
        }
        if lineLength > 0 {
            try take(UnsafeBufferPointer(start: held.baseAddress!, count: heldCount), length: lineLength)
        }
        if log.readLines == 0 && log.unreadableLines > 0 {
            throw .notCandump(path: path, judged: "in it", problem: log.firstProblem)
        }
        return log
    }

    /// Whether the file starts as a candump recording: more frames than other lines in its first
    /// 4 KiB. False for anything but a regular file, which is never opened.
    public static func startsAsCandump(_ path: String) -> Bool {
        guard let descriptor = try? open(path) else { return false }
        defer { close(descriptor) }
        var head = [UInt8](repeating: 0, count: 4096)
        var count = 0
        while count < head.count {
            let got = head.withUnsafeMutableBufferPointer { buffer in
                Foundation.read(descriptor, buffer.baseAddress! + count, buffer.count - count)
            }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { break }
            count += got
        }
        // The last line of a full head may be cut: only whole lines count.
        let whole = count < head.count ? count : (head[..<count].lastIndex(of: 0x0A) ?? 0)
        var log = CandumpLog()
        head.withUnsafeBufferPointer { bytes in
            var start = 0
            while start < whole {
                let end = bytes[start..<whole].firstIndex(of: 0x0A) ?? whole
                let line = UnsafeBufferPointer(rebasing: bytes[start..<end])
                _ = log.take(
                    line: UnsafeBufferPointer(rebasing: line.prefix(CandumpLog.longestLine)), length: line.count)
                start = end + 1
            }
        }
        return log.framesRead > 0 && log.framesRead >= log.unreadableLines
    }

    /// A descriptor of `path` if it is a regular file; anything else is refused before it is opened.
    static func open(_ path: String) throws(CandumpFileError) -> Int32 {
        var status = stat()
        guard stat(path, &status) == 0 else { throw .unreadable(path: path, code: errno) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw .notRegular(path: path, kind: kind(status.st_mode)) }
        // Without blocking, and checked again once open: the path may have been replaced meanwhile.
        let descriptor = Foundation.open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw .unreadable(path: path, code: errno) }
        guard fstat(descriptor, &status) == 0, status.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw .notRegular(path: path, kind: kind(status.st_mode))
        }
        return descriptor
    }

    static func readChunk(_ descriptor: Int32, into buffer: UnsafeMutableBufferPointer<UInt8>, path: String)
        throws(CandumpFileError) -> Int
    {
        while true {
            let count = Foundation.read(descriptor, buffer.baseAddress!, buffer.count)
            if count >= 0 { return count }
            if errno != EINTR { throw .unreadable(path: path, code: errno) }
        }
    }

    /// "a FIFO", as a person would name what the path is.
    static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        case S_IFDIR: return "a directory"
        case S_IFLNK: return "a symbolic link"
        default: return "something other than a file"
        }
    }
}

/// Why a candump recording could not be read. Each says what to give instead.
public enum CandumpFileError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `stat`, `open` or `read` failed with this errno.
    case unreadable(path: String, code: Int32)
    /// A FIFO, a device, a directory, a socket: `kind` says which.
    case notRegular(path: String, kind: String)
    /// No CAN frame where one was due; `judged` says how much was read ("in its first 1000 lines").
    case notCandump(path: String, judged: String, problem: String?)
    /// More frames than the caller keeps.
    case tooManyFrames(path: String, limit: Int)

    public var description: String {
        switch self {
        case .unreadable(let path, let code):
            return
                "cannot read \(path): \(String(cString: strerror(code))); give the path of a candump log file (candump -l writes one)"
        case .notRegular(let path, let kind):
            return "\(path) is \(kind), not a recording; give the path of a candump log file (candump -l writes one)"
        case .notCandump(let path, let judged, let problem):
            return "\(path) is not a candump log: no CAN frame \(judged)\(problem.map { " (\($0))" } ?? ""); "
                + "expected lines like `(1612345678.123456) can0 09F80102#...` as candump -l writes them, or `<0x09f80102> [8] 36 72 9a 16 02 1a b8 0d`"
        case .tooManyFrames(let path, let limit):
            return
                "\(path) holds more than \(limit) frames, more than a replay takes (over an hour at 250 frames a second); "
                + "replay a part of it, such as its first \(limit) lines: head -n \(limit) \(path) > part.log"
        }
    }

    /// The sysexits code a command gives for it.
    public var exitCode: Int32 {
        switch self {
        case .unreadable, .notRegular: return 66  // EX_NOINPUT
        case .notCandump, .tooManyFrames: return 65  // EX_DATAERR
        }
    }
}
