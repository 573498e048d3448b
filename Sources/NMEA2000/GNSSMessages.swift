import GNSS

/// The PGNs a GNSS receiver sends that agrigps reads, with the layouts of canboat's PGN database
/// (analyzer/pgn-generated-data.h) and gpsd's drivers/driver_nmea2000.c. Values are little-endian;
/// an all-ones value means "not available".
public enum GNSSPGN {
    public static let positionRapid: UInt32 = 129_025
    public static let courseAndSpeed: UInt32 = 129_026
    /// The one read here that comes as a fast packet.
    public static let positionData: UInt32 = 129_029
    public static let dops: UInt32 = 129_539
    public static let addressClaim: UInt32 = 60_928
}

/// PGN 129029, GNSS Position Data: the one message with the fix's method (RTK and the rest).
public struct GNSSPositionData: Sendable, Equatable {
    /// 129029's method, ISO 11783's and NMEA 2000's GNS_METHOD.
    public enum Method: UInt8, Sendable {
        case noGNSS = 0, gnss, dgnss, preciseGNSS, rtkFixed, rtkFloat, deadReckoning, manual, simulated
        case error = 14, notAvailable = 15
    }

    /// Seconds since 1970, nil where the receiver gives no date or time.
    public var time: Double?
    public var latitude: Double?
    public var longitude: Double?
    /// Metres above the WGS 84 ellipsoid.
    public var altitude: Double?
    public var method: Method
    public var satellites: Int?
    public var hdop: Double?
    public var pdop: Double?

    /// nil for fewer than the 43 bytes before the reference stations, or a method of 9 to 13 (reserved).
    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 43, let method = Method(rawValue: bytes[31] >> 4) else { return nil }
        self.method = method
        let days = Little.u16(bytes, 1)
        let tenthsOfMillis = Little.u32(bytes, 3)
        if days != 0xFFFF, tenthsOfMillis <= 864_010_000 {
            time = Double(days) * 86_400 + Double(tenthsOfMillis) / 10_000
        }
        latitude = Little.i64(bytes, 7).flatMap { Self.degrees($0, limit: 90) }
        longitude = Little.i64(bytes, 15).flatMap { Self.degrees($0, limit: 180) }
        altitude = Little.i64(bytes, 23).map { Double($0) * 1e-6 }.flatMap { abs($0) <= 100_000 ? $0 : nil }
        satellites = bytes[33] == 0xFF ? nil : Int(bytes[33])
        hdop = Little.i16(bytes, 34).map { Double($0) / 100 }
        pdop = Little.i16(bytes, 36).map { Double($0) / 100 }
    }

    /// 1e-16 degree units, within ±limit.
    static func degrees(_ raw: Int64, limit: Double) -> Double? {
        let value = Double(raw) * 1e-16
        return abs(value) <= limit ? value : nil
    }

    /// The fix quality the method names, or nil where it names no fix. gpsd 3.22 reports methods 3 to
    /// 5 as a plain fix; the bus keeps what the receiver said.
    public var quality: FixQuality? {
        switch method {
        case .gnss, .preciseGNSS: return .autonomous
        case .dgnss: return .dgps
        case .rtkFixed: return .rtkFixed
        case .rtkFloat: return .rtkFloat
        case .deadReckoning: return .deadReckoning
        case .manual: return .manual
        case .simulated: return .simulated
        case .noGNSS, .error, .notAvailable: return nil
        }
    }
}

/// PGN 129025, Position Rapid Update: a position in 1e-7 degrees and nothing about its quality.
public struct GNSSPositionRapid: Sendable, Equatable {
    public var latitude: Double
    public var longitude: Double

    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8, let north = Little.i32(bytes, 0), let east = Little.i32(bytes, 4) else { return nil }
        let latitude = Double(north) * 1e-7
        let longitude = Double(east) * 1e-7
        guard abs(latitude) <= 90, abs(longitude) <= 180 else { return nil }
        (self.latitude, self.longitude) = (latitude, longitude)
    }
}

