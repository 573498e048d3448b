import CZlib
import Foundation

/// A zip archive read from its central directory, as farm software hands TaskData over: entries
/// stored or deflated, nothing else. Entries are read on demand, through a bounded inflater, so an
/// archive's size says nothing about what it may cost.
///
/// A zip bomb is refused twice over: an entry whose declared size exceeds the cap is refused before
/// anything is inflated, and inflation stops as soon as the output passes the cap or the declared
/// size, whichever is smaller, since the declared size is only what the archive claims.
struct ZipArchive {
    struct Entry: Sendable, Equatable {
        var name: String
        var method: UInt16
        var flags: UInt16
        var crc: UInt32
        var compressedSize: UInt64
        var uncompressedSize: UInt64
        var localHeaderOffset: UInt64
    }

    let path: String
    let entries: [Entry]
    /// Each name's first entry, so that ten thousand external files are found without ten thousand scans.
    private let firstByName: [String: Int]
    private let handle: FileHandle
    private let fileSize: UInt64

    init(path: String, limits: TaskDataLimits) throws(FieldsError) {
        self.path = path
        let name = (path as NSString).lastPathComponent
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw FieldsError(.unreadable, "cannot open \(path); check the path and that it can be read")
        }
        self.handle = handle
        let size: UInt64
        do {
            size = try handle.seekToEnd()
        } catch {
            throw FieldsError(.unreadable, "cannot read \(path): \(error.localizedDescription)")
        }
        fileSize = size
        // The end-of-central-directory record: 22 bytes, then a comment of up to 65,535.
        let tailLength = min(size, 22 + 65_535)
        let tail = try Self.read(handle, at: size - tailLength, count: Int(tailLength), path: path)
        guard tail.count >= 22,
            let end = stride(from: tail.count - 22, through: 0, by: -1).first(where: {
                Self.u32(tail, $0) == 0x0605_4B50
            })
        else {
            throw FieldsError(
                .archive,
                "\(name) is not a zip archive (no end of central directory); give the zip as exported, a folder, or TASKDATA.XML"
            )
        }
        let count = Int(Self.u16(tail, end + 10))
        let directorySize = UInt64(Self.u32(tail, end + 12))
        let directoryOffset = UInt64(Self.u32(tail, end + 16))
        if count == 0xFFFF || directorySize == 0xFFFF_FFFF || directoryOffset == 0xFFFF_FFFF {
            throw FieldsError(
                .archive,
                "\(name) is a ZIP64 archive, which is not read; TaskData for a few fields is far smaller, so export it without logged data"
            )
        }
        guard count <= limits.maximumArchiveEntries else {
            throw FieldsError(
                .tooLarge, "\(name) lists \(count) entries, more than the \(limits.maximumArchiveEntries) read")
        }
        guard directorySize <= 64 << 20 else {
            throw FieldsError(
                .tooLarge, "\(name) has a central directory of \(directorySize) bytes, more than the 64 MiB read")
        }
        guard directoryOffset + directorySize <= size else {
            throw FieldsError(
                .archive, "\(name) is damaged: its central directory lies past the end of the file (cut short?)")
        }
        let directory = try Self.read(handle, at: directoryOffset, count: Int(directorySize), path: path)
        var entries: [Entry] = []
        var cursor = 0
        for number in 0..<count {
            guard cursor + 46 <= directory.count, Self.u32(directory, cursor) == 0x0201_4B50 else {
                throw FieldsError(
                    .archive,
                    "\(name) is damaged: central directory entry \(number + 1) of \(count) is not where it should be")
            }
            let nameLength = Int(Self.u16(directory, cursor + 28))
            let extraLength = Int(Self.u16(directory, cursor + 30))
            let commentLength = Int(Self.u16(directory, cursor + 32))
            guard cursor + 46 + nameLength <= directory.count else {
                throw FieldsError(
                    .archive, "\(name) is damaged: central directory entry \(number + 1) runs past the directory")
            }
            let flags = Self.u16(directory, cursor + 8)
            // Bit 11: the name is UTF-8; otherwise it is CP437, which for the ASCII names of TaskData is the same.
            let entryName = String(decoding: directory[(cursor + 46)..<(cursor + 46 + nameLength)], as: UTF8.self)
            entries.append(
                Entry(
                    name: entryName, method: Self.u16(directory, cursor + 10), flags: flags,
                    crc: Self.u32(directory, cursor + 16),
                    compressedSize: UInt64(Self.u32(directory, cursor + 20)),
                    uncompressedSize: UInt64(Self.u32(directory, cursor + 24)),
                    localHeaderOffset: UInt64(Self.u32(directory, cursor + 42))))
            cursor += 46 + nameLength + extraLength + commentLength
        }
        self.entries = entries
        var firstByName: [String: Int] = [:]
        for (index, entry) in entries.enumerated() where firstByName[entry.name] == nil {
            firstByName[entry.name] = index
        }
        self.firstByName = firstByName
    }

    /// The first entry of that exact name, if any.
    func entry(named name: String) -> Entry? {
        firstByName[name].map { entries[$0] }
    }

    /// The entry's bytes, inflated and checked against its CRC-32; refused past `limit` bytes.
    func contents(of entry: Entry, limit: Int) throws(FieldsError) -> [UInt8] {
        let label = "\((path as NSString).lastPathComponent): \(entry.name)"
        guard entry.flags & 1 == 0 else {
            throw FieldsError(.archive, "\(label) is encrypted; export it without a password")
        }
        guard entry.uncompressedSize <= UInt64(limit) else {
            throw FieldsError(
                .tooLarge,
                "\(label) declares \(entry.uncompressedSize) bytes, more than the \(byteText(limit)) read; refused unopened"
            )
        }
        // Deflate never needs much more room than the data it holds; a larger entry is not worth reading.
        let compressedLimit = entry.method == 0 ? entry.uncompressedSize : UInt64(limit) + UInt64(limit / 64) + 65_536
        guard entry.compressedSize <= compressedLimit else {
            throw FieldsError(
                .tooLarge,
                "\(label) takes \(entry.compressedSize) bytes in the archive, more than it could need for the \(entry.uncompressedSize) it declares; refused unopened"
            )
        }
        let header = try Self.read(handle, at: entry.localHeaderOffset, count: 30, path: path)
        guard header.count == 30, Self.u32(header, 0) == 0x0403_4B50 else {
            throw FieldsError(.archive, "\(label): the archive is damaged (no local header where the directory says)")
        }
        let dataOffset = entry.localHeaderOffset + 30 + UInt64(Self.u16(header, 26)) + UInt64(Self.u16(header, 28))
        guard dataOffset + entry.compressedSize <= fileSize else {
            throw FieldsError(.archive, "\(label): the archive is cut short (the entry runs past the end of the file)")
        }
        let compressed = try Self.read(handle, at: dataOffset, count: Int(entry.compressedSize), path: path)
        let bytes: [UInt8]
        switch entry.method {
        case 0:
            bytes = compressed
        case 8:
            // The declared size is the first bound; the cap stands behind it in case it lies.
            bytes = try Self.inflate(
                compressed, limit: min(limit, Int(entry.uncompressedSize)), cap: limit, label: label)
        default:
            throw FieldsError(
                .archive,
                "\(label) is compressed with method \(entry.method); only stored and deflate are read, so zip it again with an ordinary tool"
            )
        }
        guard bytes.count == Int(entry.uncompressedSize) else {
            throw FieldsError(
                .archive,
                "\(label) holds \(bytes.count) bytes where the archive declares \(entry.uncompressedSize); the archive is damaged"
            )
        }
        let crc = bytes.withUnsafeBufferPointer { UInt32(truncatingIfNeeded: crc32(0, $0.baseAddress, uInt($0.count))) }
        guard crc == entry.crc else {
            throw FieldsError(.archive, "\(label) fails its CRC-32 check; the archive is damaged, copy it again")
        }
        return bytes
    }

    /// Raw deflate into at most `limit` bytes. Output beyond `limit` is an error: past the declared
    /// size the archive lies (or is damaged), and past `cap` it is a bomb either way.
    static func inflate(_ input: [UInt8], limit: Int, cap: Int, label: String) throws(FieldsError) -> [UInt8] {
        var stream = z_stream()
        guard agrigps_inflate_init_raw(&stream) == Z_OK else {
            throw FieldsError(.archive, "\(label): zlib could not start inflating")
        }
        defer { inflateEnd(&stream) }
        var output = [UInt8]()
        output.reserveCapacity(min(limit, 1 << 20) + 1)
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var input = input
        let status: Int32 = input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            while true {
                let result = chunk.withUnsafeMutableBufferPointer { target in
                    stream.next_out = target.baseAddress
                    stream.avail_out = uInt(target.count)
                    return CZlib.inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                // Checked before it is kept: memory never holds more than the bound and one chunk.
                if output.count + produced > limit { return Z_MEM_ERROR }
                output.append(contentsOf: chunk[0..<produced])
                if result == Z_STREAM_END { return Z_STREAM_END }
                if result != Z_OK { return result }
                if produced == 0, stream.avail_in == 0 { return Z_BUF_ERROR }
            }
        }
        switch status {
        case Z_STREAM_END:
            return output
        case Z_MEM_ERROR:
            if limit < cap {
                throw FieldsError(
                    .tooLarge,
                    "\(label) inflates to more than the \(limit) bytes the archive declares; it is damaged or a zip bomb, refused"
                )
            }
            throw FieldsError(.tooLarge, "\(label) inflates to more than \(byteText(cap)); refused as a zip bomb")
        default:
            throw FieldsError(
                .archive, "\(label) cannot be inflated (zlib error \(status)); the archive is damaged, copy it again")
        }
    }

    private static func read(_ handle: FileHandle, at offset: UInt64, count: Int, path: String) throws(FieldsError)
        -> [UInt8]
    {
        do {
            try handle.seek(toOffset: offset)
            return [UInt8](try handle.read(upToCount: count) ?? Data())
        } catch {
            throw FieldsError(.unreadable, "cannot read \(path): \(error.localizedDescription)")
        }
    }

    static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 {
        UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
    }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }
}
