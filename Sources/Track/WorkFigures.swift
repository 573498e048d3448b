import Foundation
import GNSS

/// What a machine did in a period, from its own track: the time with each kind of fix, without a
/// fix or without a receiver, the time moving and the distance driven.
public struct WorkFigures: Sendable, Equatable {
    /// The fix qualities the figures tell apart; dead reckoning, simulated and manual fixes are `other`.
    public enum Quality: String, Sendable, CaseIterable {
        case rtkFixed = "rtk_fixed", rtkFloat = "rtk_float", dgps, autonomous, other

        public init(_ quality: FixQuality) {
            switch quality {
            case .rtkFixed: self = .rtkFixed
            case .rtkFloat: self = .rtkFloat
            case .dgps: self = .dgps
            case .autonomous: self = .autonomous
            case .deadReckoning, .simulated, .manual: self = .other
            }
        }
    }

    public var samples = 0
    /// Seconds with a fix, by quality; their sum is the time with a fix.
    public var secondsByQuality: [Quality: Double] = [:]
    /// Seconds when a receiver answered without a fix.
    public var secondsWithoutFix = 0.0
    /// Seconds with no receiver, or no gpsd to ask.
    public var secondsWithoutReceiver = 0.0
    public var secondsMoving = 0.0
    public var metresDriven = 0.0
    /// Seconds the machine was working, by its bus or the work switch (`TrackPoint.work`), and the
    /// metres it drove meanwhile: times the working width, the area worked.
    public var secondsWorking = 0.0
    public var metresWorking = 0.0
    /// Seconds the work state was known (working or not): without a bus or a work switch, none.
    public var secondsWorkKnown = 0.0
    /// Seconds moving while not working: off every field, the road.
    public var secondsMovingIdle = 0.0
    /// Seconds the bus said the engine turned, and the litres its fuel rate adds up to.
    public var secondsEngineRunning = 0.0
    public var litresFuel = 0.0
    /// Of the samples taken in the period: how many were sent (the first time), acknowledged by
    /// agrirouter, and dropped from the spool unsent. Counted as it happens, on the day they were taken.
    public var sent = 0
    public var acknowledged = 0
    public var lost = 0

    public init() {}

    public var secondsWithFix: Double { secondsByQuality.values.reduce(0, +) }

    /// Counts the time `point` stands for, until `next`, and the distance between them.
    public mutating func add(_ point: TrackPoint, next: TrackPoint?, rules: TrackRules) {
        let seconds = rules.step(from: point, to: next)
        switch point.state {
        case .fix(_, let quality): secondsByQuality[Quality(quality), default: 0] += seconds
        case .noFix: secondsWithoutFix += seconds
        case .noReceiver, .gpsdUnreachable: secondsWithoutReceiver += seconds
        }
        if point.isWorking { secondsWorking += seconds }
        if let work = point.work, work != .unknown { secondsWorkKnown += seconds }
        if MachineReading.engineRuns(point.engineSpeed) { secondsEngineRunning += seconds }
        if let rate = point.fuelRate { litresFuel += rate * seconds / 3_600 }
        guard seconds > 0, let from = point.coordinate, let next, let to = next.coordinate else { return }
        let metres = from.distance(to: to)
        guard metres.isFinite else { return }
        metresDriven += metres
        if point.isWorking { metresWorking += metres }
        // The receiver's speed when it gave one; otherwise the speed between the two fixes.
        if (point.speed ?? metres / seconds) > rules.movingSpeed {
            secondsMoving += seconds
            if !point.isWorking { secondsMovingIdle += seconds }
        }
    }

    /// Seconds the work state was known and not working.
    public var secondsNotWorking: Double { secondsWorkKnown - secondsWorking }

    /// Whether the machine said anything for this time: Records show its figures then.
    public var hasMachine: Bool { secondsWorkKnown > 0 || secondsEngineRunning > 0 || litresFuel > 0 }

    /// Hectares worked at `width` metres.
    public func hectaresWorked(width: Double) -> Double { metresWorking * width / 10_000 }

