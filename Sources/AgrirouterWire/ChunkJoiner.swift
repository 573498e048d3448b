import Foundation

/// Joins the chunks of messages that arrive in parts (TaskData above agrirouter's payload cap) back
/// into one content. Chunks are keyed by sender and context id, so two senders cannot mix or spoil
/// each other's contexts; they may arrive in any order and more than once (a push and a feed query
/// both deliver them). Every number a chunk carries is the sender's and is checked before it is
/// used; a context that lies about itself is dropped whole. No I/O: the caller keeps the chunks
/// durable and decides what to confirm.
public struct ChunkJoiner: Sendable {
    public struct Limits: Sendable, Equatable {
        /// The most bytes one joined content may have. A TaskData of a large farm with guidance
        /// lines stays far below it; the fields reader caps an import at 256 MiB of XML anyway.
        public var maximumTotalBytes = 64 * 1024 * 1024
        /// The most chunks one content may be cut into: the total at the SDKs' chunk size, with room.
        public var maximumChunks = 100
        /// The most raw bytes one chunk may carry: agrirouter's payload cap.
        public var maximumChunkBytes = AgrirouterLimits.payloadBytes
        /// Contexts held at once; when a new one would pass it, the oldest is dropped.
        public var maximumContexts = 8
        /// Bytes held across all contexts; the oldest others are dropped to make room. Without it,
        /// eight contexts of 64 MiB would be half a gigabyte on a box with little memory.
        public var maximumHeldBytes = 96 * 1024 * 1024
        /// A context still incomplete this long after its first chunk is dropped. An hour: the feed
        /// query's safety interval, after which a missing chunk is not coming by push.
        public var lifetime: Double = 3600

        public init() {}
    }

    /// One chunk as received: its raw content (base64 already decoded) and where it belongs.
    public struct Chunk: Sendable, Equatable {
        public var messageID: String
        public var senderID: String
        public var position: ChunkPosition
        public var sentAt: Date?
        public var bytes: Data

        public init(messageID: String, senderID: String, position: ChunkPosition, sentAt: Date?, bytes: Data) {
            self.messageID = messageID
            self.senderID = senderID
            self.position = position
            self.sentAt = sentAt
            self.bytes = bytes
        }
    }

    /// A whole content, its parts in order.
    public struct Joined: Sendable, Equatable {
        public var senderID: String
        public var contextID: String
        public var bytes: Data
        /// The earliest sent time of its chunks: when the sender began sending it.
        public var sentAt: Date?
        /// Every message that carried a part of it, duplicates included, for confirming.
        public var messageIDs: [String]
    }

    /// A context given up, with why and the messages it held (to confirm, so they do not come back).
    public struct Dropped: Sendable, Equatable {
        public var senderID: String
        public var contextID: String
        public var reason: String
        public var messageIDs: [String]
    }

    public enum Outcome: Sendable, Equatable {
        /// Held; `received` of `total` parts are there.
        case waiting(received: Int, total: Int)
        /// A part already held: counted once, nothing changes.
        case duplicate
        case complete(Joined)
        /// The chunk, or its whole context, is refused.
        case refused(Dropped)
    }

    private struct Context: Sendable {
        var total: Int
        var totalSize: Int
        var firstArrival: Date
        var sentAt: Date?
        var parts: [Int: Data] = [:]
        var bytes = 0
        var messageIDs: [String] = []
    }

    private struct Key: Hashable, Sendable {
        var senderID: String
        var contextID: String
    }

    public let limits: Limits
    private var contexts: [Key: Context] = [:]
    /// Contexts given up since start: expired, pushed out, or lying about themselves.
    public private(set) var droppedCount = 0
    /// Contexts pushed out to make room for newer ones, until `takeEvicted()`.
    private var evicted: [Dropped] = []

    /// The contexts pushed out since the last call, so their holder can forget them too.
    public mutating func takeEvicted() -> [Dropped] {
        defer { evicted = [] }
        return evicted
    }

    private mutating func evictOldest(sparing key: Key, reason: String) -> Bool {
        guard let oldest = contexts.filter({ $0.key != key }).min(by: { $0.value.firstArrival < $1.value.firstArrival })
        else { return false }
        contexts[oldest.key] = nil
        droppedCount += 1
        evicted.append(
            Dropped(
                senderID: oldest.key.senderID, contextID: oldest.key.contextID, reason: reason,
                messageIDs: oldest.value.messageIDs))
        return true
    }

    public init(limits: Limits = Limits()) {
        self.limits = limits
    }

    /// Contexts waiting for parts.
    public var pendingContexts: Int { contexts.count }

