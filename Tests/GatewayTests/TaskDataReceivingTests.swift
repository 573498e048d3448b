import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
import Fields
import Foundation
import SwiftProtobuf
import TestSupport
import Testing

@testable import Gateway

@Suite("The farm's fields arrive through agrirouter", .serialized, .timeLimit(.minutes(3)))
struct TaskDataReceivingTests {
    @Test("chunked TaskData from farm software becomes the farm's fields, and the sender's next one replaces them")
    func chunkedTaskDataReplacesTheSendersFields() async throws {
        let rig = try await PeerRig.make(extraTANs: ["TAN0000003": "Farm software"], readingTaskData: true)
        try await tearingDown({ await rig.close() }) {
            #expect(await rig.simulator.subscriptions(endpoint: rig.tractorID).contains(TechnicalMessageType.taskData))
            await rig.reader.connected()
            try await rig.pumpUntilSettled()
            var farm = try await FarmSoftware.onboard(rig.simulator, tan: "TAN0000003")
            let fields = FieldStore(path: rig.directory + "/fields.sqlite")

            let first = TaskDataZip.make(fields: ["North", "South", "Brook"], padding: 1_700_000, seed: 1)
            let started = Date()
            #expect(try await farm.sendTaskData(first) == 3)
            try await rig.pumpUntilIdle { try await fields.fields().count == 3 }
            let elapsed = Date().timeIntervalSince(started)
            let stored = try await fields.fields()
            #expect(stored.map(\.field.name) == ["Brook", "North", "South"])
            #expect(Set(stored.map(\.source)) == ["agrirouter: \(farm.id)"])
            #expect(try await fields.heldChunks().isEmpty, "the joined chunks are forgotten with the import")
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty, "every chunk is confirmed")
            print(
                "TaskData of \(first.count) bytes in 3 chunks: fields stored \(String(format: "%.2f", elapsed)) s after the first chunk was sent"
            )

            let listing = try await AgrigpsCommand.run(["fields", "--json", "--state-dir", rig.directory])
            #expect(listing.code == 0)
            let document = try #require(
                try JSONSerialization.jsonObject(with: Data(listing.stdout.joined(separator: "\n").utf8))
                    as? [String: Any])
            let entries = try #require(document["fields"] as? [[String: Any]])
            #expect(
                entries.compactMap { $0["source"] as? String } == Array(repeating: "agrirouter: \(farm.id)", count: 3))

            let second = TaskDataZip.make(fields: ["North", "Meadow"], padding: 900_000, seed: 2)
            #expect(try await farm.sendTaskData(second) == 2)
            try await rig.pumpUntilIdle { try await fields.fields().map(\.field.name) == ["Meadow", "North"] }
            #expect(await rig.reader.counters.taskDataImported == 2)
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty)
        }
    }

    @Test(
        "chunks held before a restart join with the rest after it; an unreadable TaskData is confirmed and changes nothing"
    )
    func heldChunksSurviveARestart() async throws {
        let rig = try await PeerRig.make(extraTANs: ["TAN0000003": "Farm software"], readingTaskData: true)
        try await tearingDown({ await rig.close() }) {
            await rig.reader.connected()
            try await rig.pumpUntilSettled()
            var farm = try await FarmSoftware.onboard(rig.simulator, tan: "TAN0000003")
            let fieldsPath = rig.directory + "/fields.sqlite"
            let zip = TaskDataZip.make(fields: ["Hill"], padding: 1_000_000, seed: 3)
            let parts = ChunkJoiner.split(zip, contextID: "restart-context")
            try await farm.post([
                try farm.encoder.encode(
                    technicalMessageType: TechnicalMessageType.taskData, content: parts[0].payload,
                    chunk: parts[0].position)
            ])
            try await rig.pumpUntilSettled()
            #expect(try await FieldStore(path: fieldsPath).heldChunks().count == 1, "held, so its confirm is safe")

            // A new reader, as after a restart, with the same stores.
            let restarted = FeedReader(
                store: rig.store, connection: rig.tractor, ownEndpointID: rig.tractorID,
                fields: FieldStore(path: fieldsPath))
            let importing = Task { await restarted.runImports() }
            defer { importing.cancel() }
            await restarted.connected()
            try await farm.post([
                try farm.encoder.encode(
                    technicalMessageType: TechnicalMessageType.taskData, content: parts[1].payload,
                    chunk: parts[1].position)
            ])
            for _ in 0..<60 {
                let (responses, _) = try await rig.tractor.fetchOutbox()
                _ = await restarted.absorb(responses)
                if try await FieldStore(path: fieldsPath).fields().count == 1, !(await restarted.isBusy) { break }
                try await restarted.step()
            }
            #expect(try await FieldStore(path: fieldsPath).fields().map(\.field.name) == ["Hill"])

            // Not a zip: refused, confirmed, the fields stay.
            try await farm.post([
                try farm.encoder.encode(
                    technicalMessageType: TechnicalMessageType.taskData,
                    content: Data(Data("not a zip at all".utf8).base64EncodedString().utf8), chunk: nil)
            ])
            for _ in 0..<60 {
                let (responses, _) = try await rig.tractor.fetchOutbox()
                _ = await restarted.absorb(responses)
                if await restarted.counters.taskDataRefused == 1, !(await restarted.isBusy) { break }
                try await restarted.step()
            }
            #expect(await restarted.counters.taskDataRefused == 1)
            #expect(try await FieldStore(path: fieldsPath).fields().map(\.field.name) == ["Hill"])
            #expect(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty)
        }
    }

    @Test(
        "a TaskData whose boundary repeats one cycle is read beside the loop, which goes on storing positions; it is refused, and the next is imported"
    )
    func costlyTaskDataHoldsNothingBack() async throws {
        let latch = Latch()
        let rig = try await PeerRig.make(
            extraTANs: ["TAN0000003": "Farm software"], readingTaskData: true, importGate: { await latch.wait() })
        try await tearingDown({
            latch.open()
            await rig.close()
        }) {
            await rig.reader.connected()
            try await rig.pumpUntilSettled()
            var farm = try await FarmSoftware.onboard(rig.simulator, tan: "TAN0000003")
            let fields = FieldStore(path: rig.directory + "/fields.sqlite")

            // 20,000 points round one square and a 19,999-point hole: 25 s of a quadratic hole check.
            let costly = TaskDataZip.repeatingBoundary(count: 20_000)
            _ = try await farm.sendTaskData(costly)
            try await rig.pump { await rig.reader.importsInProgress == 1 }
            // The import is held half way; the loop is not: a position pushed meanwhile is stored.
            try await rig.publish([(.dRtkFinteger, 52.5, 8.25, Date())])
            try await rig.pump { try await rig.store.view().machines.first?.lastPosition != nil }
            #expect(await rig.reader.importsInProgress == 1)
            #expect(await rig.reader.counters.taskDataRefused == 0)
            #expect(
                !(await rig.simulator.feed(endpoint: rig.tractorID).isEmpty),
                "the TaskData's last chunk waits for its import to be confirmed")

            latch.open()
            // Passes of the loop go on while it is read (about a second for 1.2 MB of XML here).
            try await rig.pump(passes: 3_000) { await rig.reader.counters.taskDataRefused == 1 }
            try await rig.pumpUntilSettled()
            #expect(await rig.reader.counters.taskDataRefused == 1)
            let problem = try #require(await rig.reader.counters.lastTaskDataProblem)
            #expect(problem.contains("passes through the same point twice"), "\(problem)")
            #expect(try await fields.fields().isEmpty)
            #expect(try await fields.heldChunks().isEmpty, "a refused TaskData's chunks are forgotten")

            _ = try await farm.sendTaskData(TaskDataZip.make(fields: ["North"]))
            // The store is written before the reader counts the import: wait for both.
            try await rig.pump(passes: 3_000) {
                let counted = await rig.reader.counters.taskDataImported == 1
                return try await fields.fields().map(\.field.name) == ["North"] && counted
            }
            #expect(try await fields.fields().map(\.field.name) == ["North"])
            #expect(await rig.reader.counters.taskDataImported == 1)
            try await rig.pumpUntilSettled()
            #expect(await rig.reader.importsInProgress == 0)
        }
    }
}
