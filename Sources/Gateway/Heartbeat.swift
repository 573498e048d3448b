import Foundation
import GNSS

/// What the running daemon last said about itself, written to a small JSON file in the state
/// directory. `agrigps status` and `agrigps others` read it; no server is needed, and an old
/// `updatedAt` means the daemon is gone or stuck.
public struct Heartbeat: Codable, Sendable, Equatable {
    /// One sample, reduced to what status and distance need.
    public struct Sample: Codable, Sendable, Equatable {
        public var state: String
        /// Receiver time when there was one, otherwise the system time of the sample.
        public var time: Date
        /// System time of the sample, by which its age is judged (receiver time can be anything in a replay).
        public var sampledAt: Date?
        public var latitude: Double?
        public var longitude: Double?
        public var altitude: Double?
        public var clockSkew: Double?

        public init(_ sample: PositionSample) {
            state = sample.state.name
            time = sample.receiverTime ?? sample.sampledAt
            sampledAt = sample.sampledAt
            if sample.state.hasPosition {
                latitude = sample.report?.latitude
                longitude = sample.report?.longitude
                altitude = sample.report?.altitudeHAE ?? sample.report?.altitudeMSL
            }
            clockSkew = sample.clockSkew
        }

        public var coordinate: Coordinate? {
            guard let latitude, let longitude else { return nil }
            return Coordinate(latitude: latitude, longitude: longitude)
        }
    }

    public var pid: Int32
    public var startedAt: Date
    public var updatedAt: Date
    public var onboarded: Bool
    public var lastSample: Sample?
    /// The newest sample with a position; kept across restarts, so distances work offline.
    public var lastFix: Sample?
    public var lastAcknowledgedAt: Date?
    public var lastError: String?
    public var lastErrorAt: Date?

    public init(pid: Int32 = getpid(), startedAt: Date = Date(), onboarded: Bool) {
        self.pid = pid
        self.startedAt = startedAt
        self.updatedAt = startedAt
        self.onboarded = onboarded
    }

    public static func read(from path: String) -> Heartbeat? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return try? decoder.decode(Heartbeat.self, from: data)
    }

    /// Replaces the file atomically, so a reader never sees half of it.
    public func write(to path: String) throws {
        let data = try Self.encoder.encode(self)
        try data.write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }()
}

/// Keeps the heartbeat current and writes it at most every `minimumGap` seconds, so a 1 Hz sampler
/// does not wear the flash with a file per sample.
actor HeartbeatWriter {
    private let path: String
    private let minimumGap: Double
    private var heartbeat: Heartbeat
    private var writtenAt: Date?

    init(path: String, onboarded: Bool, minimumGap: Double = 2) {
        self.path = path
        self.minimumGap = minimumGap
        var heartbeat = Heartbeat(onboarded: onboarded)
        heartbeat.lastFix = Heartbeat.read(from: path)?.lastFix
        self.heartbeat = heartbeat
    }

    func sampled(_ sample: PositionSample) {
        let summary = Heartbeat.Sample(sample)
        heartbeat.lastSample = summary
        if summary.coordinate != nil { heartbeat.lastFix = summary }
        writeIfDue()
    }

    func acknowledged(at time: Date = Date()) {
        heartbeat.lastAcknowledgedAt = time
    }

    func failed(_ error: String, at time: Date = Date()) {
        heartbeat.lastError = error
        heartbeat.lastErrorAt = time
    }

    func beat(now: Date = Date()) {
        writeIfDue(now: now, force: true)
    }

    private func writeIfDue(now: Date = Date(), force: Bool = false) {
        guard force || writtenAt.map({ now.timeIntervalSince($0) >= minimumGap }) ?? true else { return }
        heartbeat.updatedAt = now
        try? heartbeat.write(to: path)
        writtenAt = now
    }
}
