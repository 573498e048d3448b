import Foundation

/// TaskData exports made in tests: a stored (uncompressed) zip by the zip format's rules, holding
/// TASKDATA/TASKDATA.XML with square fields and, to make it as large as a real export with logged
/// data, a padding file the fields reader never opens.
public enum TaskDataZip {
    /// `names` as square partfields of about 100 m a side, placed apart, and `padding` bytes of noise.
    public static func make(fields names: [String], padding: Int = 0, seed: UInt64 = 1) -> Data {
        var xml =
            #"<?xml version="1.0" encoding="UTF-8"?>"# + "\n"
            + #"<ISO11783_TaskData VersionMajor="4" VersionMinor="0" DataTransferOrigin="1" ManagementSoftwareManufacturer="Test">"#
            + "\n"
        for (index, name) in names.enumerated() {
            let south = 52.0 + Double(index) * 0.01, west = 8.0
            let corners = [
                (south, west), (south + 0.0009, west), (south + 0.0009, west + 0.0015), (south, west + 0.0015),
            ]
            xml += #"<PFD A="PFD\#(index + 1)" C="\#(name)" D="0"><PLN A="1"><LSG A="1">"#
            xml += corners.map { #"<PNT A="2" C="\#($0.0)" D="\#($0.1)"/>"# }.joined()
            xml += "</LSG></PLN></PFD>\n"
        }
        xml += "</ISO11783_TaskData>\n"
        var random = SplitMix64(seed: seed)
        let noise = (0..<padding).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        return Data(
            archive(
                [("TASKDATA/TASKDATA.XML", Array(xml.utf8))]
                    + (padding > 0 ? [("TASKDATA/LOG/PADDING.BIN", noise)] : [])))
    }

    /// A zip of one TASKDATA.XML as given, for exports made by hand.
    public static func make(xml: String) -> Data {
        Data(archive([("TASKDATA/TASKDATA.XML", Array(xml.utf8))]))
    }

    /// One partfield whose boundary goes round the same four points `count` times over, with a hole
    /// that does the same: small to send, and costly to a check that compares every point with every other.
    public static func repeatingBoundary(count: Int) -> Data {
        func ring(_ count: Int, size: Double) -> String {
            let corners = [
                (52.0 - size, 8.0 - size), (52.0 - size, 8.0 + size), (52.0 + size, 8.0 + size),
                (52.0 + size, 8.0 - size),
            ]
            return (0..<count).map { #"<PNT A="2" C="\#(corners[$0 % 4].0)" D="\#(corners[$0 % 4].1)"/>"# }.joined()
        }
        return make(
            xml:
                #"<?xml version="1.0" encoding="UTF-8"?><ISO11783_TaskData VersionMajor="4" VersionMinor="0" DataTransferOrigin="1">"#
                + #"<PFD A="PFD1" C="Loop" D="0"><PLN A="1"><LSG A="1">\#(ring(count, size: 0.001))</LSG><LSG A="2">\#(ring(count - 1, size: 0.0005))</LSG>"#
                + "</PLN></PFD></ISO11783_TaskData>")
    }

    static func archive(_ entries: [(name: String, bytes: [UInt8])]) -> [UInt8] {
        var out: [UInt8] = [], directory: [UInt8] = []
        for entry in entries {
            let offset = UInt32(out.count), name = Array(entry.name.utf8), crc = crc32(entry.bytes),
                size = UInt32(entry.bytes.count)
            out += le32(0x0403_4B50) + le16(20) + le16(0) + le16(0) + le16(0) + le16(0x21)
            out += le32(crc) + le32(size) + le32(size) + le16(UInt16(name.count)) + le16(0) + name + entry.bytes
            directory += le32(0x0201_4B50) + le16(20) + le16(20) + le16(0) + le16(0) + le16(0) + le16(0x21)
            directory +=
                le32(crc) + le32(size) + le32(size) + le16(UInt16(name.count)) + le16(0) + le16(0) + le16(0) + le16(0)
            directory += le32(0) + le32(offset) + name
        }
        let count = UInt16(entries.count)
        return out + directory + le32(0x0605_4B50) + le16(0) + le16(0) + le16(count) + le16(count)
            + le32(UInt32(directory.count)) + le32(UInt32(out.count)) + le16(0)
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var table = [UInt32](repeating: 0, count: 256)
        for index in 0..<256 {
            var value = UInt32(index)
            for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
            table[index] = value
        }
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * $0)) & 0xFF) } }
}
