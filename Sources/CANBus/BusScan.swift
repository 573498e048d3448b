import BlockingWork
import Clocks
import Machine
import NMEA2000

#if canImport(Glibc)
import Glibc
#endif

/// Listens to a CAN interface for a while and says what is on it: the frames, which sender is the
/// GNSS receiver, and what the machine's own controllers broadcast.
public enum BusScan {
    public struct Heard: Sendable {
        public var finder = ReceiverFinder()
        public var machine = MachineListener()
        /// When the last frame came, on the clock the machine's readings were timed by.
        public var lastTime: Double?

        public init() {}

        /// Takes a frame that came at `time`.
        public mutating func add(_ frame: CANFrame, at time: Double) {
            finder.add(frame)
            machine.take(frame, at: time)
            lastTime = time
        }
    }

    /// Reads `interface` for `seconds` on a thread of its own (reads block).
    public static func listen(to interface: String, for seconds: Double) async throws(CANBusError) -> Heard {
        let reader = try SocketCANReader(interface: interface)
        return try await onOwnThread { () throws(CANBusError) -> Heard in
            var heard = Heard()
            let end = uptime() + seconds
            while uptime() < end {
                if let frame = try reader.read(now: BusWatcher.wallSeconds) { heard.add(frame, at: uptime()) }
            }
            return heard
        }
    }
}
