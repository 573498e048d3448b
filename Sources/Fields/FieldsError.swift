/// Why fields could not be read, imported or kept. Every description says what to do next; text
/// from the file (names, ids) is quoted as it came and made safe only where it is shown.
public struct FieldsError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The file, folder or archive could not be opened or read.
        case unreadable
        /// Not well-formed XML, or XML this reader refuses (a DOCTYPE, an entity).
        case malformedXML
        /// Larger than a cap: the XML, an archive entry (declared or inflated), points, nesting.
        case tooLarge
        /// A zip archive that is damaged, encrypted or of a kind not read.
        case archive
        /// Well-formed TaskData whose content is wrong: a coordinate out of range, say.
        case invalidData
        /// Nothing to import.
        case empty
        /// The store in the state directory failed.
        case store
        /// Stopped before it finished, for a shutdown: nothing changed, and it can be tried again.
        case interrupted
    }

    public var kind: Kind
    public var description: String

    public init(_ kind: Kind, _ description: String) {
        self.kind = kind
        self.description = description
    }

    /// The sysexits code a command gives for it.
    public var exitCode: Int32 {
        switch kind {
        case .unreadable: 66  // EX_NOINPUT
        case .malformedXML, .tooLarge, .archive, .invalidData, .empty: 65  // EX_DATAERR
        case .store: 74  // EX_IOERR
        case .interrupted: 75  // EX_TEMPFAIL
        }
    }
}

/// A place in a text file, for errors a person can find in an editor.
public struct TextPosition: Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var column: Int
    /// Bytes from the start of the file.
    public var offset: Int

    public var description: String { "line \(line), column \(column) (byte \(offset))" }
}

/// The caps that keep a hostile or broken export from taking the box's memory or time.
public struct TaskDataLimits: Sendable, Equatable {
    /// Bytes of one XML file (TASKDATA.XML or a file it refers to); an entry of a zip is inflated to no more.
    public var maximumXMLBytes = 32 << 20
    /// Bytes of XML read in one import, over every file: a farm's fields with a million points take
    /// about 50 MiB, and the bytes bound the time the reading takes.
    public var maximumTotalXMLBytes = 64 << 20
    /// Elements nested in one another (TaskData needs about eight).
    public var maximumDepth = 32
    /// Attributes of one element (the richest TaskData element has fewer than 20).
    public var maximumAttributes = 128
    /// Points of one polygon, over its rings: a boundary logged at 10 cm around a 1,000 ha field.
    public var maximumPointsPerPolygon = 200_000
    /// Points kept in one import, over every field and guidance line; with the partfields' cap, what
    /// bounds the cab view's map and the memory of an import.
    public var maximumPoints = 1_000_000
    /// Partfields in one import: thousands for the largest farm, never hundreds of thousands.
    public var maximumFields = 5_000
    /// Files a TASKDATA.XML may refer to (XFR elements).
    public var maximumExternalFiles = 10_000
    /// Entries in a zip's central directory.
    public var maximumArchiveEntries = 100_000

    public init() {}
}
