import Fields
import Foundation
import TestSupport
import Testing

@Suite struct ReceivedTaskDataTests {
    @Test func anOlderTaskDataArrivingLaterChangesNothing() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let store = FieldStore(path: scratch.file("fields.sqlite"))
        let newer = Date(timeIntervalSince1970: 1_790_000_100), older = Date(timeIntervalSince1970: 1_790_000_000)
        guard
            case .imported = try await store.importReceivedTaskData(
                TaskDataZip.make(fields: ["New"]), source: "agrirouter: farm",
                sentAt: newer, releasing: nil)
        else {
            Issue.record("not imported")
            return
        }
        guard
            case .older(let than) = try await store.importReceivedTaskData(
                TaskDataZip.make(fields: ["Old"]), source: "agrirouter: farm",
                sentAt: older, releasing: nil)
        else {
            Issue.record("imported")
            return
        }
        #expect(than == newer)
        #expect(try await store.fields().map(\.field.name) == ["New"])
        let error = await #expect(throws: FieldsError.self) {
            try await store.importReceivedTaskData(
                Data("junk".utf8), source: "agrirouter: farm", sentAt: newer.addingTimeInterval(1), releasing: nil)
        }
        #expect(
            error?.description.contains("the TaskData from agrirouter: farm") == true, "\(String(describing: error))")
        #expect(error?.description.contains(scratch.path) == false)
        #expect(try await store.fields().map(\.field.name) == ["New"])
        #expect(!FileManager.default.fileExists(atPath: scratch.file("received-taskdata.zip")))
    }

    @Test func heldChunksAreKeptOnceAndReleased() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let store = FieldStore(path: scratch.file("fields.sqlite"))
        let chunk = HeldChunk(
            senderID: "farm", contextID: "c", current: 0, total: 2, totalSize: 3, messageID: "m",
            sentAt: nil, receivedAt: Date(timeIntervalSince1970: 1_790_000_000), bytes: Data([1, 2]))
        try await store.hold(chunk)
        try await store.hold(chunk)
        #expect(try await store.heldChunks() == [chunk])
        try await store.release(senderID: "farm", contextID: "c")
        #expect(try await store.heldChunks().isEmpty)
    }
}
