import Clocks
import Foundation
import GNSS

/// How the spool behaves. Every limit has a default that suits a box sampling once a second.
public struct SpoolConfiguration: Sendable {
    /// Most unacknowledged rows kept; the oldest that are not in flight are dropped beyond it.
    public var maximumRows = 500_000
    /// Most encoded bytes (the `wireSize` of each row) kept unacknowledged.
    public var maximumBytes = 64 * 1024 * 1024
    /// Samples older than this, by both their system and their GNSS time, are dropped unless in flight. Seconds.
    public var maximumAge: Double = 30 * 24 * 3600
    /// In-flight batches older than this return to pending when `reclaimExpiredBatches` is called (the
    /// publisher times its own batches on the monotonic clock). agrirouter's outbox keeps answers 5 minutes.
    public var inFlightTimeout: Double = 300
    /// Keep acknowledged rows this long (seconds) for inspection; with 0 they are deleted a few hundred
    /// at a time (see `Spool.acknowledge`), and until then nothing counts, sends or shows them.
    public var acknowledgedHistory: Double = 0
    /// Failures before a row is parked instead of retried.
    public var parkAfterFailures = 5
    /// First retry delay after a failure, doubled per failure up to `maximumRetryDelay`. Seconds.
    public var retryDelay: Double = 30
    public var maximumRetryDelay: Double = 3600
    /// Samples held in memory while the disk refuses writes; the oldest go first beyond it.
    public var memoryRingCapacity = 3600
    /// How often (seconds) a spool whose file could not be opened tries again.
    public var reopenInterval: Double = 5
    /// SQLite's `max_page_count`: a hard ceiling on the file, so that the spool meets "disk full"
    /// before the disk does. Nil leaves SQLite's default.
    public var maximumPageCount: Int?
    /// The time the spool keeps its own times by (age cap, retries, state changes): the daemon gives
    /// its best known UTC, so a wrong system clock neither ages samples out nor delays retries.
    public var clock: @Sendable () -> Date = { Date() }
    /// What the reopening, the checkpoints and the age sweeps are spaced on.
    public var monotonic: MonotonicClock = .system
    /// SQLite busy timeout, seconds.
    public var busyTimeout: Double = 5
    /// Encoded size of one sample in a GPSList, framing included. The link layer knows the exact
    /// protobuf size and passes it in; the default is the upper bound of a fully set GPSEntry.
    public var wireSize: @Sendable (PositionSample) -> Int = { _ in SpoolConfiguration.gpsEntryUpperBound }

    /// A GPSEntry with every field set: 3 doubles and 2 DOPs (9 bytes each), sint64 millimetres (≤ 11),
    /// status and satellites (≤ 3 each), timestamp (≤ 2 + 11 + 6), field status (2), plus 2 bytes of
    /// GPSList framing.
    public static let gpsEntryUpperBound = 5 * 9 + 11 + 3 + 3 + 19 + 2 + 3

    /// The outputs each sample must be acknowledged by before it leaves the spool; the daemon sets
    /// them from its configuration. A change takes effect when the spool opens: an output turned off
    /// stops holding samples, and one turned on takes every sample still in the spool. Nil (for the
    /// commands that only pause or inspect) keeps what the spool was last opened with, gps:info for
    /// a new one. An empty list keeps gps:info, so that no sample is finished for want of an output.
    public var outputs: [SpoolOutput]?

    static func enabled(_ outputs: [SpoolOutput]) -> [SpoolOutput] {
        let enabled = SpoolOutput.all.filter(outputs.contains)
        return enabled.isEmpty ? [.gpsInfo] : enabled
    }

    /// Whether this spool keeps the commit mark (`spool.sqlite-mark`, see `CommitMark`): the daemon's
    /// does. Other openers (pause, the cab view) compare with it but never write it, so a note of
    /// theirs can neither lag behind the daemon's commits nor be made by another user.
    public var keepsCommitMark = false

    public init() {}
}
