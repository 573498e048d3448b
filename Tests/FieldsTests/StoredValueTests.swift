import Fields
import Foundation
import GRDB
import TestSupport
import Testing

/// The fields' store read back as a file anyone could have edited: SQLite keeps a value of any type
/// in any column, and GRDB's converting subscripts (`row["name"] as String?`) stop the process on
/// one they cannot convert. Each value of another type here is one such stop before the store read
/// its rows through checked values.
@Suite("the fields' store read back with values of another type")
struct StoredValueTests {
    /// Changes the file as another program would, outside the store.
    static func edit(_ path: String, _ statements: [String]) throws {
        let database = try DatabaseQueue(path: path)
        try database.writeWithoutTransaction { db in
            for sql in statements { try db.execute(sql: sql) }
        }
    }

    @Test(
        "a field with a value of another type where one is needed is left out, one where none is needed is read as none"
    )
    func fields() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let path = scratch.file("fields.sqlite")
        let store = FieldStore(path: path)
        _ = try await store.importTaskData(
            bytes: TaskDataZip.make(fields: ["A", "B", "C", "D", "E", "F", "G"]), named: "farm.zip")
        try Self.edit(
            path,
            [
                "UPDATE field SET name = x'FF' WHERE name = 'A'",  // not text, nor UTF-8
                "UPDATE field SET imported_at = 'yesterday' WHERE name = 'B'",  // text where a time belongs
                "UPDATE field SET partfield_id = x'FE00' WHERE name = 'E'",
                "UPDATE field SET geometry = 7 WHERE name = 'G'",  // stored as the text '7'
                "UPDATE field SET farm = x'FF', customer = x'FE' WHERE name = 'C'",
                "UPDATE field SET declared_area = 'big' WHERE name = 'D'",
            ])
        for reader in [FieldStore(path: path), FieldStore(path: path, readOnly: true)] {
            let stored = try await reader.fields()
            #expect(stored.map(\.field.name) == ["C", "D", "F"])
            #expect(
                stored.allSatisfy { $0.field.farm == nil && $0.field.customer == nil && $0.field.declaredArea == nil })
            #expect(try await reader.index().count == 3)
        }
    }

    @Test(
        "a held chunk with a value of another type where one is needed is left out; a sent time that is no number is none"
    )
    func heldChunks() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let path = scratch.file("fields.sqlite")
        let store = FieldStore(path: path)
        let received = Date(timeIntervalSince1970: 1_790_000_000)
        func chunk(_ current: Int64) -> HeldChunk {
            HeldChunk(
                senderID: "farm", contextID: "c", current: current, total: 9, totalSize: 90, messageID: "m\(current)",
                sentAt: received.addingTimeInterval(-60), receivedAt: received.addingTimeInterval(Double(current)),
                bytes: Data([UInt8(current)]))
        }
        for current: Int64 in 0..<8 { try await store.hold(chunk(current)) }
        try Self.edit(
            path,
            [
                "UPDATE held_chunk SET sender_id = x'FF' WHERE current = 0",
                "UPDATE held_chunk SET current = 'first' WHERE current = 1",
                "UPDATE held_chunk SET total = x'09' WHERE current = 2",
                "UPDATE held_chunk SET bytes = 42 WHERE current = 3",
                "UPDATE held_chunk SET received_at = 'now' WHERE current = 4",
                "UPDATE held_chunk SET message_id = 4.5e300 WHERE current = 5",  // stored as text: kept
                "UPDATE held_chunk SET sent_at = 'later' WHERE current = 6",
            ])
        var five = chunk(5)
        five.messageID = "4.5e+300"
        var six = chunk(6)
        six.sentAt = nil
        #expect(try await FieldStore(path: path).heldChunks() == [five, six, chunk(7)])
    }

    @Test("a received source's sent time that is no number reads as none received")
    func newestSent() async throws {
        let scratch = TemporaryDirectory("fields")
        defer { scratch.remove() }
        let path = scratch.file("fields.sqlite")
        let store = FieldStore(path: path)
        let sent = Date(timeIntervalSince1970: 1_790_000_000)
        _ = try await store.importReceivedTaskData(
            TaskDataZip.make(fields: ["A"]), source: "agrirouter: farm", sentAt: sent, releasing: nil)
        #expect(try await store.newestSent(source: "agrirouter: farm") == sent)
        for value in ["'later'", "x'FF'"] {
            try Self.edit(path, ["UPDATE received_source SET sent_at = \(value)"])
            #expect(try await FieldStore(path: path).newestSent(source: "agrirouter: farm") == nil, "\(value)")
        }
    }
}
