import AgrirouterWire
import Foundation
import Testing

@Suite struct ChunkJoinerTests {
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    /// `content` cut into `size`-byte chunks of one context, as the joiner receives them.
    func chunks(_ content: Data, size: Int, context: String = "ctx", sender: String = "farm") -> [ChunkJoiner.Chunk] {
        ChunkJoiner.split(content, contextID: context, size: size).enumerated().map { index, part in
            ChunkJoiner.Chunk(
                messageID: "\(context)-\(index)", senderID: sender, position: part.position!,
                sentAt: start.addingTimeInterval(Double(index)), bytes: ChunkJoiner.rawContent(part.payload)!)
        }
    }

    let content = Data((0..<1000).map { UInt8(truncatingIfNeeded: $0 * 7) })

    @Test func outOfOrderAndDuplicateChunksJoinOnce() {
        var joiner = ChunkJoiner()
        let parts = chunks(content, size: 300)
        #expect(parts.count == 4 && parts.map(\.position.current) == [0, 1, 2, 3])
        #expect(joiner.add(parts[2], now: start) == .waiting(received: 1, total: 4))
        #expect(joiner.add(parts[0], now: start) == .waiting(received: 2, total: 4))
        #expect(joiner.add(parts[2], now: start) == .duplicate)
        #expect(joiner.add(parts[3], now: start) == .waiting(received: 3, total: 4))
        guard case .complete(let joined) = joiner.add(parts[1], now: start) else {
            Issue.record("not joined")
            return
        }
        #expect(joined.bytes == content)
        #expect(joined.sentAt == start, "the earliest chunk's sent time")
        #expect(joined.messageIDs.sorted() == ["ctx-0", "ctx-1", "ctx-2", "ctx-2", "ctx-3"])
        #expect(joiner.pendingContexts == 0 && joiner.droppedCount == 0)
    }

    @Test func oneBasedNumberingIsTakenToo() {
        var joiner = ChunkJoiner()
        var parts = chunks(content, size: 500)
        for index in parts.indices { parts[index].position.current += 1 }
        _ = joiner.add(parts[1], now: start)
        guard case .complete(let joined) = joiner.add(parts[0], now: start) else {
            Issue.record("not joined")
            return
        }
        #expect(joined.bytes == content)
    }

    @Test func twoSendersWithTheSameContextIDDoNotMix() {
        var joiner = ChunkJoiner()
        let a = chunks(content, size: 600, sender: "a"), b = chunks(Data(content.reversed()), size: 600, sender: "b")
        _ = joiner.add(a[0], now: start)
        _ = joiner.add(b[1], now: start)
        guard case .complete(let joinedA) = joiner.add(a[1], now: start),
            case .complete(let joinedB) = joiner.add(b[0], now: start)
        else {
            Issue.record("not joined")
            return
        }
        #expect(joinedA.bytes == content && joinedB.bytes == Data(content.reversed()))
    }

    @Test func aMissingChunkIsDroppedAfterTheBoundAndCounted() {
        var joiner = ChunkJoiner()
        let parts = chunks(content, size: 300)
        for part in parts.dropLast() { _ = joiner.add(part, now: start) }
        #expect(joiner.expire(now: start.addingTimeInterval(3599)).isEmpty)
        let dropped = joiner.expire(now: start.addingTimeInterval(3600))
        #expect(dropped.map(\.messageIDs) == [["ctx-0", "ctx-1", "ctx-2"]])
        #expect(dropped.first?.reason.contains("3 of 4") == true)
        #expect(joiner.droppedCount == 1 && joiner.pendingContexts == 0)
        // Its last chunk, late, starts a context of its own that never completes either.
        #expect(joiner.add(parts[3], now: start.addingTimeInterval(3601)) == .waiting(received: 1, total: 4))
    }

