import ArgumentParser
import Bounds
import Clocks
import CommandSupport
import Fields
import Foundation
import JSONText
import StateView

struct FieldsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fields",
        abstract: "The farm's fields: list them, import them from farm software (ISOXML TaskData), remove them.",
        discussion: """
            Fields come from the farm software as ISO 11783-10 TaskData (ISOXML, versions 3 and 4): \
            export the fields (partfields) with their boundaries, usually as a zip, and give it to \
            'agrigps fields import'. They are kept in STATE-DIR/fields.sqlite. Areas are computed from \
            the boundaries on the WGS84 ellipsoid, less water, buildings, roads and obstacles inside them.
            """,
        subcommands: [FieldsList.self, FieldsImport.self, FieldsRemove.self],
        defaultSubcommand: FieldsList.self
    )
}

extension StateDirectoryOption {
    var fieldsPath: String { resolved + "/fields.sqlite" }
}

struct FieldsList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the fields: id, name, farm, area in hectares, boundary points, source (the default).",
        discussion: """
            ID is what 'agrigps fields remove' takes. AREA is computed from the boundary; the area the \
            farm software stated is in the JSON as declared_area_ha. SOURCE is the file the field was \
            imported from. --json prints one object with a "fields" array; a missing farm or customer is null.
            """
    )

    @Flag(help: "Print JSON for scripts.")
    var json = false

    @OptionGroup var state: StateDirectoryOption

    func run() async throws {
        let stored: [StoredField]
        do {
            stored = try await FieldStore(path: state.fieldsPath).fields()
        } catch {
            throw CommandFailure(description: error.description, exitCode: error.exitCode)
        }
        if json {
            do {
                Output.line(try JSONWriter.encode(FieldsDocument(stored)))
            } catch {
                throw CommandFailure(
                    description:
                        "the stored fields could not be written as JSON; run 'agrigps fields' for the text view",
                    exitCode: 70)
            }
            return
        }
        guard !stored.isEmpty else {
            Output.line(
                "No fields yet. Export them from the farm software as ISOXML TaskData and run 'agrigps fields import FILE'."
            )
            return
        }
        // Names come from other people's files: shown escaped and cut, never raw.
        let rows = stored.map { entry -> [String] in
            [
                String(entry.id), TerminalText.safe(entry.field.name, limit: 40),
                entry.field.farm.map { TerminalText.safe($0, limit: 30) } ?? "-",
                String(format: "%.2f", entry.field.hectares), String(entry.field.pointCount),
                TerminalText.safe(entry.source, limit: 60),
            ]
        }
        for line in OthersReport.table(header: ["ID", "NAME", "FARM", "AREA (ha)", "POINTS", "SOURCE"], rows: rows) {
            Output.line(line)
        }
        let total = stored.reduce(0) { $0 + $1.field.hectares }
        Output.line("\(stored.count) field\(stored.count == 1 ? "" : "s"), \(String(format: "%.2f", total)) ha")
    }
}

/// `agrigps fields --json`: every key present, null where a value is missing.
struct FieldsDocument: Encodable, Sendable {
    struct Entry: Encodable, Sendable {
        var id: Int64
        var partfield_id: String
        var name: String
        @Nullable var farm: String?
        @Nullable var customer: String?
        /// Computed from the boundary, to 2 decimals.
        var area_ha: Double
        /// As the farm software stated it, to 2 decimals.
        @Nullable var declared_area_ha: Double?
        var points: Int
        var holes: Int
        var guidance_lines: Int
        var source: String
        var imported_at: String
    }

    var fields: [Entry]

    init(_ stored: [StoredField]) {
        fields = stored.map { entry in
            Entry(
                id: entry.id, partfield_id: entry.field.partfieldID, name: entry.field.name, farm: entry.field.farm,
                customer: entry.field.customer,
                area_ha: Self.hundredths(entry.field.hectares),
                declared_area_ha: entry.field.declaredArea.map { Self.hundredths($0 / 10_000) },
                points: entry.field.pointCount, holes: entry.field.holes.count,
                guidance_lines: entry.field.guidanceLines.count,
                source: entry.source, imported_at: ISO8601UTC.string(from: entry.importedAt))
        }
    }

    static func hundredths(_ value: Double) -> Double { (value * 100).rounded() / 100 }
}

