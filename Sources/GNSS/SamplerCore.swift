import Bounds
import Clocks
import Foundation

/// The sampling rules, free of threads and timers so that tests can drive them with any clock.
///
/// - One sample per interval: the newest report within it, or the explicit state when there is none.
/// - While the receiver has a fix with a time, intervals are buckets of receiver time
///   (`floor(time / interval)`), so a fast replay yields the samples of a real-time drive.
///   A bucket's sample is emitted when a report from a later bucket arrives.
/// - Without a fix, intervals are measured on the monotonic system clock.
/// - Gaining or losing the fix, and any change of condition (gpsd gone, device removed, receiver
///   silent), first emits what the closing interval holds, so no transition is hidden.
public struct SamplerCore: Sendable {
    public let interval: Double
    /// Largest tolerated |system − GNSS| before a sample is flagged; nil turns the check off (replays).
    public let skewLimit: Double?
    /// Wall seconds past the interval without reports before a receiver-time interval is closed.
    public let quietGrace: Double

    private enum Window: Sendable {
        case receiver(bucket: Int64)
        case wall(start: Double)
    }

    private enum Condition: Sendable, Equatable {
        case awaitingReports
        case unreachable(String)
        case noReceiver(NoReceiverReason)
        case receiving
    }

    private var window: Window
    private var pending: (report: PositionReport, arrival: ClockReading)?
    private var condition: Condition = .awaitingReports
    private var activeDevices: Set<String> = []
    private var lastReportUptime: Double?
    private var lastFix: EmittedFix?

    private struct EmittedFix: Equatable {
        var time: Date
        var latitude: Double?
        var longitude: Double?
    }

    public init(interval: Double, skewLimit: Double? = 60, quietGrace: Double = 1.5, start: ClockReading) {
        precondition(interval > 0, "the sampling interval must be positive")
        self.interval = interval
        self.skewLimit = skewLimit
        self.quietGrace = quietGrace
        self.window = .wall(start: start.uptime)
    }

    public mutating func handle(_ event: SourceEvent, at now: ClockReading) -> [PositionSample] {
        var out = closeElapsedWallWindows(at: now)
        switch event {
        case .report(let report):
            out += take(report, at: now)
        case .connected:
            if case .unreachable = condition { out += change(to: .awaitingReports, at: now) }
        case .unreachable(let error), .disconnected(let error):
            activeDevices.removeAll()
            out += change(to: .unreachable(error.description), at: now)
        case .devices(let paths):
            if paths.isEmpty {
                activeDevices.removeAll()
                out += change(to: .noReceiver(.noDevice), at: now)
            } else if condition == .noReceiver(.noDevice) {
                out += change(to: .awaitingReports, at: now)
            }
        case .deviceActivated(let path):
            activeDevices.insert(path)
            if case .noReceiver = condition { out += change(to: .awaitingReports, at: now) }
        case .deviceRemoved(let path):
            activeDevices.remove(path)
            if activeDevices.isEmpty { out += change(to: .noReceiver(.removed), at: now) }
        case .receiverSilent:
            // Silence after a removal or with gpsd gone says nothing new.
            if condition == .receiving || condition == .awaitingReports {
                out += change(to: .noReceiver(.silent), at: now)
            }
        }
        return out
    }

    /// The monotonic time from which `tick` may have something to emit: the end of a wall-clock
    /// interval, or the quiet grace after the last report while counting receiver time.
    public var nextTick: Double? {
        switch window {
        case .wall(let start): return start + interval
        case .receiver: return lastReportUptime.map { $0 + interval + quietGrace }
        }
    }

    public mutating func tick(at now: ClockReading) -> [PositionSample] {
        if case .receiver = window, let last = lastReportUptime, now.uptime - last > interval + quietGrace {
            // Reports stopped while we were counting receiver time: close that interval now. The
            // system clock takes over where it ended, one interval after the last report, so the
            // intervals the grace has already covered get their samples too and leave no hole.
            var out = flush()
            window = .wall(start: last + interval)
            out += closeElapsedWallWindows(at: now)
            return out
        }
        return closeElapsedWallWindows(at: now)
    }

    /// Emits what the current interval holds; call at the end of a stream.
    public mutating func finish(at now: ClockReading) -> [PositionSample] {
        closeElapsedWallWindows(at: now) + flush()
    }

    // MARK: - Rules

