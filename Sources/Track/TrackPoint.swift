import Foundation
import GNSS

/// One sample as the machine's own record keeps it: when, in what fix state, and where. Every
/// sample is a point, with or without a position, so that the record shows the gaps too.
public struct TrackPoint: Sendable, Equatable {
    /// The receiver's time when it gave one, otherwise the system time corrected to the best known UTC.
    public var time: Date
    public var state: FixState
    /// Set only for a fix.
    public var coordinate: Coordinate?
    /// Metres above mean sea level, when the receiver said.
    public var altitude: Double?
    /// Metres per second over ground, when the receiver said.
    public var speed: Double?
    /// What the machine was doing, when a machine's bus or the work switch said; nil with neither.
    public var work: MachineReading.Work?
    /// Revolutions a minute, from the bus.
    public var engineSpeed: Double?
    /// Litres an hour, from the bus.
    public var fuelRate: Double?

    public init(
        time: Date, state: FixState, coordinate: Coordinate? = nil, altitude: Double? = nil, speed: Double? = nil,
        work: MachineReading.Work? = nil, engineSpeed: Double? = nil, fuelRate: Double? = nil
    ) {
        self.time = time
        self.state = state
        self.coordinate = state.hasPosition ? coordinate : nil
        self.altitude = altitude.flatMap { $0.isFinite ? $0 : nil }
        self.speed = speed.flatMap { $0.isFinite && $0 >= 0 ? $0 : nil }
        self.work = work
        // The ranges of the messages they come from (EEC1, LFE1).
        self.engineSpeed = engineSpeed.flatMap { MachineReading.engineSpeedRange.contains($0) ? $0 : nil }
        self.fuelRate = fuelRate.flatMap { MachineReading.fuelRateRange.contains($0) ? $0 : nil }
    }

    /// The point of a sample, dated `time` (its receiver time, or its corrected system time).
    public init(_ sample: PositionSample, time: Date) {
        let report = sample.report
        let coordinate = report.flatMap { report in
            report.latitude.flatMap { latitude in report.longitude.map { Coordinate(latitude: latitude, longitude: $0) }
            }
        }
        self.init(
            time: time, state: sample.state, coordinate: coordinate, altitude: report?.altitudeMSL,
            speed: report?.speed,
            work: sample.machine?.work, engineSpeed: sample.machine?.engineSpeed, fuelRate: sample.machine?.fuelRate)
    }

    /// Whether the machine was working: only when its bus or the work switch said so.
    public var isWorking: Bool { work == .working }

    /// True for a fix with a position: what a drawn track is made of.
    public var isFix: Bool { coordinate != nil }
}

/// What a track's points mean in time: each point stands for the time until the next one, but never
/// more than `longestStep` seconds. Beyond that the machine was off, or the daemon stopped: that time
/// is counted nowhere and the drawn track breaks there.
public struct TrackRules: Sendable, Equatable {
    /// Default 45 s: more than twice the longest sampling interval (20 s).
    public var longestStep: Double
    /// A machine going faster than this, in metres per second, is moving (default 0.5 m/s, 1.8 km/h:
    /// below it, a standing receiver's noise).
    public var movingSpeed: Double

    public init(longestStep: Double = PositionSample.longestStep, movingSpeed: Double = 0.5) {
        self.longestStep = longestStep
        self.movingSpeed = movingSpeed
    }

    /// Whether `next` follows `point` closely enough for the time between them to count.
    public func joins(_ point: TrackPoint, _ next: TrackPoint) -> Bool {
        let seconds = next.time.timeIntervalSince(point.time)
        return seconds.isFinite && seconds >= 0 && seconds <= longestStep
    }

    /// The seconds `point` stands for, given the point after it (none for the newest point).
    public func step(from point: TrackPoint, to next: TrackPoint?) -> Double {
        guard let next, joins(point, next) else { return 0 }
        return next.time.timeIntervalSince(point.time)
    }
}

/// A drawn track's pieces: runs of consecutive fixes. A run ends at a sample without a fix, and where
/// two fixes are further apart in time than the rules allow, so that a drawn track never crosses a
/// gap in a straight line.
public enum TrackSegments {
    /// `keep` cuts the track to a place: a point it refuses breaks the run as a lost fix does, so that
    /// a track cut to a field never crosses the land outside it in a straight line.
    public static func split(
        _ points: [TrackPoint], rules: TrackRules = TrackRules(),
        keep: (TrackPoint) -> Bool = { _ in true }
    ) -> [[TrackPoint]] {
        var segments: [[TrackPoint]] = []
        var current: [TrackPoint] = []
        for point in points {
            let joined = current.last.map { rules.joins($0, point) } ?? true
            if !point.isFix || !joined || !keep(point) {
                if !current.isEmpty { segments.append(current) }
                current = []
            }
            if point.isFix && keep(point) { current.append(point) }
        }
        if !current.isEmpty { segments.append(current) }
        return segments
    }
}