    /// The figures of two periods together.
    public static func + (lhs: WorkFigures, rhs: WorkFigures) -> WorkFigures {
        var sum = lhs
        sum.samples += rhs.samples
        sum.secondsByQuality.merge(rhs.secondsByQuality, uniquingKeysWith: +)
        sum.secondsWithoutFix += rhs.secondsWithoutFix
        sum.secondsWithoutReceiver += rhs.secondsWithoutReceiver
        sum.secondsMoving += rhs.secondsMoving
        sum.metresDriven += rhs.metresDriven
        sum.secondsWorking += rhs.secondsWorking
        sum.metresWorking += rhs.metresWorking
        sum.secondsMovingIdle += rhs.secondsMovingIdle
        sum.secondsEngineRunning += rhs.secondsEngineRunning
        sum.litresFuel += rhs.litresFuel
        sum.secondsWorkKnown += rhs.secondsWorkKnown
        sum.sent += rhs.sent
        sum.acknowledged += rhs.acknowledged
        sum.lost += rhs.lost
        return sum
    }
}

/// A local calendar day: the unit the figures are kept in. Weeks, months and years are sums of days.
public struct LocalDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// The calendar local days are counted in: Gregorian, in `zone`, else the box's (TZ, else the system's).
    public static func calendar(in zone: TimeZone?) -> Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone ?? .current
        return calendar
    }

    /// The day `date` falls on in `calendar`'s time zone.
    public init(_ date: Date, in calendar: Calendar) {
        let parts = calendar.dateComponents([.year, .month, .day], from: date)
        self.init(year: parts.year ?? 1970, month: parts.month ?? 1, day: parts.day ?? 1)
    }

    /// Reads "2026-11-25"; nil for anything else.
    public init?(label: String) {
        let parts = label.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1970...2200).contains(year), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        self.init(year: year, month: month, day: day)
    }

    /// "2026-11-25"
    public var description: String { String(format: "%04d-%02d-%02d", year, month, day) }

    public static func < (lhs: LocalDay, rhs: LocalDay) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }

    /// Its ISO week, "2026-W48": the week's year is the year of its Thursday.
    public var isoWeek: String {
        let parts = Self.isoCalendar.dateComponents([.yearForWeekOfYear, .weekOfYear], from: noonUTC)
        return String(format: "%04d-W%02d", parts.yearForWeekOfYear ?? year, parts.weekOfYear ?? 1)
    }

    /// Day arithmetic at noon UTC, which no time zone's midnight or DST change can move to another day.
    private static let isoCalendar: Calendar = {
        var calendar = Calendar(identifier: .iso8601)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? .current
        return calendar
    }()

    private var noonUTC: Date {
        Self.isoCalendar.date(from: DateComponents(year: year, month: month, day: day, hour: 12))
            ?? Date(timeIntervalSince1970: 0)
    }

    /// Whether the calendar has this day (not 31 April, not 29 February 2026).
    public var exists: Bool { LocalDay(noonUTC, in: Self.isoCalendar) == self }

    /// The day `count` days later (earlier when negative).
    public func adding(days count: Int) -> LocalDay {
        LocalDay(noonUTC.addingTimeInterval(Double(count) * 86_400), in: Self.isoCalendar)
    }

    /// The Monday that starts its ISO week.
    public var weekStart: LocalDay {
        let weekday = Self.isoCalendar.component(.weekday, from: noonUTC)  // 1 is Sunday
        return adding(days: -((weekday + 5) % 7))
    }

    /// When the day starts and when the next one does, in `calendar`'s time zone (23 or 25 hours
    /// apart on a DST change).
    public func span(in calendar: Calendar) -> (start: Date, end: Date)? {
        guard let start = calendar.date(from: DateComponents(year: year, month: month, day: day)) else { return nil }
        let next = adding(days: 1)
        guard let end = calendar.date(from: DateComponents(year: next.year, month: next.month, day: next.day)) else {
            return nil
        }
        return (start, end)
    }

    /// Its month, "2026-11".
    public var monthLabel: String { String(format: "%04d-%02d", year, month) }
}

/// How many samples taken at `time` (to the quarter hour) were sent, acknowledged or lost.
public struct DeliveryCount: Sendable, Equatable {
    public var time: Date
    public var sent: Int
    public var acknowledged: Int
    public var lost: Int

    public init(time: Date, sent: Int = 0, acknowledged: Int = 0, lost: Int = 0) {
        self.time = time
        self.sent = sent
        self.acknowledged = acknowledged
        self.lost = lost
    }
}