    @Test func aTotalSizeThatLiesIsRefused() {
        var joiner = ChunkJoiner()
        var parts = chunks(content, size: 500)
        for index in parts.indices { parts[index].position.totalSize = 999 }
        _ = joiner.add(parts[0], now: start)
        guard case .refused(let dropped) = joiner.add(parts[1], now: start) else {
            Issue.record("taken")
            return
        }
        #expect(dropped.messageIDs == ["ctx-0", "ctx-1"] && dropped.reason.contains("999"))

        // Smaller than the chunks already carry: refused at once.
        var small = chunks(content, size: 300, context: "small")
        for index in small.indices { small[index].position.totalSize = 200 }
        guard case .refused = joiner.add(small[0], now: start) else {
            Issue.record("taken")
            return
        }

        // A chunk that disagrees with the earlier ones about the total: the context is dropped whole.
        var changing = chunks(content, size: 300, context: "changing")
        _ = joiner.add(changing[0], now: start)
        changing[1].position.total = 5
        guard case .refused(let whole) = joiner.add(changing[1], now: start) else {
            Issue.record("taken")
            return
        }
        #expect(whole.messageIDs == ["changing-0", "changing-1"])
        #expect(joiner.droppedCount == 3 && joiner.pendingContexts == 0)
    }

    @Test func tooManyChunksOrTooManyBytesAreRefused() {
        var limits = ChunkJoiner.Limits()
        limits.maximumChunks = 3
        limits.maximumTotalBytes = 2000
        var joiner = ChunkJoiner(limits: limits)
        guard case .refused = joiner.add(chunks(content, size: 200)[0], now: start) else {
            Issue.record("5 chunks taken")
            return
        }
        var big = chunks(content, size: 500)
        big[0].position.totalSize = 2001
        guard case .refused = joiner.add(big[0], now: start) else {
            Issue.record("2001 bytes taken")
            return
        }
        for extreme in [Int64.max, Int64.min, -1, 0] {
            var part = chunks(content, size: 500)[0]
            part.position.total = extreme
            guard case .refused = joiner.add(part, now: start) else {
                Issue.record("total \(extreme) taken")
                return
            }
            part = chunks(content, size: 500)[0]
            part.position.current = extreme == 0 ? -1 : extreme
            guard case .refused = joiner.add(part, now: start) else {
                Issue.record("current \(extreme) taken")
                return
            }
        }
    }

    @Test func aChunkOverTheCapIsRefused() {
        var joiner = ChunkJoiner()
        let oversized = Data(repeating: 1, count: AgrirouterLimits.payloadBytes + 1)
        let chunk = ChunkJoiner.Chunk(
            messageID: "m", senderID: "farm",
            position: ChunkPosition(contextID: "c", current: 0, total: 2, totalSize: Int64(oversized.count) + 10),
            sentAt: nil, bytes: oversized)
        guard case .refused(let dropped) = joiner.add(chunk, now: start) else {
            Issue.record("taken")
            return
        }
        #expect(dropped.reason.contains("above the cap"))
    }

    @Test func theOldestContextMakesRoomForANewOne() {
        var limits = ChunkJoiner.Limits()
        limits.maximumContexts = 2
        var joiner = ChunkJoiner(limits: limits)
        for (offset, context) in ["a", "b", "c"].enumerated() {
            _ = joiner.add(
                chunks(content, size: 300, context: context)[0], now: start.addingTimeInterval(Double(offset)))
        }
        #expect(joiner.pendingContexts == 2 && joiner.droppedCount == 1)
        #expect(joiner.takeEvicted().map(\.contextID) == ["a"])
        #expect(joiner.takeEvicted().isEmpty)
    }

    @Test func heldBytesAreCappedAcrossContexts() {
        var limits = ChunkJoiner.Limits()
        limits.maximumHeldBytes = 700
        var joiner = ChunkJoiner(limits: limits)
        _ = joiner.add(chunks(content, size: 400, context: "a")[0], now: start)
        _ = joiner.add(chunks(content, size: 400, context: "b")[0], now: start.addingTimeInterval(1))
        #expect(joiner.takeEvicted().map(\.contextID) == ["a"], "the oldest makes room")
        #expect(joiner.pendingContexts == 1)
        let parts = chunks(content, size: 400, context: "b")
        guard case .refused = joiner.add(parts[1], now: start) else {
            Issue.record("800 bytes held")
            return
        }
    }

    @Test func splitMatchesTheSDKsChunkSize() {
        let zip = Data(count: 2 * AgrirouterLimits.payloadBytes + 5)
        let parts = ChunkJoiner.split(zip, contextID: "x")
        #expect(parts.map { ChunkJoiner.rawContent($0.payload)?.count } == [767_997, 767_997, 5])
        #expect(parts.allSatisfy { $0.payload.count <= AgrirouterLimits.messageCharacters })
        #expect(parts.map { $0.position?.total } == [3, 3, 3])
        #expect(ChunkJoiner.split(Data([1, 2]), contextID: "x").first?.position == nil, "small content goes whole")
    }
}