struct FieldsImport: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "import",
        abstract:
            "Import fields from an ISOXML TaskData export: a zip, a folder holding TASKDATA.XML, or TASKDATA.XML itself.",
        discussion: """
            Reads every partfield (PFD) with a boundary, its holes (interior rings, water, buildings, \
            roads, obstacles), its farm and customer, and its guidance lines. Importing a file of the same \
            name again replaces the fields it brought before, in one step. A partfield that cannot be used \
            (no boundary, a ring of fewer than 3 points) is skipped and listed with the reason; a \
            coordinate off the globe stops the import with the field's name, and nothing is changed.

            Hostile files are refused with a reason: a DOCTYPE or entity, more than 64 MiB of XML, a zip \
            entry that declares or inflates to more than that, more than 1,000,000 points in a polygon.
            """
    )

    @Argument(help: ArgumentHelp("The export: a .zip, a folder, or TASKDATA.XML.", valueName: "file"))
    var file: String

    @OptionGroup var state: StateDirectoryOption

    func run() async throws {
        try ExportPath.check(file)
        let started = ContinuousClock.now
        let report: ImportReport
        do {
            report = try await FieldStore(path: state.fieldsPath).importTaskData(at: file)
        } catch {
            throw CommandFailure(description: error.description, exitCode: error.exitCode)
        }
        let elapsed = ContinuousClock.now - started
        let hectares = report.imported.reduce(0) { $0 + $1.hectares }
        let origin = [
            report.software.map { TerminalText.safe($0, limit: 40) },
            report.version.map { "ISOXML \(TerminalText.safe($0, limit: 10))" },
        ]
        .compactMap { $0 }.joined(separator: ", ")
        Output.line(
            "Imported \(report.imported.count) field\(report.imported.count == 1 ? "" : "s") (\(String(format: "%.2f", hectares)) ha) from "
                + "\(TerminalText.safe(report.source, limit: 80))\(origin.isEmpty ? "" : " (\(origin))")"
                + (report.replaced > 0 ? ", replacing the \(report.replaced) imported from it before" : "")
                + String(
                    format: " in %.2f s.",
                    Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
        if !report.skipped.isEmpty {
            Output.line("Skipped \(report.skipped.count) partfield\(report.skipped.count == 1 ? "" : "s"):")
            for skipped in report.skipped { Output.line("  \(TerminalText.safe(skipped.description, limit: 200))") }
        }
    }
}

/// What `fields import` is given, looked at before the importer opens anything: a FIFO's open waits
/// for a writer for ever (the command stuck in it did not even end on Ctrl-C), and a device such as
/// /dev/zero never ends. A zip, TASKDATA.XML or a folder passes; for TASKDATA.XML and a folder, so
/// must every ISOXML file (.XML, .BIN) where the importer looks for the files TASKDATA.XML refers
/// to. A missing or unreadable path is left to the importer, which says so in its words.
enum ExportPath {
    static func check(_ path: String) throws(CommandFailure) {
        var status = stat()
        guard stat(path, &status) == 0 else { return }
        switch status.st_mode & S_IFMT {
        case S_IFREG:
            guard path.uppercased().hasSuffix(".XML") else { return }
            try checkFiles(in: (path as NSString).deletingLastPathComponent)
        case S_IFDIR:
            // The folder itself, or its TASKDATA folder, as an export unpacked from a zip has it.
            try checkFiles(in: path)
            try checkFiles(in: (path as NSString).appendingPathComponent("TASKDATA"))
        default:
            throw CommandFailure(
                description: "\(path) is \(kind(status.st_mode)), not a TaskData export; "
                    + "give a zip, a folder with TASKDATA.XML, or TASKDATA.XML itself", exitCode: 66)
        }
    }

    /// Throws for the first ISOXML file in `folder` that is not a regular file; nothing else there
    /// (a socket beside an export in /tmp, say) is the importer's to read.
    private static func checkFiles(in folder: String) throws(CommandFailure) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? "." : folder)) ?? []
        for name in names.sorted() {
            let upper = name.uppercased()
            guard upper.hasSuffix(".XML") || upper.hasSuffix(".BIN") else { continue }
            let file = folder.isEmpty ? name : (folder as NSString).appendingPathComponent(name)
            var status = stat()
            guard stat(file, &status) == 0 else { continue }
            let type = status.st_mode & S_IFMT
            guard type != S_IFREG && type != S_IFDIR else { continue }
            throw CommandFailure(
                description: "\(file) is \(kind(status.st_mode)), not a file of a TaskData export; "
                    + "copy the export from the farm software again, as files", exitCode: 66)
        }
    }

    /// "a FIFO", as a person would name what the path is.
    private static func kind(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFIFO: return "a FIFO"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "something other than a file"
        }
    }
}

struct FieldsRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a field by its ID (from 'agrigps fields'), or every field with --all."
    )

    @Argument(help: ArgumentHelp("The field's ID, as 'agrigps fields' lists it.", valueName: "id"))
    var id: String?

    @Flag(help: "Remove every field.")
    var all = false

    @OptionGroup var state: StateDirectoryOption

    func validate() throws {
        switch (id, all) {
        case (nil, false):
            throw ValidationError("give a field's ID (see 'agrigps fields'), or --all to remove every field")
        case (.some, true): throw ValidationError("give either an ID or --all, not both")
        case let (.some(text), false):
            guard let number = Int64(text), number > 0 else {
                throw ValidationError(
                    "'\(TerminalText.safe(text, limit: 40))' is not a field ID; IDs are the whole numbers 'agrigps fields' lists"
                )
            }
            _ = number
        case (nil, true): break
        }
    }

    func run() async throws {
        let store = FieldStore(path: state.fieldsPath)
        do {
            if all {
                let removed = try await store.removeAll()
                Output.line("Removed \(removed) field\(removed == 1 ? "" : "s").")
                return
            }
            guard let id = id.flatMap({ Int64($0) }) else { return }
            guard try await store.remove(id: id) else {
                throw CommandFailure(
                    description: "there is no field with ID \(id); 'agrigps fields' lists the IDs", exitCode: 65)
            }
            Output.line("Removed field \(id).")
        } catch let error as FieldsError {
            throw CommandFailure(description: error.description, exitCode: error.exitCode)
        }
    }
}
