import CSocketCAN
import NMEA2000

#if canImport(Glibc)
import Glibc
#endif

/// Writes frames onto a virtual CAN interface (vcan), so that gpsd and the bus listener read a
/// recording as they would a receiver. It refuses an interface with an adapter behind it: agrigps
/// transmits on no machine's bus, replays included.
public final class VirtualBusWriter: @unchecked Sendable {
    public let interface: String
    private let descriptor: Int32

    public init(interface: String) throws(CANBusError) {
        try SocketCANReader.checkName(interface)
        // The kernel's SocketCAN first: without it no interface name helps.
        let descriptor = socket(PF_CAN, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), CAN_RAW)
        guard descriptor >= 0 else {
            throw errno == EAFNOSUPPORT
                ? .noSocketCAN : .failed(interface: interface, call: "socket(PF_CAN)", errno: errno)
        }
        let index = if_nametoindex(interface)
        guard index != 0 else {
            let number = errno
            Glibc.close(descriptor)
            throw number == ENODEV
                ? .noInterface(interface) : .failed(interface: interface, call: "if_nametoindex", errno: number)
        }
        // An adapter (USB, PCI, SPI) has its device in sysfs; vcan has none.
        guard access("/sys/class/net/\(interface)/device", F_OK) != 0 else {
            Glibc.close(descriptor)
            throw .notVirtual(interface)
        }
        var address = sockaddr_can()
        address.can_family = sa_family_t(AF_CAN)
        address.can_ifindex = Int32(bitPattern: index)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_can>.size))
            }
        }
        guard bound == 0 else {
            let number = errno
            Glibc.close(descriptor)
            switch number {
            case ENETDOWN: throw .interfaceDown(interface)
            case ENODEV, EINVAL: throw .notCAN(interface)
            default: throw .failed(interface: interface, call: "bind", errno: number)
            }
        }
        self.interface = interface
        self.descriptor = descriptor
    }

    deinit { Glibc.close(descriptor) }

    /// Sends one extended frame; a full queue is waited out for up to a second.
    public func write(_ frame: CANFrame) throws(CANBusError) {
        var raw = can_frame()
        raw.can_id = (frame.identifier & CAN_EFF_MASK) | CAN_EFF_FLAG
        let length = min(frame.data.count, 8)
        raw.len = UInt8(length)
        withUnsafeMutableBytes(of: &raw.data) { bytes in
            for index in 0..<length { bytes[index] = frame.data[index] }
        }
        for _ in 0..<1_000 {
            if Glibc.write(descriptor, &raw, MemoryLayout<can_frame>.size) == MemoryLayout<can_frame>.size { return }
            switch errno {
            case ENOBUFS, EAGAIN, EINTR: usleep(1_000)
            case ENETDOWN: throw .interfaceDown(interface)
            default: throw .failed(interface: interface, call: "write", errno: errno)
            }
        }
        throw .failed(interface: interface, call: "write", errno: ENOBUFS)
    }
}