    public mutating func add(_ chunk: Chunk, now: Date) -> Outcome {
        let key = Key(senderID: chunk.senderID, contextID: chunk.position.contextID)
        func refuse(_ reason: String) -> Outcome {
            var ids = contexts.removeValue(forKey: key)?.messageIDs ?? []
            if !ids.contains(chunk.messageID) { ids.append(chunk.messageID) }
            droppedCount += 1
            return .refused(
                Dropped(senderID: chunk.senderID, contextID: chunk.position.contextID, reason: reason, messageIDs: ids))
        }
        let position = chunk.position
        // Checked as Int64 before any conversion, so no sender's number can trap.
        guard position.total >= 1, position.total <= Int64(limits.maximumChunks) else {
            return refuse("it says \(position.total) chunks; 1 to \(limits.maximumChunks) are accepted")
        }
        guard position.totalSize >= 1, position.totalSize <= Int64(limits.maximumTotalBytes) else {
            return refuse("it says \(position.totalSize) bytes in all; 1 to \(limits.maximumTotalBytes) are accepted")
        }
        // The SDKs count from 0; 1-based numbering is taken too, and told apart once all are there.
        guard position.current >= 0, position.current <= position.total else {
            return refuse("chunk \(position.current) of \(position.total) is out of range")
        }
        guard chunk.bytes.count <= limits.maximumChunkBytes else {
            return refuse(
                "chunk \(position.current) carries \(chunk.bytes.count) bytes, above the cap of \(limits.maximumChunkBytes)"
            )
        }
        let total = Int(position.total), totalSize = Int(position.totalSize), current = Int(position.current)
        if var context = contexts[key] {
            guard context.total == total, context.totalSize == totalSize else {
                return refuse(
                    "chunk \(current) says \(total) chunks and \(totalSize) bytes; earlier ones said \(context.total) and \(context.totalSize)"
                )
            }
            context.messageIDs.append(chunk.messageID)
            if context.parts[current] != nil {
                contexts[key] = context
                return .duplicate
            }
            context.parts[current] = chunk.bytes
            context.bytes += chunk.bytes.count
            if let sent = chunk.sentAt { context.sentAt = min(context.sentAt ?? sent, sent) }
            contexts[key] = context
        } else {
            if contexts.count >= limits.maximumContexts {
                _ = evictOldest(
                    sparing: key,
                    reason:
                        "more than \(limits.maximumContexts) TaskData were being joined at once; the oldest was given up"
                )
            }
            contexts[key] = Context(
                total: total, totalSize: totalSize, firstArrival: now, sentAt: chunk.sentAt,
                parts: [current: chunk.bytes], bytes: chunk.bytes.count, messageIDs: [chunk.messageID])
        }
        while contexts.values.reduce(0, { $0 + $1.bytes }) > limits.maximumHeldBytes {
            guard
                evictOldest(
                    sparing: key,
                    reason: "more than \(limits.maximumHeldBytes) bytes were held; the oldest TaskData was given up")
            else {
                return refuse("it needs more than the \(limits.maximumHeldBytes) bytes held at once")
            }
        }
        guard let context = contexts[key] else { return .waiting(received: 0, total: total) }
        if context.bytes > context.totalSize {
            return refuse("its chunks carry more than the \(context.totalSize) bytes it says it has")
        }
        guard context.parts.count == total else { return .waiting(received: context.parts.count, total: total) }
        let numbers = context.parts.keys.sorted()
        guard numbers == Array(0..<total) || numbers == Array(1...total) else {
            return refuse(
                "its chunks are numbered \(numbers.map(String.init).joined(separator: ", ")), not 0 to \(total - 1)")
        }
        guard context.bytes == context.totalSize else {
            return refuse("its chunks carry \(context.bytes) bytes; it says \(context.totalSize)")
        }
        var joined = Data(capacity: context.bytes)
        for number in numbers { joined.append(context.parts[number] ?? Data()) }
        contexts[key] = nil
        return .complete(
            Joined(
                senderID: chunk.senderID, contextID: chunk.position.contextID, bytes: joined,
                sentAt: context.sentAt, messageIDs: context.messageIDs))
    }

    /// Drops the contexts incomplete `limits.lifetime` after their first chunk, and returns them.
    public mutating func expire(now: Date) -> [Dropped] {
        var dropped: [Dropped] = []
        for (key, context) in contexts where now.timeIntervalSince(context.firstArrival) >= limits.lifetime {
            contexts[key] = nil
            droppedCount += 1
            dropped.append(
                Dropped(
                    senderID: key.senderID, contextID: key.contextID,
                    reason:
                        "only \(context.parts.count) of \(context.total) chunks arrived in \(Int(limits.lifetime)) s",
                    messageIDs: context.messageIDs))
        }
        return dropped.sorted { ($0.senderID, $0.contextID) < ($1.senderID, $1.contextID) }
    }

    /// Decodes a TaskData message's content: base64 as agrirouter carries it. A zip sent raw
    /// (starting "PK") is taken as it is, since some senders skip the base64. nil if it is neither.
    public static func rawContent(_ content: Data) -> Data? {
        if content.starts(with: [0x50, 0x4B, 0x03, 0x04]) || content.starts(with: [0x50, 0x4B, 0x05, 0x06]) {
            return content
        }
        return Data(base64Encoded: content)
    }

    /// Cuts `content` into chunk payloads of at most `size` bytes (the SDKs' 767,997), numbered from 0,
    /// each carried base64 as agrirouter expects. One part, without chunk component, when it fits.
    public static func split(_ content: Data, contextID: String, size: Int = AgrirouterLimits.payloadBytes) -> [(
        position: ChunkPosition?, payload: Data
    )] {
        let size = max(1, size)
        guard content.count > size else { return [(nil, Data(content.base64EncodedString().utf8))] }
        var parts: [(position: ChunkPosition?, payload: Data)] = []
        let total = (content.count + size - 1) / size
        var start = content.startIndex
        var number: Int64 = 0
        while start < content.endIndex {
            let end = content.index(start, offsetBy: size, limitedBy: content.endIndex) ?? content.endIndex
            parts.append(
                (
                    ChunkPosition(
                        contextID: contextID, current: number, total: Int64(total), totalSize: Int64(content.count)),
                    Data(content[start..<end].base64EncodedString().utf8)
                ))
            number += 1
            start = end
        }
        return parts
    }
}
