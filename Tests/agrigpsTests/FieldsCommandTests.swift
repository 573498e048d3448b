import Foundation
import TestSupport
import Testing

private let farmFactsZip = Fixtures.root.appendingPathComponent(
    "Fixtures/isoxml/farmfacts_2021-04-09T15_33_26_taskdata.zip"
).path

@Suite("agrigps fields: import, list, remove", .serialized, .timeLimit(.minutes(2)))
struct FieldsCommandTests {
    @Test("a farm's export imported, listed as text and JSON, and removed field by field and all at once")
    func importListRemove() async throws {
        let scratch = TemporaryDirectory("fields")
        let state = scratch.file("state")

        let empty = try await AgrigpsCommand.run(["fields", "--state-dir", state])
        #expect(empty.code == 0)
        #expect(empty.stdout.first?.hasPrefix("No fields yet.") == true, "\(empty.stdout)")

        let imported = try await AgrigpsCommand.run(["fields", "import", farmFactsZip, "--state-dir", state])
        #expect(imported.code == 0, "\(imported.stderr)")
        #expect(imported.stdout.first?.hasPrefix("Imported 9 fields (") == true, "\(imported.stdout)")
        #expect(imported.stdout.first?.contains("FarmFacts, ISOXML 4.2") == true, "\(imported.stdout)")
        #expect(imported.stdout.contains("Skipped 6 partfields:"), "\(imported.stdout)")
        #expect(imported.stdout.contains { $0.contains("TEST (PFD-1): it has no boundary") }, "\(imported.stdout)")

        let text = try await AgrigpsCommand.run(["fields", "--state-dir", state])
        #expect(text.code == 0)
        #expect(text.stdout.first?.hasPrefix("ID  NAME") == true, "\(text.stdout)")
        #expect(
            text.stdout.contains {
                $0.contains("24 Concordia  2019") && $0.contains("Betrieb Cesana") && $0.contains("14.18")
            }, "\(text.stdout)")
        #expect(text.stdout.last?.hasPrefix("9 fields, ") == true, "\(text.stdout)")

        let json = try await AgrigpsCommand.run(["fields", "--json", "--state-dir", state])
        #expect(json.code == 0, "\(json.stderr)")
        #expect(json.stdout.count == 1)
        let document = try #require(
            try JSONSerialization.jsonObject(with: Data(json.stdout.joined().utf8)) as? [String: Any])
        let fields = try #require(document["fields"] as? [[String: Any]])
        #expect(fields.count == 9)
        let concordia = try #require(fields.first { $0["name"] as? String == "24 Concordia  2019" })
        #expect(concordia["farm"] as? String == "Betrieb Cesana")
        #expect(concordia["area_ha"] as? Double == 14.18)
        #expect(concordia["declared_area_ha"] as? Double == 14.18)
        #expect(concordia["points"] as? Int == 4)
        #expect(concordia["source"] as? String == "file: farmfacts_2021-04-09T15_33_26_taskdata.zip")
        #expect((concordia["imported_at"] as? String)?.hasSuffix("Z") == true)
        let id = try #require(concordia["id"] as? Int)

        // A missing value is null, never a left-out key.
        let bare = Fixtures.root.appendingPathComponent("Fixtures/isoxml/geobird_v3/TASKDATA.XML").path
        #expect(try await AgrigpsCommand.run(["fields", "import", bare, "--state-dir", state]).code == 0)
        let withNulls = try await AgrigpsCommand.run(["fields", "--json", "--state-dir", state])
        let all = try #require(
            (try JSONSerialization.jsonObject(with: Data(withNulls.stdout.joined().utf8)) as? [String: Any])?["fields"]
                as? [[String: Any]])
        let test = try #require(all.first { $0["name"] as? String == "test" })
        #expect(test["farm"] is NSNull)
        #expect(test["declared_area_ha"] is NSNull)

        let removed = try await AgrigpsCommand.run(["fields", "remove", String(id), "--state-dir", state])
        #expect(removed.code == 0, "\(removed.stderr)")
        #expect(removed.stdout == ["Removed field \(id)."])
        let again = try await AgrigpsCommand.run(["fields", "remove", String(id), "--state-dir", state])
        #expect(again.code == 65)
        #expect(again.stderr.first?.contains("no field with ID \(id)") == true, "\(again.stderr)")

        let neither = try await AgrigpsCommand.run(["fields", "remove", "--state-dir", state])
        #expect(neither.code == 64)
        let everything = try await AgrigpsCommand.run(["fields", "remove", "--all", "--state-dir", state])
        #expect(everything.code == 0)
        #expect(everything.stdout == ["Removed 9 fields."])
    }

    @Test("a hostile or missing file: one line saying why, exit 65 or 66, and the store unchanged")
    func refusals() async throws {
        let scratch = TemporaryDirectory("fields")
        let state = scratch.path
        let hostile = state + "/TASKDATA.XML"
        try
            #"<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><ISO11783_TaskData>&x;</ISO11783_TaskData>"#
            .write(toFile: hostile, atomically: true, encoding: .utf8)
        let refused = try await AgrigpsCommand.run(["fields", "import", hostile, "--state-dir", state])
        #expect(refused.code == 65)
        #expect(refused.stderr.count == 1)
        #expect(refused.stderr.first?.contains("DOCTYPE declaration is refused") == true, "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: state + "/fields.sqlite"))

        let missing = try await AgrigpsCommand.run(["fields", "import", state + "/nothing.zip", "--state-dir", state])
        #expect(missing.code == 66)
        #expect(missing.stderr.first?.contains("does not exist") == true, "\(missing.stderr)")

        let help = try await AgrigpsCommand.run(["fields", "import", "--help"])
        #expect(help.code == 0)
        #expect(help.stdout.joined(separator: " ").contains("TASKDATA.XML"))
    }
}
