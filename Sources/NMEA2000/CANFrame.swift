/// One extended (29-bit) CAN frame as NMEA 2000 / ISO 11783 use them: a priority, a parameter group
/// number (PGN), a source address and up to 8 data bytes. Standard 11-bit frames carry none of these
/// and are never made into a `CANFrame`.
public struct CANFrame: Sendable, Hashable {
    /// Seconds since 1970, as the capture stamped it; nil where the capture has no time.
    public var time: Double?
    /// The 29-bit identifier.
    public var identifier: UInt32
    public var data: [UInt8]

    /// nil unless `identifier` fits 29 bits and `data` holds at most 8 bytes.
    public init?(time: Double? = nil, identifier: UInt32, data: [UInt8]) {
        guard identifier <= 0x1FFF_FFFF, data.count <= 8 else { return nil }
        self.time = time
        self.identifier = identifier
        self.data = data
    }

    public var priority: Int { Int(identifier >> 26) & 0x7 }
    public var source: UInt8 { UInt8(identifier & 0xFF) }

    /// ISO 11783-3 / J1939: PDU format below 240 is addressed (PDU1), its PS byte the destination and
    /// not part of the PGN; from 240 on the PS byte is the group extension (PDU2).
    public var pgn: UInt32 {
        let dataPage = (identifier >> 24) & 0x3  // extended data page and data page
        let format = (identifier >> 16) & 0xFF
        let specific = (identifier >> 8) & 0xFF
        return dataPage << 16 | format << 8 | (format < 240 ? 0 : specific)
    }

    /// The addressee of a PDU1 frame (255: everyone); nil for a broadcast PGN.
    public var destination: UInt8? {
        let format = (identifier >> 16) & 0xFF
        return format < 240 ? UInt8((identifier >> 8) & 0xFF) : nil
    }
}
