import Foundation

/// Length-delimited protobuf framing, as `writeDelimitedTo` / `parseDelimitedFrom` do it:
/// a varint length, then that many bytes; frames are concatenated.
public enum DelimitedFrames {
    public static func join(_ frames: [Data]) -> Data {
        var out = Data()
        for frame in frames {
            var length = UInt64(frame.count)
            repeat {
                let low = UInt8(length & 0x7F)
                length >>= 7
                out.append(length == 0 ? low : low | 0x80)
            } while length != 0
            out.append(frame)
        }
        return out
    }

    /// Splits `data` into its frames; every byte must belong to one.
    public static func split(_ data: Data) throws(CodecError) -> [Data] {
        let bytes = [UInt8](data)
        var frames: [Data] = []
        var index = 0
        while index < bytes.count {
            var length: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard index < bytes.count, shift < 64 else { throw .truncatedFrame(index: frames.count) }
                let byte = bytes[index]
                index += 1
                length |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { break }
                shift += 7
            }
            guard length <= UInt64(bytes.count - index) else { throw .truncatedFrame(index: frames.count) }
            frames.append(Data(bytes[index..<(index + Int(length))]))
            index += Int(length)
        }
        return frames
    }
}
