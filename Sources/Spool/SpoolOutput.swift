/// One way samples leave the box (gps:info, EFDI). Each keeps its own delivery state, batch number,
/// attempts and retry times in the sample's row, so a refusal of one output never holds back,
/// loses or duplicates another. A sample leaves the spool once every enabled output has been
/// acknowledged for it.
public struct SpoolOutput: Sendable, Hashable, CustomStringConvertible {
    /// The name in status and configuration ("gps_info", "efdi").
    public let name: String
    /// Prefix of its columns in the sample table.
    let prefix: String

    /// gps:info, the first output: its columns kept their original names when EFDI came.
    public static let gpsInfo = SpoolOutput(name: "gps_info", prefix: "")
    public static let efdi = SpoolOutput(name: "efdi", prefix: "efdi_")
    /// Every output the spool knows, in the order they are handled.
    public static let all: [SpoolOutput] = [.gpsInfo, .efdi]

    public var description: String { name }

    /// The output by its configuration name; nil for an unknown one.
    public init?(name: String) {
        guard let output = Self.all.first(where: { $0.name == name }) else { return nil }
        self = output
    }

    private init(name: String, prefix: String) {
        self.name = name
        self.prefix = prefix
    }

    var delivery: String { prefix + "delivery" }
    /// The number of the batch (in the batch table) the row was last taken in; NULL if never sent.
    var batchID: String { prefix + "batch_id" }
    /// No longer written: a batch's send time is kept in its row of the batch table.
    var sentAt: String { prefix + "sent_at" }
    var attempts: String { prefix + "attempts" }
    var lastError: String { prefix + "last_error" }
    var retryAfter: String { prefix + "retry_after" }
    /// Its counter of samples sent again, in spool_state.
    var resentCounter: String { prefix + "resent" }

    /// Rows this output may send now: pending, or failed and due. A retry time further ahead than the
    /// longest delay was set by a clock that has since been stepped back: it is due now rather than
    /// hours or years from now.
    var sendable: String {
        "(\(delivery) = 'pending' OR (\(delivery) = 'failed' AND (\(retryAfter) <= :now OR \(retryAfter) > :now + :longest)))"
    }
}

/// The delivery states of one output for one sample.
enum DeliveryState {
    /// Not wanted by this output: it was turned off when the sample was taken, or since.
    static let off = "off"
    /// The states an output is finished with a sample in: acknowledged, or not wanted.
    static let finished: Set<String> = ["acknowledged", off]
    /// `finished` as SQL, for `IN`; in a fixed order, since statements are cached by their text.
    static let done = "(" + finished.sorted().map { "'\($0)'" }.joined(separator: ", ") + ")"
    /// A sample's one state across its outputs, the least advanced: withheld, in flight for any,
    /// parked for any, failed for any, else pending (for a sample some output still owes).
    static func sampleState(_ states: [String?]) -> String {
        ["withheld", "in_flight", "parked", "failed"].first { states.contains($0) } ?? "pending"
    }
    /// The states the delivery indexes hold. A query uses such a partial index only when it has one
    /// of these terms exactly as written in the index (`<delivery> = '<state>'`). In-flight rows are
    /// found through their batch's range of ids instead, so a take adds no index entries.
    static let lookedUp = ["failed", "parked"]
}
