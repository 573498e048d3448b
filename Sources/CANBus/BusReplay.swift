import Clocks
import GNSS
import GPSDReplay
import NMEA2000

#if canImport(Glibc)
import Glibc
#endif

/// A candump recording replayed with no CAN interface at all (many machines have no `vcan`): its
/// frames go, at pace, to a bus listener as an interface's frames would (`BusWatcher.take`), and the
/// receiver's own fixes, read by agrigps's NMEA 2000 decoding instead of gpsd's, are the replay's
/// reports, each with 129026's speed and course. gpsd is not involved.
public enum BusReplay {
    /// The device the replay's reports name.
    public static let device = "nmea2000://recording"
    /// Frames a second when not at the recorded pace: no gpsd has to keep up.
    public static let rate = 1_000.0

    /// Whether a network interface of that name exists: without one, a recording is replayed this way.
    public static func interfaceExists(_ name: String) -> Bool {
        if_nametoindex(name) != 0
    }

    /// The replay's events: the receiver as a device, its fixes, and its removal at the end.
    public static func stream(_ log: CandumpLog, into watcher: BusWatcher, realTime: Bool) -> ReplayStream {
        let frames = log.frames
        let (events, output) = AsyncStream.makeStream(of: SourceEvent.self)
        let feeding = Task { () -> ReplayEnding in
            output.yield(.devices([device]))
            output.yield(.deviceActivated(device))
            let start = uptime()
            let first = frames.first?.time
            for (index, frame) in frames.enumerated() {
                let due = CandumpLog.due(frame, index: index, firstTime: first, realTime: realTime, rate: rate)
                let ahead = start + due - uptime()
                // Sleeps of under 10 ms are left to add up: a frame each would cost more than the pace.
                if ahead > 0.01 { try? await Task.sleep(for: .seconds(ahead)) }
                if Task.isCancelled { break }
                // On the recording's clock (`BusWatcher`); a recording without times paces its own.
                watcher.take(frame, now: frame.time ?? Double(index) / rate)
                if var report = watcher.ownFix() {
                    report.device = device
                    output.yield(.report(report))
                }
            }
            let cancelled = Task.isCancelled
            output.yield(.deviceRemoved(device))
            output.finish()
            return cancelled ? .failed("stopped before the end of the recording") : .endOfLog
        }
        output.onTermination = { _ in feeding.cancel() }
        return ReplayStream(events: events, ending: feeding)
    }
}
