#if canImport(Glibc)
import Glibc
#endif
import BlockingWork
import Clocks
import NMEA2000

/// Listens to a CAN interface for a while and says what is on it: the frames, and which sender is the
/// GNSS receiver.
public enum BusScan {
    /// Reads `interface` for `seconds` on a thread of its own (reads block), into a finder.
    public static func listen(to interface: String, for seconds: Double) async throws(CANBusError) -> ReceiverFinder {
        let reader = try SocketCANReader(interface: interface)
        return try await onOwnThread { () throws(CANBusError) -> ReceiverFinder in
            var finder = ReceiverFinder()
            let end = uptime() + seconds
            while uptime() < end {
                if let frame = try reader.read(now: BusWatcher.wallSeconds) { finder.add(frame) }
            }
            return finder
        }
    }
}