    private mutating func take(_ report: PositionReport, at now: ClockReading) -> [PositionSample] {
        var out: [PositionSample] = []
        condition = .receiving
        lastReportUptime = now.uptime
        // Ten reports a second from the one receiver a machine has: skip hashing the path each time.
        if let device = report.device, activeDevices.count != 1 || activeDevices.first != device {
            activeDevices.insert(device)
        }
        if report.fixState.hasPosition, let time = report.time,
            let bucket = Bounds.whole((time.timeIntervalSince1970 / interval).rounded(.down)).map(Int64.init)
        {
            if case .receiver(let current) = window, current == bucket {
                // Same interval: the newer report wins.
            } else {
                if let held = pending, held.report.fixState.hasPosition, held.report.time == nil,
                    held.report.latitude == report.latitude, held.report.longitude == report.longitude,
                    now.uptime - held.arrival.uptime < interval
                {
                    // The same fix reported first without its time and then with it (gpsd's first
                    // report after a start often is: GGA before the RMC that dates it): one sample,
                    // the one with the time. A fix elsewhere is another epoch's, and stays a sample.
                    pending = nil
                }
                out += flush()
                window = .receiver(bucket: bucket)
            }
        } else if case .receiver = window {
            out += flush()
            window = .wall(start: now.uptime)
        } else if let held = pending?.report, held.fixState.hasPosition != report.fixState.hasPosition {
            // Gaining or losing the fix inside one interval must not hide the state it left.
            out += flush()
        }
        pending = (report, now)
        return out
    }

    private mutating func change(to newCondition: Condition, at now: ClockReading) -> [PositionSample] {
        guard newCondition != condition else { return [] }
        condition = newCondition
        let out = flush()
        window = .wall(start: now.uptime)
        return out
    }

    /// The longest run of missed intervals that is filled sample by sample; a longer stall (a suspend,
    /// a blocked loop) gets one sample, not thousands.
    static let fillLimit = 5

    private mutating func closeElapsedWallWindows(at now: ClockReading) -> [PositionSample] {
        guard case .wall(var start) = window else { return [] }
        var out: [PositionSample] = []
        // At most `fillLimit` turns: a longer stretch is the stall case, which returns at once.
        while now.uptime - start >= interval {
            let elapsed = now.uptime - start
            if elapsed >= Double(Self.fillLimit + 1) * interval {
                // A long stall: one sample for it, and the intervals start again from now.
                window = .wall(start: now.uptime)
                return out + (pending != nil ? flush() : [explicitSample(at: now.wall, uptime: now.uptime)])
            }
            let end = start + interval
            start = end
            window = .wall(start: start)
            // Each missed interval is stamped at its own end by the system clock.
            out +=
                pending != nil
                ? flush() : [explicitSample(at: now.wall.addingTimeInterval(end - now.uptime), uptime: end)]
        }
        return out
    }

    private mutating func flush() -> [PositionSample] {
        guard let (report, arrival) = pending else { return [] }
        pending = nil
        // gpsd may report one epoch's fix again after a report without it (a fix that flickers as
        // the receiver acquires it): the same time and position are the same observation, sampled once.
        if report.fixState.hasPosition, let time = report.time {
            let fix = EmittedFix(time: time, latitude: report.latitude, longitude: report.longitude)
            if fix == lastFix { return [] }
            lastFix = fix
        }
        return [
            PositionSample(
                sampledAt: arrival.wall, state: report.fixState, report: report,
                clockSkew: skew(of: report, at: arrival.wall), sampledUptime: arrival.uptime)
        ]
    }

    /// Seconds without any report, from a receiver that was reporting, after which an interval with no
    /// report is "no receiver", not "no fix": a receiver without a fix still reports every second
    /// (mode 1), so silence means it is gone, before gpsd or the source's silence timer say so.
    static let silentAfter = 2.5

    private func explicitSample(at wall: Date, uptime: Double) -> PositionSample {
        var sample = explicitState(at: wall, uptime: uptime)
        sample.sampledUptime = uptime
        return sample
    }

    private func explicitState(at wall: Date, uptime: Double) -> PositionSample {
        switch condition {
        case .unreachable(let detail):
            return PositionSample(sampledAt: wall, state: .gpsdUnreachable, detail: detail)
        case .noReceiver(let reason):
            return PositionSample(sampledAt: wall, state: .noReceiver(reason), detail: reason.rawValue)
        case .receiving:
            if let last = lastReportUptime, uptime - last >= Self.silentAfter {
                return PositionSample(
                    sampledAt: wall, state: .noReceiver(.silent), detail: "no report for \(Int(uptime - last)) s")
            }
            return PositionSample(sampledAt: wall, state: .noFix, detail: "no report in this interval")
        case .awaitingReports:
            return PositionSample(sampledAt: wall, state: .noFix, detail: "no report in this interval")
        }
    }

    private func skew(of report: PositionReport, at wall: Date) -> Double? {
        guard let limit = skewLimit, report.fixState.hasPosition, let time = report.time else { return nil }
        let skew = wall.timeIntervalSince(time)
        return abs(skew) > limit ? skew : nil
    }
}
