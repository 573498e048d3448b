/// NMEA 2000's fast-packet transport: a message of up to 223 bytes in up to 32 frames. The first
/// frame's byte 0 holds a 3-bit sequence id and frame counter 0, byte 1 the length, then 6 bytes;
/// each later frame holds its counter and 7 bytes. One message is joined per sender and PGN at a time.
public struct FastPacketJoiner: Sendable {
    public static let longest = 223

    struct Partial {
        var sequence: UInt8
        var length: Int
        var next: UInt8
        var bytes: [UInt8]
    }

    private var partial: [UInt32: Partial] = [:]
    /// Frames that belonged to no message being joined: a lost first frame, a counter out of order, a
    /// length beyond 223.
    public private(set) var dropped = 0

    public init() {}

    /// The whole message once `frame` completes it.
    public mutating func add(_ frame: CANFrame) -> [UInt8]? {
        guard let first = frame.data.first else {
            dropped += 1
            return nil
        }
        let key = frame.pgn << 8 | UInt32(frame.source)
        let sequence = first >> 5
        let counter = first & 0x1F
        if counter == 0 {
            guard frame.data.count >= 2, Int(frame.data[1]) <= Self.longest else {
                dropped += 1
                return nil
            }
            if partial[key] != nil { dropped += 1 }  // the one before never completed
            let length = Int(frame.data[1])
            let start = Partial(
                sequence: sequence, length: length, next: 1, bytes: Array(frame.data.dropFirst(2).prefix(length)))
            return finish(start, key: key)
        }
        guard var joining = partial[key], joining.sequence == sequence, joining.next == counter else {
            dropped += 1
            return nil
        }
        joining.bytes += frame.data.dropFirst().prefix(joining.length - joining.bytes.count)
        joining.next += 1
        return finish(joining, key: key)
    }

    private mutating func finish(_ joining: Partial, key: UInt32) -> [UInt8]? {
        if joining.bytes.count >= joining.length {
            partial[key] = nil
            return joining.bytes
        }
        partial[key] = joining
        return nil
    }
}
