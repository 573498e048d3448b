import CSocketCAN
import GNSS
import NMEA2000

#if canImport(Glibc)
import Glibc
#endif

/// Why a CAN interface cannot be read, each saying what to look at.
public enum CANBusError: Error, Equatable, CustomStringConvertible {
    case badName(String)
    case noInterface(String)
    case interfaceDown(String)
    case notCAN(String)
    case noSocketCAN
    /// An interface with an adapter behind it, where only a virtual one may be written to.
    case notVirtual(String)
    case failed(interface: String, call: String, errno: Int32)

    public var description: String {
        switch self {
        case .badName(let name):
            return ReceiverSource.notAnInterfaceName(name)
        case .noInterface(let name):
            return
                "there is no CAN interface \(name): is the adapter plugged in and its driver loaded? (ip -details link show \(name))"
        case .notCAN(let name):
            return "\(name) is not a CAN interface (ip -details link show \(name) says what it is)"
        case .noSocketCAN:
            return
                "this kernel offers no SocketCAN: load its modules (modprobe can-raw) or use a kernel built with them"
        case .interfaceDown(let name):
            return
                "the CAN interface \(name) is down: bring it up at ISOBUS's 250 kbit/s (ip link set \(name) up type can bitrate 250000)"
        case .notVirtual(let name):
            return
                "\(name) is an adapter on a machine's bus, and agrigps transmits on none: a recording is replayed onto a virtual interface (ip link add vcan0 type vcan && ip link set vcan0 up)"
        case .failed(let name, let call, let number):
            return "\(name): \(call) failed: \(String(cString: strerror(number))) (errno \(number))"
        }
    }
}

/// A raw SocketCAN socket on one interface, for reading only: agrigps never transmits on the bus
/// (nothing here writes), so a machine's bus sees no frame from it. Only extended data frames are
/// kept; standard, remote and error frames are passed over. Reads block for at most a second, so a
/// loop on a thread of its own can notice it should stop.
public final class SocketCANReader: @unchecked Sendable {
    public let interface: String
    private let descriptor: Int32

    /// A Linux interface name: IFNAMSIZ is 16 with its NUL.
    public static func checkName(_ name: String) throws(CANBusError) {
        guard ReceiverSource.isInterfaceName(name) else { throw .badName(name) }
    }

    /// `only`: the PGNs to read, the rest dropped by the kernel (a filter on the socket); nil for all.
    public init(interface: String, only pgns: [UInt32]? = nil) throws(CANBusError) {
        try Self.checkName(interface)
        let index = if_nametoindex(interface)
        guard index != 0 else {
            throw errno == ENODEV
                ? .noInterface(interface) : .failed(interface: interface, call: "if_nametoindex", errno: errno)
        }
        let descriptor = socket(PF_CAN, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), CAN_RAW)
        guard descriptor >= 0 else {
            throw errno == EAFNOSUPPORT
                ? .noSocketCAN : .failed(interface: interface, call: "socket(PF_CAN)", errno: errno)
        }
        var timeout = timeval(tv_sec: 1, tv_usec: 0)
        var address = sockaddr_can()
        address.can_family = sa_family_t(AF_CAN)
        address.can_ifindex = Int32(bitPattern: index)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_can>.size))
            }
        }
        var timed = setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        if timed == 0, let pgns {
            let filters = pgns.map(Self.filter(for:))
            timed = filters.withUnsafeBufferPointer {
                setsockopt(
                    descriptor, agrigps_sol_can_raw, Int32(CAN_RAW_FILTER), $0.baseAddress,
                    socklen_t(MemoryLayout<can_filter>.stride * $0.count))
            }
        }
        guard bound == 0, timed == 0 else {
            let number = errno
            Glibc.close(descriptor)
            switch number {
            case ENETDOWN: throw .interfaceDown(interface)
            case ENODEV, EINVAL:
                throw bound != 0 ? .notCAN(interface) : .failed(interface: interface, call: "setsockopt", errno: number)
            default: throw .failed(interface: interface, call: bound != 0 ? "bind" : "setsockopt", errno: number)
            }
        }
        self.interface = interface
        self.descriptor = descriptor
    }

    deinit { Glibc.close(descriptor) }

    /// The kernel's filter for one PGN's extended frames from any sender: the PGN's bits of the
    /// identifier, and for a PDU1 PGN (PF below 240) not its destination byte.
    public static func filter(for pgn: UInt32) -> can_filter {
        let pdu1 = (pgn >> 8) & 0xFF < 0xF0
        let mask: UInt32 = pdu1 ? 0x03FF_0000 : 0x03FF_FF00
        return can_filter(can_id: ((pgn << 8) & mask) | CAN_EFF_FLAG, can_mask: mask | CAN_EFF_FLAG)
    }

    /// The next extended data frame, or nil when a second passed without one.
    public func read(now: () -> Double) throws(CANBusError) -> CANFrame? {
        var frame = can_frame()
        let count = Glibc.read(descriptor, &frame, MemoryLayout<can_frame>.size)
        guard count == MemoryLayout<can_frame>.size else {
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return nil }
            if count < 0, errno == ENETDOWN { throw .interfaceDown(interface) }
            if count < 0, errno == ENODEV { throw .noInterface(interface) }
            if count < 0 { throw .failed(interface: interface, call: "read", errno: errno) }
            return nil  // a short read is no classic frame
        }
        let identifier = frame.can_id
        guard identifier & CAN_EFF_FLAG != 0, identifier & (CAN_RTR_FLAG | CAN_ERR_FLAG) == 0 else { return nil }
        let length = min(Int(frame.len), 8)
        let data = withUnsafeBytes(of: frame.data) { Array($0.prefix(length)) }
        return CANFrame(time: now(), identifier: identifier & CAN_EFF_MASK, data: data)
    }
}