/// PGN 129026, COG & SOG Rapid Update: course and speed over ground, as gpsd takes them for its
/// reports of an NMEA 2000 receiver. 0xFFFF is not available and 0xFFFE and 0xFFFD out of range.
public struct GNSSCourseAndSpeed: Sendable, Equatable {
    /// Degrees from true north; nil unless the receiver gave it against true north.
    public var course: Double?
    /// Metres a second.
    public var speed: Double?

    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return nil }
        let trueNorth = bytes[1] & 0x03 == 0
        let (course, speed) = (Little.u16(bytes, 2), Little.u16(bytes, 4))
        // 0.0001 rad: a whole turn is 62,832.
        self.course = trueNorth && course < 62_832 ? Double(course) * 0.0001 * 180 / .pi : nil
        self.speed = speed < 0xFFFD ? Double(speed) * 0.01 : nil
    }
}

/// PGN 129539, GNSS DOPs: the only source of gpsd's fix mode on this bus.
public struct GNSSDOPs: Sendable, Equatable {
    /// 0 1D, 1 2D, 2 3D, 3 auto (GNSS_MODE); 6 error and 7 unavailable.
    public var actualMode: UInt8
    public var hdop: Double?

    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return nil }
        let desired = bytes[1] & 0x07
        let actual = (bytes[1] >> 3) & 0x07
        // gpsd: some Garmin plotters say "auto" as the actual mode; the desired one is meant.
        actualMode = actual == 3 && desired != 3 ? desired : actual
        hdop = Little.i16(bytes, 2).map { Double($0) / 100 }
    }

    /// What gpsd makes of it: 2 or 3 dimensions, or none.
    public var dimension: FixDimension? {
        switch actualMode {
        case 1: return .twoD
        case 2: return .threeD
        default: return nil
        }
    }
}

/// PGN 60928, ISO Address Claim: the sender's 64-bit NAME, which says who made it.
public struct DeviceName: Sendable, Hashable {
    public var raw: UInt64

    public init?(_ bytes: [UInt8]) {
        guard bytes.count >= 8 else { return nil }
        raw = (0..<8).reduce(0) { $0 | UInt64(bytes[$1]) << (8 * UInt64($1)) }
    }

    /// Bits 21 to 31, after the 21-bit identity number.
    public var manufacturerCode: Int { Int((raw >> 21) & 0x7FF) }

    /// Makers of receivers found on tractors and boats (canboat's MANUFACTURER_CODE); others by number.
    public static let makers: [Int: String] = [
        88: "Hemisphere GPS", 135: "Airmar", 137: "Maretron", 140: "Lowrance", 229: "Garmin", 275: "Navico",
        305: "NovAtel",
        717: "Yacht Devices", 1218: "Septentrio", 1851: "Raymarine", 1855: "Furuno", 1856: "Trimble", 1857: "Simrad",
    ]

    public var manufacturer: String { Self.makers[manufacturerCode] ?? "manufacturer \(manufacturerCode)" }

    /// What the controller does (bits 40 to 47). Codes below 128 mean the same in every industry;
    /// from 128 on they mean something only with the industry group and the device class.
    public var function: Int { Int((raw >> 40) & 0xFF) }
    /// Bits 49 to 55: the vehicle system, 0 for a controller of no particular system.
    public var deviceClass: Int { Int((raw >> 49) & 0x7F) }
    /// Bits 60 to 62: 2 is agriculture and forestry.
    public var industryGroup: Int { Int((raw >> 60) & 0x7) }

    /// ISO 11783's tractor ECU: function 134 of device class 0 in agriculture.
    public var isTractorECU: Bool { function == 134 && deviceClass == 0 && industryGroup == 2 }
    /// An engine controller: function 0 in every industry.
    public var isEngine: Bool { function == 0 }
}

/// Little-endian fields, each nil when all ones ("not available").
enum Little {
    static func u16(_ bytes: [UInt8], _ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * UInt32($1)) }
    }

    static func i16(_ bytes: [UInt8], _ at: Int) -> Int16? {
        let value = Int16(bitPattern: u16(bytes, at))
        return value == .max ? nil : value
    }

    static func i32(_ bytes: [UInt8], _ at: Int) -> Int32? {
        let value = Int32(bitPattern: u32(bytes, at))
        return value == .max ? nil : value
    }

    static func i64(_ bytes: [UInt8], _ at: Int) -> Int64? {
        let value = Int64(bitPattern: (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * UInt64($1)) })
        return value == .max ? nil : value
    }
}
