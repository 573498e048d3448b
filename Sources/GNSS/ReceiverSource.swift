/// Where the receiver is: whatever gpsd has (USB and serial receivers, handed to it by udev), or an
/// NMEA 2000 / ISOBUS receiver on a CAN interface, which gpsd reads as `nmea2000://IFACE:ADDRESS`
/// and agrigps listens to beside it. `[gnss] source` and `run --source` take the same text.
public enum ReceiverSource: Sendable, Equatable, CustomStringConvertible {
    case gpsd
    /// The interface, and the receiver's source address if given (else the one found on the bus).
    case nmea2000(interface: String, address: UInt8?)

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public var description: String
    }

    public static let expected =
        "\"gpsd\", or \"nmea2000://IFACE\" or \"nmea2000://IFACE:ADDRESS\" with a CAN interface such as can0 and an address from 0 to 253"

    public init(parsing text: String) throws(Invalid) {
        if text == "gpsd" {
            self = .gpsd
            return
        }
        guard text.hasPrefix("nmea2000://") else { throw Invalid(description: Self.expected) }
        let parts = text.dropFirst("nmea2000://".count).split(
            separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let interface = String(parts[0])
        guard Self.isInterfaceName(interface) else { throw Invalid(description: Self.notAnInterfaceName(interface)) }
        var address: UInt8?
        if parts.count == 2 {
            // 254 is the null address and 255 everyone's: neither is a receiver's.
            guard parts[1].utf8.count <= 3, let number = UInt8(parts[1]), number <= 253 else {
                throw Invalid(description: "the receiver's address must be a number from 0 to 253")
            }
            address = number
        }
        self = .nmea2000(interface: interface, address: address)
    }

    /// A Linux interface name: IFNAMSIZ is 16 with its NUL.
    public static func isInterfaceName(_ name: String) -> Bool {
        (1...15).contains(name.utf8.count)
            && name.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
                    || [0x2D, 0x5F, 0x2E].contains($0)
            }
    }

    public static func notAnInterfaceName(_ name: String) -> String {
        "'\(name)' is not a network interface name (1 to 15 letters, digits, '-', '_' or '.')"
    }

    public var description: String {
        switch self {
        case .gpsd: return "gpsd"
        case .nmea2000(let interface, let address): return "nmea2000://\(interface)" + (address.map { ":\($0)" } ?? "")
        }
    }
}
