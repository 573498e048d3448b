import Foundation

/// The spool's counters, for `agrigps status`. Counts come from the database itself.
public struct SpoolStatus: Sendable, Equatable {
    public var pending = 0
    public var inFlight = 0
    public var failed = 0
    public var parked = 0
    /// Acknowledged rows still in the file: history when it is kept, else those waiting to be deleted
    /// together, a few hundred at most (see `Spool.acknowledge`).
    public var acknowledgedKept = 0
    /// Samples taken while sharing was paused; never sent.
    public var withheld = 0
    /// Samples still in the spool by output ("gps_info", "efdi") and that output's delivery state
    /// (pending, in_flight, failed, parked, withheld, acknowledged): an output that is behind shows here.
    public var byOutput: [String: [String: Int]] = [:]
    public var sharingPaused = false
    /// The driver's work switch: nil until first set.
    public var workSwitch: Bool?
    /// The working width the driver gave in the cab view (metres); nil when none, or out of range.
    public var workingWidth: Double?
    /// When the pause in force began (system time when it was set); nil when sharing is not paused,
    /// or the time noted cannot be read.
    public var pausedSince: Date?
    /// Samples withheld since the pause in force began, counted by row id so that a wrong or stepped
    /// clock cannot change it; 0 when not paused. A pause with no readable mark (set by an older
    /// agrigps, or known only from the heartbeat) counts every withheld sample still in the spool.
    public var keptWhilePaused = 0
    /// Seconds since the oldest sample still waiting to be sent was taken.
    public var oldestPendingAge: Double?
    /// When the newest sample still in the spool was taken (system time); nil when it is empty.
    public var lastAppendAt: Date?
    /// Samples dropped by a cap, by reason ("rows", "bytes", "age", "memory"), since the spool was created.
    public var dropped: [String: Int] = [:]
    /// Samples sent again after their batch went unanswered within the outbox's life, having maybe
    /// arrived: the most agrirouter can hold twice. A request that failed before it was taken
    /// (refused, 503, no network) sends nothing twice and counts nothing here.
    public var resent = 0
    /// Samples waiting in memory because the disk refuses writes.
    public var heldInMemory = 0
    /// The storage fault in force, if any.
    public var storageFault: SpoolError?
    /// The last storage fault the spool recovered from, and when it recovered.
    public var lastStorageFault: String?
    public var lastStorageFaultAt: Date?
    /// Where a corrupt spool file was moved, and when.
    public var quarantinedFile: String?
    public var quarantinedAt: Date?

    public var droppedTotal: Int { dropped.values.reduce(0, +) }
    /// Samples still to be sent: pending, in flight or failed (and to be retried).
    public var waiting: Int { pending + inFlight + failed }

    public init() {}
}
