import BlockingWork
import Clocks
import FoundationEssentials
import GNSS
import Machine
import NMEA2000
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Listens to the receiver's CAN interface beside gpsd, for as long as the daemon runs: it keeps the
/// bus overlay (the receiver's 129029 for each report) and a line on what the bus shows. While the
/// interface cannot be read (no adapter, down) it says why and tries again every few seconds.
public final class BusWatcher: Sendable {
    public let interface: String
    private let state: Mutex<State>

    struct State {
        var overlay: BusOverlay
        /// The machine's own broadcasts on the same bus.
        var machine = MachineListener()
        var problem: CANBusError?
        var lastFrameAt: Double?
        /// gpsd's reports set aside as another sender's, and the device of the last one.
        var setAside = 0
        var setAsideDevice: String?
        /// When gpsd last gave a report of the receiver (or the watcher started), and the time of the
        /// last 129029 sampled in its stead.
        var lastAdmittedAt: Double
        var lastStandIn: Date?
        var lastStandInAt: Double?
        var stopped = false
        /// What the machine's controllers said when each of the newest fixes came, by the fix's time:
        /// a sample carries the machine as it was at its fix, however late the sample is taken.
        var machineAtFix: [(time: Date, snapshot: MachineSnapshot)] = []
        /// A recording replayed without gpsd: every fix is the receiver's own 129029, and time is the
        /// recording's (the newest frame's), however fast it is replayed.
        var withoutGPSD = false
        /// A bus of the machine's alone, beside a receiver elsewhere (`[machine] bus`): only the
        /// machine's messages and address claims are read, and no receiver is looked for.
        var machineOnly = false

        /// Now, on the clock frames are taken by.
        var now: Double { withoutGPSD ? lastFrameAt ?? 0 : uptime() }
    }

    /// Seconds between attempts to open an interface that could not be read.
    static let retry = 5.0
    /// Frames last heard longer ago than this make the line say the bus went quiet.
    static let quietAfter = 5.0

    /// `withoutGPSD`: frames come from a recording replayed with no interface and no gpsd (`BusReplay`).
    /// `machineOnly`: the machine's own bus, with the receiver elsewhere.
    public init(interface: String, address: UInt8?, withoutGPSD: Bool = false, machineOnly: Bool = false) {
        self.interface = interface
        var state = State(overlay: BusOverlay(address: address), lastAdmittedAt: uptime())
        state.withoutGPSD = withoutGPSD
        state.machineOnly = machineOnly
        self.state = Mutex(state)
    }

    /// Starts the reading thread; false if no thread could be had.
    public func start() -> Bool {
        startThread(named: "agrigps-can") { [self] in read() }
    }

    public func stop() { state.withLock { $0.stopped = true } }

    private var stopped: Bool { state.withLock { $0.stopped } }

    /// What the listener reads once a receiver is found: its positions, course and speed, DOPs and
    /// address claims, and the machine's own broadcasts. The kernel drops the rest, so other traffic
    /// on a busy bus costs the daemon nothing.
    public static let wanted =
        [GNSSPGN.positionData, GNSSPGN.positionRapid, GNSSPGN.courseAndSpeed, GNSSPGN.dops, GNSSPGN.addressClaim]
        + MachinePGN.all
    /// What a bus of the machine's alone is read for.
    static let machineWanted = [GNSSPGN.addressClaim] + MachinePGN.all

    private func read() {
        while !stopped {
            // The whole bus while looking for the receiver (and to say what is on a bus without
            // one), then only what it needs from it.
            let (narrow, machineOnly) = state.withLock { ($0.overlay.finder.hasReceiver, $0.machineOnly) }
            let reader: SocketCANReader
            do throws(CANBusError) {
                reader = try SocketCANReader(
                    interface: interface, only: machineOnly ? Self.machineWanted : narrow ? Self.wanted : nil)
                state.withLock { $0.problem = nil }
            } catch {
                state.withLock { $0.problem = error }
                pause(Self.retry)
                continue
            }
            do throws(CANBusError) {
                try follow(reader, narrow: narrow)
            } catch {
                state.withLock { $0.problem = error }
                pause(1)
            }
        }
    }

    /// Reads until stopped, or until the filter should change: a receiver found on the whole bus,
    /// or, narrowed to it, nothing of it for a while.
    private func follow(_ reader: SocketCANReader, narrow: Bool) throws(CANBusError) {
        var lastFrame = uptime()
        while !stopped {
            guard let frame = try reader.read(now: Self.wallSeconds) else {
                if narrow && uptime() - lastFrame > Self.quietAfter { return }
                continue
            }
            lastFrame = uptime()
            let pgn = frame.pgn
            let found = take(frame, now: lastFrame)
            if !narrow && (pgn == GNSSPGN.positionData || pgn == GNSSPGN.positionRapid) && found { return }
        }
    }

