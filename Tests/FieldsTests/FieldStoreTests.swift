import Foundation
import TestSupport
import Testing

@testable import Fields

private let t0 = Date(timeIntervalSince1970: 1_790_000_000)

@Suite("the fields' store in the state directory")
struct FieldStoreTests {
    @Test("a zip, a folder and a bare TASKDATA.XML all import; each file is a source of its own")
    func importsEveryForm() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let store = FieldStore(path: scratch.file("state/fields.sqlite"))
        let zip = try await store.importTaskData(at: ISOXMLFixtures.farmFactsZip, now: t0)
        #expect(zip.imported.count == 9)
        #expect(zip.skipped.count == 6)
        #expect(zip.source == "file: farmfacts_2021-04-09T15_33_26_taskdata.zip")
        let folder = try await store.importTaskData(at: ISOXMLFixtures.deutzFolder, now: t0)
        #expect(folder.kind == .folder)
        #expect(folder.imported.map(\.name) == ["TESTFELD"])
        let bare = try await store.importTaskData(at: ISOXMLFixtures.farmdocXML, now: t0)
        #expect(bare.kind == .xml)
        #expect(bare.source == "file: farmdoc_field_export/TASKDATA.XML")

        let stored = try await store.fields()
        #expect(stored.count == 11)
        // As a person sorts them: "2 TestTransf" before "18 SuperCarateField".
        let names = stored.map(\.field.name)
        let two = try #require(names.firstIndex(of: "2 TestTransf_2 2019 DuW"))
        let eighteen = try #require(names.firstIndex(of: "18 SuperCarateField 2019"))
        #expect(two < eighteen, "\(names)")
        #expect(Set(stored.map(\.source)).count == 3)
        // What comes back is what went in: the rings, and with them the areas.
        let lagerfeld = try #require(stored.first { $0.field.name == "Lagerfeld" })
        #expect(lagerfeld.field == bare.imported[0])
        #expect(lagerfeld.importedAt == t0)
        let index = try await store.index()
        let corner = lagerfeld.field.boundaries[0].points
        let inside = GeoPoint(
            latitude: corner.map(\.latitude).reduce(0, +) / Double(corner.count),
            longitude: corner.map(\.longitude).reduce(0, +) / Double(corner.count))
        #expect(index.field(containing: inside.latitude, longitude: inside.longitude)?.id == lagerfeld.id)
    }

    @Test("importing the same source again replaces its fields and leaves the others")
    func replaces() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let store = FieldStore(path: scratch.file("fields.sqlite"))
        let square = [(48.0, 15.0), (48.0, 15.01), (48.01, 15.01), (48.01, 15.0)]
        _ = try scratch.write(
            "a/TASKDATA.XML",
            TaskDataText.document(
                TaskDataText.partfield("PFD1", "Alt", ring: square)
                    + TaskDataText.partfield("PFD2", "Alt 2", ring: square)))
        _ = try await store.importTaskData(at: scratch.file("a"), now: t0)
        _ = try await store.importTaskData(at: ISOXMLFixtures.deutzFolder, now: t0)
        _ = try scratch.write(
            "a/TASKDATA.XML", TaskDataText.document(TaskDataText.partfield("PFD9", "Neu", ring: square)))
        let again = try await store.importTaskData(at: scratch.file("a"), now: t0.addingTimeInterval(60))
        #expect(again.replaced == 2)
        #expect(try await store.fields().map(\.field.name) == ["Neu", "TESTFELD"])

        // An export with nothing usable is an error and changes nothing.
        _ = try scratch.write("a/TASKDATA.XML", TaskDataText.document(#"<PFD A="PFD1" C="Leer" D="0"/>"#))
        await #expect(throws: FieldsError.self) { try await store.importTaskData(at: scratch.file("a"), now: t0) }
        #expect(try await store.fields().map(\.field.name) == ["Neu", "TESTFELD"])

        // A hostile file stops before the store is touched.
        _ = try scratch.write("a/TASKDATA.XML", "<!DOCTYPE x [<!ENTITY a 'b'>]><ISO11783_TaskData/>")
        await #expect(throws: FieldsError.self) { try await store.importTaskData(at: scratch.file("a"), now: t0) }
        #expect(try await store.fields().count == 2)
    }

    @Test("remove by id, remove all; an absent store lists nothing and is not created")
    func removes() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let path = scratch.file("fields.sqlite")
        let store = FieldStore(path: path)
        #expect(try await store.fields().isEmpty)
        #expect(try await store.remove(id: 1) == false)
        #expect(!FileManager.default.fileExists(atPath: path))
        _ = try await store.importTaskData(at: ISOXMLFixtures.farmFactsZip, now: t0)
        let first = try #require(try await store.fields().first)
        #expect(try await store.remove(id: first.id))
        #expect(try await store.remove(id: first.id) == false)
        #expect(try await store.fields().count == 8)
        #expect(try await store.removeAll() == 8)
        #expect(try await store.fields().isEmpty)
    }
}
