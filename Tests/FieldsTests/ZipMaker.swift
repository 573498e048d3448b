import Foundation
import TestSupport

/// The ISOXML fixtures (see Fixtures/isoxml/PROVENANCE.md).
enum ISOXMLFixtures {
    static let directory = Fixtures.root.appendingPathComponent("Fixtures/isoxml")
    static let farmFactsZip = directory.appendingPathComponent("farmfacts_2021-04-09T15_33_26_taskdata.zip").path
    static let deutzFolder = directory.appendingPathComponent("deutz_export").path
    static let geobirdV3 = directory.appendingPathComponent("geobird_v3/TASKDATA.XML").path
    static let farmdocXML = directory.appendingPathComponent("farmdoc_field_export/TASKDATA.XML").path
}

/// Zip archives made in the test, written by the rules of the zip format (PKWARE's APPNOTE) rather
/// than by a library, so that they can lie where a hostile archive would.
enum ZipMaker {
    struct Entry {
        var name: String
        /// What the entry holds, as stored in the archive (already deflated for method 8).
        var data: [UInt8]
        var method: UInt16 = 0
        var crc: UInt32
        var uncompressedSize: UInt32

        /// Stored as it is, with its true size and CRC.
        static func stored(_ name: String, _ bytes: [UInt8]) -> Entry {
            Entry(name: name, data: bytes, method: 0, crc: crc32(bytes), uncompressedSize: UInt32(bytes.count))
        }
    }

    static func archive(_ entries: [Entry]) -> [UInt8] {
        var out: [UInt8] = []
        var directory: [UInt8] = []
        for entry in entries {
            let offset = UInt32(out.count)
            let name = Array(entry.name.utf8)
            out += le32(0x0403_4B50) + le16(20) + le16(0) + le16(entry.method) + le16(0) + le16(0x21)
            out +=
                le32(entry.crc) + le32(UInt32(entry.data.count)) + le32(entry.uncompressedSize)
                + le16(UInt16(name.count)) + le16(0)
            out += name + entry.data
            directory += le32(0x0201_4B50) + le16(20) + le16(20) + le16(0) + le16(entry.method) + le16(0) + le16(0x21)
            directory += le32(entry.crc) + le32(UInt32(entry.data.count)) + le32(entry.uncompressedSize)
            directory +=
                le16(UInt16(name.count)) + le16(0) + le16(0) + le16(0) + le16(0) + le32(0) + le32(offset) + name
        }
        let directoryOffset = UInt32(out.count)
        out += directory
        out += le32(0x0605_4B50) + le16(0) + le16(0) + le16(UInt16(entries.count)) + le16(UInt16(entries.count))
        out += le32(UInt32(directory.count)) + le32(directoryOffset) + le16(0)
        return out
    }

    /// `count` zero bytes as raw deflate: one fixed-Huffman block of a literal zero and then matches
    /// of 258 bytes at distance 1, about 1 bit of output for 160 bytes of input, as zip bombs do it.
    static func deflatedZeros(_ count: Int) -> [UInt8] {
        var bits = BitWriter()
        bits.write(1, count: 1)  // BFINAL
        bits.write(1, count: 2)  // BTYPE 01, fixed codes
        bits.writeCode(0x30, length: 8)  // literal 0
        var left = count - 1
        while left >= 258 {
            bits.writeCode(0xC5, length: 8)  // length code 285: 258 bytes
            bits.writeCode(0, length: 5)  // distance code 0: distance 1
            left -= 258
        }
        for _ in 0..<left { bits.writeCode(0x30, length: 8) }
        bits.writeCode(0, length: 7)  // end of block
        return bits.bytes
    }

    /// Deflate's bits go out least significant first; its Huffman codes most significant first.
    struct BitWriter {
        var bytes: [UInt8] = []
        var used = 8

        mutating func write(_ value: UInt32, count: Int) {
            for bit in 0..<count { push(UInt8((value >> UInt32(bit)) & 1)) }
        }

        mutating func writeCode(_ code: UInt32, length: Int) {
            for bit in stride(from: length - 1, through: 0, by: -1) { push(UInt8((code >> UInt32(bit)) & 1)) }
        }

        private mutating func push(_ bit: UInt8) {
            if used == 8 {
                bytes.append(0)
                used = 0
            }
            bytes[bytes.count - 1] |= bit << UInt8(used)
            used += 1
        }
    }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8((value >> (8 * UInt32($0))) & 0xFF) } }
}

/// TaskData text for hostile and hand-made cases.
enum TaskDataText {
    static func document(_ body: String, version: String = "4") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <ISO11783_TaskData VersionMajor="\(version)" VersionMinor="3" ManagementSoftwareManufacturer="Test" DataTransferOrigin="1">
        \(body)
        </ISO11783_TaskData>
        """
    }

    /// A partfield with one boundary ring (and holes), points given as (latitude, longitude).
    static func partfield(
        _ id: String, _ name: String, ring: [(Double, Double)], holes: [[(Double, Double)]] = [], extra: String = ""
    ) -> String {
        func points(_ ring: [(Double, Double)]) -> String {
            ring.map { #"<PNT A="2" C="\#($0.0)" D="\#($0.1)"/>"# }.joined(separator: "\n")
        }
        let holeText = holes.map { #"<LSG A="2">\#(points($0))</LSG>"# }.joined(separator: "\n")
        return """
            <PFD A="\(id)" C="\(name)" D="0">
              <PLN A="1"><LSG A="1">\(points(ring))</LSG>\(holeText)</PLN>\(extra)
            </PFD>
            """
    }
}
