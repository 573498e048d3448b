import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `agrigps fields import` given a FIFO, a device, or an export folder with a FIFO in it: a FIFO's
/// open waits for a writer for ever, and /dev/zero never ends. Each is refused in words, at once.
@Suite("agrigps fields import of what is not a file", .timeLimit(.minutes(2)))
struct FieldsImportKindTests {
    @Test("a FIFO or a character device as the export: refused before it is opened, saying what it is")
    func notARegularFile() async throws {
        let scratch = TemporaryDirectory("fields-kind")
        let state = scratch.path
        let fifo = state + "/TASKDATA.XML"
        #expect(mkfifo(fifo, 0o600) == 0, "errno \(errno)")
        for (path, kind) in [(fifo, "a FIFO"), ("/dev/zero", "a character device")] {
            // A timeout ends a command that waits on the FIFO: the code is then nil.
            let result = try await AgrigpsCommand.run(
                ["fields", "import", path, "--state-dir", state + "/state"], timeout: 20)
            let said = result.stderr.joined(separator: "\n")
            #expect(result.code == 66, "\(path): exit \(String(describing: result.code)): \(said)")
            #expect(
                said.contains(
                    "\(path) is \(kind), not a TaskData export; give a zip, a folder with TASKDATA.XML, or TASKDATA.XML itself"
                ),
                "\(path): \(said)")
            #expect(result.stderr.count == 1 && result.stdout.isEmpty, "\(result.stdout) \(result.stderr)")
        }
    }

    @Test("an export folder whose TASKDATA.XML, or a file it refers to, is a FIFO: refused, naming the file")
    func fifoInTheFolder() async throws {
        let scratch = TemporaryDirectory("fields-kind")
        let state = scratch.path
        // The Deutz export's TASKDATA.XML refers to PFD00000.XML (XFR), which the import reads.
        let export = state + "/deutz"
        try FileManager.default.copyItem(
            atPath: Fixtures.root.appendingPathComponent("Fixtures/isoxml/deutz_export").path, toPath: export)
        let bare = state + "/bare"
        try FileManager.default.createDirectory(atPath: bare + "/TASKDATA", withIntermediateDirectories: true)
        for fifo in [export + "/PFD00000.XML", bare + "/TASKDATA/TASKDATA.XML"] {
            unlink(fifo)
            #expect(mkfifo(fifo, 0o600) == 0, "errno \(errno)")
        }
        for (folder, fifo) in [(export, export + "/PFD00000.XML"), (bare, bare + "/TASKDATA/TASKDATA.XML")] {
            let result = try await AgrigpsCommand.run(
                ["fields", "import", folder, "--state-dir", state + "/state"], timeout: 20)
            let said = result.stderr.joined(separator: "\n")
            #expect(result.code == 66, "\(folder): exit \(String(describing: result.code)): \(said)")
            #expect(said.contains("\(fifo) is a FIFO, not a file of a TaskData export"), "\(folder): \(said)")
        }
        // The same folder with the file put back imports.
        unlink(export + "/PFD00000.XML")
        try FileManager.default.copyItem(
            atPath: Fixtures.root.appendingPathComponent("Fixtures/isoxml/deutz_export/PFD00000.XML").path,
            toPath: export + "/PFD00000.XML")
        let imported = try await AgrigpsCommand.run(
            ["fields", "import", export, "--state-dir", state + "/state"], timeout: 30)
        #expect(imported.code == 0, "\(imported.stderr)")
    }
}
