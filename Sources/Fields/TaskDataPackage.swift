import Foundation

/// Where a TaskData export lies: a zip archive, a folder, or TASKDATA.XML itself. Files that
/// TASKDATA.XML refers to (XFR, ISOXML v4's external files such as PFD00000.XML) are looked up
/// beside it, by name, ignoring case as the FAT-formatted sticks the exports travel on do.
public struct TaskDataPackage {
    public enum Kind: String, Sendable {
        case zip, folder, xml
    }

    public let kind: Kind
    /// What the import is called in the store: "file: " and the name the user gave.
    public let sourceName: String
    /// Where TASKDATA.XML was found, for messages.
    public let mainName: String
    private let limits: TaskDataLimits
    private let archive: ZipArchive?
    /// Zip entries, or files of the folder, by upper-cased name relative to TASKDATA.XML's folder.
    private let siblings: [String: String]
    private let directory: String?
    private var bytesRead = 0

    public init(path: String, limits: TaskDataLimits = TaskDataLimits()) throws(FieldsError) {
        self.limits = limits
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw FieldsError(
                .unreadable,
                "\(path) does not exist; give a TaskData zip, a folder with TASKDATA.XML, or TASKDATA.XML itself")
        }
        let full = (path as NSString).standardizingPath
        let base = (full as NSString).lastPathComponent
        // Every export's XML is called TASKDATA.XML: its folder tells one farm's from another's.
        let folder = ((full as NSString).deletingLastPathComponent as NSString).lastPathComponent
        sourceName =
            "file: "
            + (base.uppercased() == "TASKDATA.XML" && !isDirectory.boolValue && !folder.isEmpty && folder != "/"
                ? folder + "/" + base : base)
        if isDirectory.boolValue {
            kind = .folder
            archive = nil
            // The folder itself, or its TASKDATA folder, as an export unpacked from a zip has it.
            var found: String?
            for folder in [path, (path as NSString).appendingPathComponent("TASKDATA")] {
                if let name = Self.listing(folder).first(where: { $0.uppercased() == "TASKDATA.XML" }) {
                    found = (folder as NSString).appendingPathComponent(name)
                    break
                }
            }
            guard let found else {
                throw FieldsError(
                    .unreadable,
                    "\(path) has no TASKDATA.XML (nor TASKDATA/TASKDATA.XML); give the folder the farm software exported"
                )
            }
            directory = (found as NSString).deletingLastPathComponent
            mainName = found
        } else if Self.isZip(path) {
            kind = .zip
            let archive = try ZipArchive(path: path, limits: limits)
            self.archive = archive
            // TASKDATA/TASKDATA.XML as the standard has it, else the shallowest TASKDATA.XML anywhere.
            let candidates = archive.entries.filter {
                ($0.name as NSString).lastPathComponent.uppercased() == "TASKDATA.XML"
            }
            guard
                let main = candidates.first(where: { $0.name.uppercased() == "TASKDATA/TASKDATA.XML" })
                    ?? candidates.min(by: { $0.name.split(separator: "/").count < $1.name.split(separator: "/").count })
            else {
                throw FieldsError(.unreadable, "\(base) holds no TASKDATA.XML; it is not a TaskData export")
            }
            mainName = "\(base): \(main.name)"
            let folder = (main.name as NSString).deletingLastPathComponent
            var siblings: [String: String] = [:]
            for entry in archive.entries
            where (entry.name as NSString).deletingLastPathComponent.uppercased() == folder.uppercased() {
                siblings[(entry.name as NSString).lastPathComponent.uppercased()] = entry.name
            }
            self.siblings = siblings
            directory = nil
            return
        } else {
            kind = .xml
            archive = nil
            directory =
                (path as NSString).deletingLastPathComponent.isEmpty
                ? "." : (path as NSString).deletingLastPathComponent
            mainName = path
            siblings = Self.byUpperName(Self.listing(directory ?? "."))
            return
        }
        siblings = Self.byUpperName(Self.listing(directory ?? "."))
    }

    /// TASKDATA.XML's bytes.
    public mutating func main() throws(FieldsError) -> [UInt8] {
        if kind == .xml || kind == .folder { return try readFile(mainName) }
        guard let file = try sibling("TASKDATA.XML") else {
            throw FieldsError(.unreadable, "\(mainName) cannot be found again in the archive")
        }
        return file
    }

    /// A file beside TASKDATA.XML, by name in any case; nil if there is none.
    public mutating func sibling(_ name: String) throws(FieldsError) -> [UInt8]? {
        guard let actual = siblings[name.uppercased()] else { return nil }
        if let archive {
            guard let entry = archive.entry(named: actual) else { return nil }
            let remaining = limits.maximumTotalXMLBytes - bytesRead
            let bytes = try archive.contents(of: entry, limit: min(limits.maximumXMLBytes, max(0, remaining)))
            bytesRead += bytes.count
            return bytes
        }
        return try readFile(((directory ?? ".") as NSString).appendingPathComponent(actual))
    }

    private mutating func readFile(_ path: String) throws(FieldsError) -> [UInt8] {
        let limit = min(limits.maximumXMLBytes, max(0, limits.maximumTotalXMLBytes - bytesRead))
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw FieldsError(.unreadable, "cannot open \(path); check that it exists and can be read")
        }
        defer { try? handle.close() }
        // One byte past the cap tells a file over it from one exactly at it, without reading the rest.
        let data: Data
        do {
            data = try handle.read(upToCount: limit + 1) ?? Data()
        } catch {
            throw FieldsError(.unreadable, "cannot read \(path): \(error.localizedDescription)")
        }
        guard data.count <= limit else {
            throw FieldsError(
                .tooLarge,
                "\(path) is larger than the \(byteText(limit)) of XML read in one import; export fewer fields or without logged data"
            )
        }
        bytesRead += data.count
        return [UInt8](data)
    }

    private static func isZip(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let magic = (try? handle.read(upToCount: 4)) ?? Data()
        // A local header, or an empty archive's end record.
        return magic == Data([0x50, 0x4B, 0x03, 0x04]) || magic == Data([0x50, 0x4B, 0x05, 0x06])
    }

    private static func listing(_ folder: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
    }

    private static func byUpperName(_ names: [String]) -> [String: String] {
        Dictionary(names.map { ($0.uppercased(), $0) }, uniquingKeysWith: { first, _ in first })
    }
}

/// A byte count as a person reads it: whole MiB where it is one, else bytes.
func byteText(_ count: Int) -> String {
    count >= 1 << 20 && count % (1 << 20) == 0 ? "\(count >> 20) MiB" : "\(count) bytes"
}