    /// Takes one frame that came at `now` (monotonic), from the interface or from a recording
    /// replayed without one (`BusReplay`); returns whether the receiver is known.
    @discardableResult
    public func take(_ frame: CANFrame, now: Double = uptime()) -> Bool {
        state.withLock {
            $0.overlay.add(frame, now: now)
            $0.machine.take(frame, at: now)
            $0.lastFrameAt = now
            return $0.overlay.finder.hasReceiver
        }
    }

    /// What the machine's controllers said lately (see `MachineListener`): at the newest frame's time
    /// in a recording replayed without gpsd, so that a tractor falling silent goes unknown after 3 s
    /// of the recording, not of the replay.
    public func machineSnapshot(now: Double? = nil) -> MachineSnapshot {
        state.withLock { $0.machine.snapshot(at: now ?? $0.now) }
    }

    /// Waits `seconds` (whole tenths) on this thread, ending early once stopped.
    private func pause(_ seconds: Double) {
        for _ in 0..<Int(seconds * 10) where !stopped { usleep(100_000) }
    }

    /// gpsd's report with what the bus knows of the same fix, or nil for another sender's report
    /// (see `BusOverlay`).
    public func adjust(_ report: PositionReport) -> PositionReport? {
        let now = uptime()
        return state.withLock { state in
            guard let taken = state.overlay.take(report, interface: interface, now: now) else {
                state.setAside += 1
                state.setAsideDevice = report.device
                return nil
            }
            state.lastAdmittedAt = now
            Self.noteMachine(&state, at: taken.time)
            return taken
        }
    }

    /// Fixes whose machine snapshot is kept (a few KiB each): ten minutes at 1 Hz, half a minute at
    /// 20 Hz, twelve seconds of a recording replayed at 1,000 frames a second ahead of the samples.
    static let machineFixesKept = 600

    private static func noteMachine(_ state: inout State, at time: Date?) {
        guard let time, state.machine.everHeard else { return }
        if state.machineAtFix.count >= machineFixesKept {
            state.machineAtFix.removeFirst(state.machineAtFix.count - machineFixesKept + 1)
        }
        state.machineAtFix.append((time, state.machine.snapshot(at: state.now)))
    }

    /// What the machine's controllers said when the fix of `time` came, if that fix is among the newest.
    public func machineSnapshot(atFix time: Date) -> MachineSnapshot? {
        state.withLock { state in state.machineAtFix.last { $0.time == time }?.snapshot }
    }

    /// gpsd says nothing of a receiver for this long, while it is on the bus: its own 129029 is sampled.
    static let gpsdQuietAfter = 2.0

    /// The receiver's own newest fix, once gpsd has reported nothing of it for 2 s though it sends
    /// positions; each 129029 once. gpsd 3.22 can stop reporting a bus for good: it reopens the
    /// interface while it is down and reads nothing from it once it is up again (seen in the field
    /// rig). Called by the gpsd reader's thread a few times a second.
    public func standIn() -> PositionReport? {
        let now = uptime()
        return state.withLock { state in
            guard now - state.lastAdmittedAt >= Self.gpsdQuietAfter else { return nil }
            return Self.nextOwnFix(&state, now: now)
        }
    }

    /// The receiver's newest fix from its own 129029, each once: a replay without gpsd samples these.
    public func ownFix(now: Double? = nil) -> PositionReport? {
        state.withLock { Self.nextOwnFix(&$0, now: now ?? $0.now) }
    }

    private static func nextOwnFix(_ state: inout State, now: Double) -> PositionReport? {
        guard let report = state.overlay.receiverReport(now: now), report.time != state.lastStandIn,
            state.overlay.inOrder(report)
        else { return nil }
        state.lastStandIn = report.time
        state.lastStandInAt = now
        noteMachine(&state, at: report.time)
        return report
    }

    /// Why the interface cannot be read now, in words; nil while it can.
    public var problem: String? {
        state.withLock { $0.problem.map { "\(interface): \($0.description)" } }
    }

    /// "can0: GNSS receiver at address 2 (Garmin)", or why the bus says nothing.
    public var summary: String {
        state.withLock { state in
            let now = state.now
            if let problem = state.problem { return "\(interface): \(problem.description)" }
            guard let last = state.lastFrameAt else { return "\(interface): no frames yet" }
            if state.machineOnly {
                return now - last > Self.quietAfter
                    ? "\(interface): none of the machine's messages for \(Int(now - last)) s"
                    : "\(interface): the machine's bus"
            }
            if now - last > Self.quietAfter { return "\(interface): no frames for \(Int(now - last)) s" }
            var line = "\(interface): \(state.overlay.finder.summary)"
            if state.withoutGPSD {
                line += "; its fixes read by agrigps from the recording, without gpsd"
            } else if let at = state.lastStandInAt, now - at <= Self.quietAfter {
                line += "; gpsd reports nothing of it, so its own 129029 is sampled"
            }
            if state.setAside > 0, let device = state.setAsideDevice {
                line += "; \(state.setAside) of gpsd's reports set aside as another sender's (last from \(device))"
            }
            return line
        }
    }

    /// A frame's time: the system clock's, as candump stamps it.
    static func wallSeconds() -> Double { WallClock.system.now().timeIntervalSince1970 }
}
