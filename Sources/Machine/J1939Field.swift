/// What a J1939 / ISO 11783 field holds: a value, or one of the two reserved answers. "Not available"
/// (the sender has no such signal) and "error" (it has one and it failed) are never a value, least
/// of all 0: a hitch whose sensor failed is not a hitch out of work.
public enum Measured<Value: Sendable & Equatable>: Sendable, Equatable {
    case value(Value)
    case error
    case notAvailable

    /// The value, nil for either reserved answer.
    public var value: Value? {
        if case .value(let value) = self { return value }
        return nil
    }

    public func map<Other>(_ transform: (Value) -> Other) -> Measured<Other> {
        switch self {
        case .value(let value): return .value(transform(value))
        case .error: return .error
        case .notAvailable: return .notAvailable
        }
    }

    public func flatMap<Other>(_ transform: (Value) -> Measured<Other>) -> Measured<Other> {
        switch self {
        case .value(let value): return transform(value)
        case .error: return .error
        case .notAvailable: return .notAvailable
        }
    }
}

/// Reads fields out of a frame's 8 data bytes by SAE J1939-71's conventions for parameter ranges:
/// a scaled value is valid up to 0xFA, 0xFAFF or 0xFAFFFFFF; above that the top byte says error
/// (0xFE) or not available (0xFF), and the rest is reserved, read as not available. Multi-byte
/// fields are little-endian. Every read is of a fixed position in a frame checked to hold 8 bytes.
struct J1939Field {
    let data: [UInt8]

    /// nil unless the frame has its full 8 bytes: every message read here is defined with 8.
    init?(_ data: [UInt8]) {
        guard data.count == 8 else { return nil }
        self.data = data
    }

    /// One byte at `index`, scaled: `raw × scale + offset`.
    func u8(_ index: Int, scale: Double = 1, offset: Double = 0) -> Measured<Double> {
        Self.classify(UInt32(data[index]), validMax: 0xFA, topShift: 0).map { Double($0) * scale + offset }
    }

    /// Two bytes from `index`, least significant first, scaled.
    func u16(_ index: Int, scale: Double, offset: Double = 0) -> Measured<Double> {
        let raw = UInt32(data[index]) | UInt32(data[index + 1]) << 8
        return Self.classify(raw, validMax: 0xFAFF, topShift: 8).map { Double($0) * scale + offset }
    }

    /// Four bytes from `index`, least significant first, scaled.
    func u32(_ index: Int, scale: Double) -> Measured<Double> {
        let raw = (0..<4).reduce(UInt32(0)) { $0 | UInt32(data[index + $1]) << (8 * UInt32($1)) }
        return Self.classify(raw, validMax: 0xFAFF_FFFF, topShift: 24).map { Double($0) * scale }
    }

    /// A two-bit state at byte `index`, bit `shift`: 00 off, 01 on, 10 error, 11 not available.
    func flag(_ index: Int, shift: Int) -> Measured<Bool> {
        switch (data[index] >> UInt8(shift)) & 0x3 {
        case 0: return .value(false)
        case 1: return .value(true)
        case 2: return .error
        default: return .notAvailable
        }
    }

    /// `bits` bits at byte `index`, bit `shift`, with all ones meaning not available.
    func bits(_ index: Int, shift: Int, count bits: Int) -> Measured<Int> {
        let mask = (1 << bits) - 1
        let raw = (Int(data[index]) >> shift) & mask
        return raw == mask ? .notAvailable : .value(raw)
    }

    private static func classify(_ raw: UInt32, validMax: UInt32, topShift: UInt32) -> Measured<UInt32> {
        if raw <= validMax { return .value(raw) }
        return raw >> topShift == 0xFE ? .error : .notAvailable
    }
}
