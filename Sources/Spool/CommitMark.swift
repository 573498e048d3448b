import Glibc
import StateFiles

/// The highest row id the spool has committed, and how many rows were still owed to agrirouter then,
/// noted beside it (`spool.sqlite-mark`) after every commit that adds or settles rows.
///
/// SQLite keeps the newest commits in its write-ahead log until a checkpoint copies them into the
/// database. A log deleted, cut short or with a damaged frame takes those commits with it, and
/// SQLite opens what is left without a word. A spool that reopens below its mark knows which ids
/// went, and that at most as many of them as were owed had not been acknowledged: exact when all of
/// them were waiting, as on a box offline, and never the whole history of a spool deleted outright.
///
/// Twenty-four bytes written in place, without an fsync of their own: a crashed or killed process
/// leaves them in the page cache, and the commit's own fsync already paid for the disk. A check
/// word makes a torn or garbled note read as none, never as wrong numbers.
final class CommitMark {
    struct Note: Equatable {
        var highestID: Int64
        var owed: Int64
    }

    let path: String
    private let descriptor: Int32

    static let size = 24
    /// The largest id read back as one: SQLite's rowids and the spool's note stay below 2^53.
    static let largestID: Int64 = 9_007_199_254_740_991

    /// Opens the note for writing, creating it if needed.
    init(path: String) throws(StateFileError) {
        self.path = path
        descriptor = try StateFile.openForWriting(path, mode: 0o600)
    }

    deinit {
        Glibc.close(descriptor)
    }

    /// The note in the file at `path`; nil when there is none, or nothing valid.
    static func read(_ path: String) -> Note? {
        guard let bytes = try? StateFile.read(path, limit: 4096), bytes.count == size else { return nil }
        let (id, owed) = (Int64(littleEndianBytes: bytes[0..<8]), Int64(littleEndianBytes: bytes[8..<16]))
        guard (0...largestID).contains(id), (0...id).contains(owed),
            Int64(littleEndianBytes: bytes[16..<24]) == check(id, owed)
        else { return nil }
        return Note(highestID: id, owed: owed)
    }

    /// Writes `note`; false when the write failed (the spool then says so, once).
    func write(_ note: Note) -> Bool {
        var bytes = [UInt8](repeating: 0, count: Self.size)
        for (offset, value) in [(0, note.highestID), (8, note.owed), (16, Self.check(note.highestID, note.owed))] {
            for index in 0..<8 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> (8 * index)) }
        }
        return bytes.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, Self.size, 0) } == Self.size
    }

    private static func check(_ id: Int64, _ owed: Int64) -> Int64 {
        ~(id ^ (owed &* 0x9E37_79B9))
    }
}

extension Int64 {
    /// Eight bytes, least significant first.
    init(littleEndianBytes bytes: ArraySlice<UInt8>) {
        self = bytes.reversed().reduce(0) { $0 << 8 | Int64($1) }
    }
}
