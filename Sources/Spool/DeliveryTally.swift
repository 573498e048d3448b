/// What became of samples, counted by when they were taken: first sent, acknowledged by every output,
/// or dropped unsent (a cap, the memory ring, a shutdown with the disk refusing). Kept by quarter hour
/// of the sample's time, which every time zone's local day is made of, so that whoever takes it can
/// count per local day without the spool knowing the calendar.
public struct DeliveryTally: Sendable, Equatable {
    public struct Counts: Sendable, Equatable {
        public var sent = 0
        public var acknowledged = 0
        public var lost = 0

        public init(sent: Int = 0, acknowledged: Int = 0, lost: Int = 0) {
            self.sent = sent
            self.acknowledged = acknowledged
            self.lost = lost
        }

        public static func + (lhs: Counts, rhs: Counts) -> Counts {
            Counts(
                sent: lhs.sent + rhs.sent, acknowledged: lhs.acknowledged + rhs.acknowledged, lost: lhs.lost + rhs.lost)
        }
    }

    public enum Event: Sendable { case sent, acknowledged, lost }

    /// Counts by quarter hour: seconds since 1970 divided by 900.
    public private(set) var quarters: [Int64: Counts] = [:]
    /// Quarter hours kept at most (a year's); past that the oldest are dropped, should nobody take them.
    static let capacity = 35_040

    public init() {}

    public var isEmpty: Bool { quarters.isEmpty }

    /// Counts a sample taken at `time` (seconds since 1970; not a number or out of 1970...2200 is not counted).
    public mutating func count(_ event: Event, at time: Double, _ count: Int = 1) {
        guard time.isFinite, time >= 0, time < 7_258_118_400, count > 0 else { return }
        let quarter = Int64(time / 900)
        var counts = quarters[quarter] ?? Counts()
        switch event {
        case .sent: counts.sent += count
        case .acknowledged: counts.acknowledged += count
        case .lost: counts.lost += count
        }
        quarters[quarter] = counts
        if quarters.count > Self.capacity, let oldest = quarters.keys.min() { quarters[oldest] = nil }
    }

    public mutating func merge(_ other: DeliveryTally) {
        quarters.merge(other.quarters, uniquingKeysWith: +)
    }

    /// The counts with the start of their quarter hour, oldest first.
    public var byTime: [(start: Double, counts: Counts)] {
        quarters.sorted { $0.key < $1.key }.map { (Double($0.key) * 900, $0.value) }
    }
}