/// Keeps each local day's figures as points arrive in time order, one at a time, so that a year of
/// samples never has to be held at once.
public struct WorkLedger: Sendable {
    public let calendar: Calendar
    public let rules: TrackRules
    public private(set) var days: [LocalDay: WorkFigures] = [:]
    /// The newest point, not counted until the one after it says how long it stood for.
    private var pending: TrackPoint?

    public init(calendar: Calendar, rules: TrackRules = TrackRules()) {
        self.calendar = calendar
        self.rules = rules
    }

    /// A sample is counted on arrival; the time it stands for once the next one says how long that
    /// was. A point older than the one before it starts afresh: the time between them is not counted.
    public mutating func add(_ point: TrackPoint) {
        if let previous = pending {
            // A step that crosses midnight counts on the day it started (at most `longestStep` off).
            days[LocalDay(previous.time, in: calendar), default: WorkFigures()].add(previous, next: point, rules: rules)
        }
        days[LocalDay(point.time, in: calendar), default: WorkFigures()].samples += 1
        pending = point
    }

    /// Counts what became of samples taken at `count.time`, on their day.
    public mutating func add(_ count: DeliveryCount) {
        let day = LocalDay(count.time, in: calendar)
        days[day, default: WorkFigures()].sent += count.sent
        days[day, default: WorkFigures()].acknowledged += count.acknowledged
        days[day, default: WorkFigures()].lost += count.lost
    }

    /// The figures counted since the last take, for writing; the newest point stays pending.
    public mutating func takeDays() -> [LocalDay: WorkFigures] {
        defer { days = [:] }
        return days
    }

    /// Figures taken that could not be written, counted again.
    public mutating func restore(_ taken: [LocalDay: WorkFigures]) {
        days.merge(taken, uniquingKeysWith: +)
    }

    /// Goes on after `point`, the newest one kept by an earlier run: counted then, its time not yet.
    public mutating func resume(after point: TrackPoint) {
        if pending == nil { pending = point }
    }

    /// Ends the run of points: the newest stands for no time.
    public mutating func finish() {
        pending = nil
    }

    public enum Period: String, Sendable, CaseIterable {
        case day, week, month, year

        /// The period holding `day`: "2026-11-25", "2026-W48", "2026-11" or "2026".
        public func label(of day: LocalDay) -> String {
            switch self {
            case .day: day.description
            case .week: day.isoWeek
            case .month: day.monthLabel
            case .year: String(format: "%04d", day.year)
            }
        }
    }

    /// The figures summed by `period`, labelled "2026-11-25", "2026-W48", "2026-11" or "2026", oldest first.
    public func figures(by period: Period) -> [(label: String, figures: WorkFigures)] {
        Self.sum(days, by: period)
    }

    /// Days' figures summed by `period`, oldest first.
    public static func sum(_ days: [LocalDay: WorkFigures], by period: Period) -> [(
        label: String, figures: WorkFigures
    )] {
        var sums: [String: WorkFigures] = [:]
        for (day, figures) in days {
            let label = period.label(of: day)
            sums[label, default: WorkFigures()] = sums[label, default: WorkFigures()] + figures
        }
        return sums.sorted { $0.key < $1.key }.map { (label: $0.key, figures: $0.value) }
    }
}

/// A day's points split by place (the field each was in): each point's time, and the way to the
/// next, count where the point was, on the day the step started, by the same rules as the day's
/// figures. A point with no place (off every field, or without a fix) counts under nil, so that the
/// places of a day add up to the whole day.
public enum PlaceTally {
    public struct Key<Place: Hashable & Sendable>: Hashable, Sendable {
        public var day: LocalDay
        public var place: Place?
    }

    public static func figures<Place: Hashable & Sendable>(
        _ points: [TrackPoint], calendar: Calendar, rules: TrackRules = TrackRules(),
        place: (TrackPoint) -> Place?
    ) -> [Key<Place>: WorkFigures] {
        var figures: [Key<Place>: WorkFigures] = [:]
        for (index, point) in points.enumerated() {
            let key = Key(day: LocalDay(point.time, in: calendar), place: point.isFix ? place(point) : nil)
            let next = index + 1 < points.count ? points[index + 1] : nil
            figures[key, default: WorkFigures()].add(point, next: next, rules: rules)
            figures[key, default: WorkFigures()].samples += 1
        }
        return figures
    }
}
