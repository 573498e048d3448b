import BlockingWork
import Clocks
import GPSDReplay
import NMEA2000
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A candump recording written onto a virtual CAN interface for a replay through a private gpsd:
/// at its recorded pace, or at a steady 250 frames a second (five times a busy receiver's), which gpsd
/// and the bus listener keep up with on a small box; faster, gpsd's per-sender devices fall behind one
/// another and its sockets' queues overrun.
public final class CANReplayFeed: ReplayFeed {
    public let device: String
    public var endsWithFeed: Bool { true }
    /// Frames a second when not at the recorded pace.
    public static let rate = 250.0
    private let writer: VirtualBusWriter
    private let frames: [CANFrame]
    private let realTime: Bool
    private let begun = Atomic<Bool>(false)
    private let stopped = Atomic<Bool>(false)
    private let fedAt = Mutex<Double?>(nil)
    private let problem = Mutex<CANBusError?>(nil)

    public init(log: CandumpLog, interface: String, realTime: Bool) throws(ReplayError) {
        do {
            writer = try VirtualBusWriter(interface: interface)
        } catch {
            throw .bus(error.description)
        }
        device = "nmea2000://" + interface
        frames = log.frames
        self.realTime = realTime
    }

    public var finishedAt: Double? { fedAt.withLock { $0 } }

    /// Why writing stopped before the end, if it did.
    public var failure: CANBusError? { problem.withLock { $0 } }

    public func begin() {
        guard !begun.exchange(true, ordering: .acquiringAndReleasing) else { return }
        // It sleeps between frames for the whole replay: a thread of its own.
        if !startThread(named: "agrigps-can-replay", { [self] in write() }) {
            problem.withLock { $0 = .failed(interface: writer.interface, call: "pthread_create", errno: EAGAIN) }
            fedAt.withLock { $0 = uptime() }
        }
    }

    public func stop() { stopped.store(true, ordering: .releasing) }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    private func write() {
        defer { fedAt.withLock { $0 = uptime() } }
        let start = uptime()
        let firstTime = frames.first?.time
        for (index, frame) in frames.enumerated() {
            let due = CandumpLog.due(frame, index: index, firstTime: firstTime, realTime: realTime, rate: Self.rate)
            guard wait(until: start + due) else { return }
            do {
                try writer.write(frame)
            } catch {
                problem.withLock { $0 = error }
                return
            }
        }
    }

    /// Sleeps until `moment` (monotonic), in steps short enough to notice a stop; false if stopped.
    private func wait(until moment: Double) -> Bool {
        while !isStopped {
            let left = moment - uptime()
            if left <= 0 { return true }
            usleep(UInt32(min(left, 0.05) * 1_000_000))
        }
        return false
    }
}
