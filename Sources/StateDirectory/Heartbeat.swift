import BlockingWork
import Bounds
import Clocks
import Foundation
import GNSS
import JSONText
import Logging
import Spool
import StateFiles

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

        fileprivate func checked() -> Sample {
            var sample = self
            sample.latitude = latitude.flatMap { Bounds.check($0, in: Bounds.latitude) }
            sample.longitude = longitude.flatMap { Bounds.check($0, in: Bounds.longitude) }
            if sample.latitude == nil || sample.longitude == nil { (sample.latitude, sample.longitude) = (nil, nil) }
            sample.altitude = altitude.flatMap { Bounds.check($0, in: Bounds.altitude) }
            sample.clockSkew = clockSkew.flatMap { Bounds.check($0, in: Bounds.duration) }
            sample.state = TerminalText.safe(state, limit: 40)
            return sample
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
    /// Backing off after transport errors: when the next request may go, and how many failed in a row.
    public var nextAttemptAt: Date?
    public var transportFailures: Int?
    /// The endpoint certificate's last valid moment, read when the daemon started.
    public var certificateNotAfter: Date?
    /// Samples lost when the daemon last stopped (held in memory, unwritable), and why.
    public var lostSamples: Int?
    public var lossReason: String?
    public var lostAt: Date?
    /// When agrirouter said it no longer knows this endpoint (dke:ping, or a refused set-up).
    public var endpointDeletedAt: Date?
    /// The row id of the newest sample the spool committed, as the daemon last saw it.
    public var spoolRowID: Int64?
    /// Where EFDI's device description stands, when EFDI is published.
    public var efdi: EFDIDescription?
    /// "rest" or "mqtt", and what the connection is doing ("connected", "taken over: …").
    public var transport: String?
    public var connection: String?
    /// Messages from agrirouter dropped unread since the daemon started (a flood of pushes); nil for none.
    public var droppedInbound: Int?
    /// Seconds without an acknowledgement as of `updatedAt`, measured by the daemon on the monotonic
    /// clock from its start or its last acknowledgement: a system clock stepped from 1970 to now does
    /// not make it 56 years. Nil in older heartbeats.
    public var quietSeconds: Double?
    /// The system clock minus the best UTC the daemon knows (a fix, or agrirouter's clock), as of
    /// `updatedAt`: readers correct their own clock by it. Nil while unknown, and in older heartbeats.
    public var systemClockError: Double?
    /// Seconds between the daemon's send cycles, as configured: readers judge by it how long a
    /// position may wait before it is late. Nil in older heartbeats.
    public var sendInterval: Double?
    /// With a receiver on a CAN bus: what the bus shows (the receiver found, by address and maker, and
    /// what it does not send), or why the interface cannot be read. Nil otherwise, and in older heartbeats.
    public var receiverBus: String?
    /// With a machine's bus listened to: its work state and what its controllers broadcast. Nil
    /// otherwise, and in older heartbeats.
    public var machine: MachineStatus?

    /// What `agrigps status` says of the machine's own broadcasts.
    public struct MachineStatus: Codable, Sendable, Equatable {
        public struct Signal: Codable, Sendable, Equatable {
            /// `MachineSignal`'s name: "rear-hitch", "engine-speed", …
            public var signal: String
            /// Its newest value in words and units, or "not available" / "error" as the sender said.
            public var value: String
            public var source: Int
            public var ageSeconds: Double

            public init(signal: String, value: String, source: Int, ageSeconds: Double) {
                (self.signal, self.value, self.source, self.ageSeconds) = (signal, value, source, ageSeconds)
            }
        }

        /// "working", "not-working" or "unknown", as the newest sample carries it.
        public var work: String
        public var tractorECU: Int?
        public var engine: Int?
        public var signals: [Signal]
        public var notHeard: [String]
        /// A bus of the machine's own (`[machine] bus`) that cannot be read now, and why.
        public var busProblem: String?

        public init(
            work: String, tractorECU: Int?, engine: Int?, signals: [Signal], notHeard: [String],
            busProblem: String? = nil
        ) {
            (self.work, self.tractorECU, self.engine, self.signals, self.notHeard) = (
                work, tractorECU, engine, signals, notHeard
            )
            self.busProblem = busProblem
        }

        /// Every text safe for a terminal and short, every number in range: the file may be damaged.
        func checked() -> MachineStatus {
            let word = { (text: String) in TerminalText.safe(text, limit: 40) }
            return MachineStatus(
                work: word(work), tractorECU: tractorECU.flatMap { (0...253).contains($0) ? $0 : nil },
                engine: engine.flatMap { (0...253).contains($0) ? $0 : nil },
                signals: signals.prefix(16).compactMap { signal in
                    guard (0...253).contains(signal.source),
                        let age = Bounds.check(signal.ageSeconds, in: Bounds.duration)
                    else { return nil }
                    return Signal(
                        signal: word(signal.signal), value: TerminalText.safe(signal.value, limit: 80),
                        source: signal.source, ageSeconds: age)
                },
                notHeard: notHeard.prefix(16).map(word),
                busProblem: busProblem.map { TerminalText.safe($0, limit: 300) })
        }
    }

    public struct EFDIDescription: Codable, Sendable, Equatable {
        public var teamSetContextID: String
        /// When agrirouter last took the description; nil before it has.
        public var acceptedAt: Date?
        /// agrirouter's codes, when it refused the description last.
        public var refusal: [String]?

        public init(teamSetContextID: String, acceptedAt: Date?, refusal: [String]?) {
            (self.teamSetContextID, self.acceptedAt, self.refusal) = (teamSetContextID, acceptedAt, refusal)
        }
    }
    /// How long a loss stays reported, across restarts: a day, so the next morning's check sees it.
    public static let lossReported: Double = 86_400
    /// What status would otherwise read from files only the daemon's user may open: the spool's
    /// counts and the others', as of `countedAt`, and the agrirouter environment.
    public var environment: String?
    public var spool: SpoolCounts?
    public var others: OthersCounts?
    /// TaskData received from farm software since the daemon started; nil before any came.
    public var taskData: TaskDataCounts?
    public var countedAt: Date?

    public struct TaskDataCounts: Codable, Sendable, Equatable {
        public var imported, refused, older, expired: Int
        public var lastProblem: String?

        public init(imported: Int, refused: Int, older: Int, expired: Int, lastProblem: String? = nil) {
            (self.imported, self.refused, self.older, self.expired, self.lastProblem) = (
                imported, refused, older, expired, lastProblem
            )
        }

        /// Counts read back from the file are input: none negative, the text bounded.
        public var checked: TaskDataCounts? {
            guard [imported, refused, older, expired].allSatisfy({ $0 >= 0 }) else { return nil }
            return TaskDataCounts(
                imported: imported, refused: refused, older: older, expired: expired,
                lastProblem: lastProblem.map { TerminalText.safe($0, limit: 400) })
        }
    }

    public struct SpoolCounts: Codable, Sendable, Equatable {
        public var pending, inFlight, failed, parked, withheld, dropped, heldInMemory: Int
        public var oldestPendingAge: Double?
        public var sharingPaused: Bool
        public var storageFault: String?
        /// Samples by output and delivery state; nil in older heartbeats.
        public var byOutput: [String: [String: Int]]?

        public init(_ status: SpoolStatus) {
            byOutput = status.byOutput
            pending = status.pending
            inFlight = status.inFlight
            failed = status.failed
            parked = status.parked
            withheld = status.withheld
            dropped = status.droppedTotal
            heldInMemory = status.heldInMemory
            oldestPendingAge = status.oldestPendingAge
            sharingPaused = status.sharingPaused
            storageFault = status.storageFault?.description
        }
    }

    public struct OthersCounts: Codable, Sendable, Equatable {
        public var active, stale, gone: Int
        public var ownName: String?
        /// Messages from other machines refused (unreadable or out of range); nil in older heartbeats.
        public var refused: Int?
        public var lastRefusal: String?

        public init(
            active: Int, stale: Int, gone: Int, ownName: String? = nil, refused: Int? = nil, lastRefusal: String? = nil
        ) {
            (self.active, self.stale, self.gone, self.ownName, self.refused, self.lastRefusal) = (
                active, stale, gone, ownName, refused, lastRefusal
            )
        }

        public init(_ view: OthersView) {
            self.init(
                active: view.count(.active), stale: view.count(.stale), gone: view.count(.gone), ownName: view.ownName,
                refused: view.refusedMessages, lastRefusal: view.lastRefusal)
        }
    }

    public init(pid: Int32 = getpid(), startedAt: Date = Date(), onboarded: Bool) {
        self.pid = pid
        self.startedAt = startedAt
        self.updatedAt = startedAt
        self.onboarded = onboarded
    }

    /// Seconds at `now` since agrirouter last acknowledged anything, counted from this daemon's start
    /// at the earliest: an acknowledgement from an earlier run says nothing about this one.
    public func secondsWithoutAcknowledgement(at now: Date) -> Double {
        if let quietSeconds {
            // The wall clock only bridges the few seconds since the file was written; a step larger
            // than a heartbeat's life is the stalled daemon's case, which status reports by itself.
            return quietSeconds + min(max(0, now.timeIntervalSince(updatedAt)), 3600)
        }
        return now.timeIntervalSince(max(lastAcknowledgedAt ?? startedAt, startedAt))
    }

    /// The heartbeat file, or nil if it is missing or unreadable. It is input like any other: a
    /// number out of range in it is dropped (unknown), and a file larger than a heartbeat can be is
    /// not read at all. A read that catches the daemon's write half done (its digest disagrees) is
    /// made again; one that still disagrees (a write torn by a power cut) reads as no heartbeat.
    public static func read(from path: String) -> Heartbeat? {
        for _ in 0..<3 {
            guard let bytes = try? StateFile.read(path, limit: 1_048_576) else { return nil }
            let data = Data(bytes)
            guard let json = checkedText(data) else { continue }
            return (try? decoder.decode(Heartbeat.self, from: json))?.checked()
        }
        return nil
    }

    /// The file's bytes for `json`: see `checkedText`.
    public static func sealed(_ json: Data) -> [UInt8] {
        Array(json) + Array("\n#\(String(FNV1a.hash(json), radix: 16))\n".utf8)
    }

    /// The JSON of a file as `write(to:)` makes it: the text, a newline, `#` and the text's FNV-1a
    /// digest in hex, a newline, then spaces. Nil when the digest disagrees. A file without the
    /// digest line, as versions before it wrote (whole, by rename), is its own JSON.
    static func checkedText(_ data: Data) -> Data? {
        guard let newline = data.firstIndex(of: UInt8(ascii: "\n")) else { return data }
        let json = data[data.startIndex..<newline]
        let trailer = data[data.index(after: newline)...].prefix { $0 != UInt8(ascii: "\n") }
        guard trailer.first == UInt8(ascii: "#"), trailer.count <= 17,
            UInt64(String(decoding: trailer.dropFirst(), as: UTF8.self), radix: 16) == FNV1a.hash(json)
        else { return nil }
        return Data(json)
    }

    private func checked() -> Heartbeat {
        var heartbeat = self
        // Our own file, read back: only the two transports, and a state as short and plain as written.
        if let transport, transport != "rest" && transport != "mqtt" { heartbeat.transport = nil }
        heartbeat.connection = connection.map { TerminalText.safe($0, limit: 240) }
        heartbeat.lastSample = lastSample?.checked()
        heartbeat.lastFix = lastFix?.checked()
        heartbeat.taskData = taskData?.checked
        if var spool = heartbeat.spool {
            spool.oldestPendingAge = spool.oldestPendingAge.flatMap { Bounds.check($0, in: Bounds.duration) }
            for keyPath in [
                \SpoolCounts.pending, \.inFlight, \.failed, \.parked, \.withheld, \.dropped, \.heldInMemory,
            ] {
                spool[keyPath: keyPath] = max(0, spool[keyPath: keyPath])
            }
            spool.byOutput = spool.byOutput.map { outputs in
                Dictionary(
                    outputs.prefix(8).map { output, states in
                        (
                            TerminalText.safe(output, limit: 20),
                            Dictionary(
                                states.prefix(8).map { (TerminalText.safe($0, limit: 20), max(0, $1)) },
                                uniquingKeysWith: +)
                        )
                    }, uniquingKeysWith: { first, _ in first })
            }
            heartbeat.spool = spool
        }
        heartbeat.efdi = efdi.map { state in
            EFDIDescription(
                teamSetContextID: TerminalText.safe(state.teamSetContextID, limit: 64),
                acceptedAt: state.acceptedAt.flatMap { Bounds.date(secondsSince1970: $0.timeIntervalSince1970) },
                refusal: state.refusal.map { $0.prefix(8).map { TerminalText.safe($0, limit: 40) } })
        }
        heartbeat.lastError = lastError.map { TerminalText.safe($0, limit: 500) }
        if var others = heartbeat.others {
            others.ownName = others.ownName.map { TerminalText.safe($0, limit: 80) }
            others.lastRefusal = others.lastRefusal.map { TerminalText.safe($0, limit: 300) }
            others.refused = others.refused.map { max(0, $0) }
            heartbeat.others = others
        }
        heartbeat.environment = environment.flatMap { ["qa", "production", "local"].contains($0) ? $0 : nil }
        heartbeat.transportFailures = transportFailures.map { max(0, $0) }
        heartbeat.droppedInbound = droppedInbound.map { max(0, $0) }
        heartbeat.quietSeconds = quietSeconds.flatMap { Bounds.check($0, in: Bounds.duration) }
        heartbeat.systemClockError = systemClockError.flatMap { Bounds.check($0, in: Bounds.duration) }
        heartbeat.sendInterval = sendInterval.flatMap { Bounds.check($0, in: 0.1...3600) }
        heartbeat.lostSamples = lostSamples.flatMap { Bounds.count(Double($0)) }
        heartbeat.spoolRowID = spoolRowID.map { max(0, $0) }
        heartbeat.lossReason = lossReason.map { TerminalText.safe($0, limit: 300) }
        heartbeat.receiverBus = receiverBus.map { TerminalText.safe($0, limit: 400) }
        heartbeat.machine = machine?.checked()
        return heartbeat
    }

    /// Writes the file in place: the whole text in one write at its start, with its digest after it
    /// (see `checkedText`) and spaces over whatever was longer before. A new file and a rename, as
    /// before, made a new inode every time and wrote the directory, the inode table and the bitmaps
    /// with it: about 1.3 KiB of the flash per sample at 1 Hz, more than the heartbeat's own page.
    /// It holds no secret, so the daemon's group may read it: that is how `agrigps status` works
    /// without root.
    ///
    /// Not synced to disk: it says how the daemon is now, so after a power cut an old or missing
    /// heartbeat is the truth until the restarted daemon writes it, and a sync every few seconds was
    /// a twentieth of the daemon's CPU.
    public func write(to path: String) throws {
        var text = Self.sealed(try Self.encoder.encode(self))
        let descriptor: Int32
        do {
            descriptor = try StateFile.openForWriting(path, mode: 0o640)
        } catch {
            throw HeartbeatWriteError(path: path, errno: error.code, reason: error.description)
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { throw HeartbeatWriteError(path: path, errno: errno) }
        // Created under a tight umask: the group may read it all the same.
        if status.st_mode & 0o777 != 0o640, fchmod(descriptor, 0o640) != 0 {
            throw HeartbeatWriteError(path: path, errno: errno)
        }
        // Spaces over a longer past, unless it is far longer (a file not of our making): then it is cut.
        let excess = Int(clamping: status.st_size) - text.count
        if excess > 4096 {
            guard ftruncate(descriptor, off_t(text.count)) == 0 else {
                throw HeartbeatWriteError(path: path, errno: errno)
            }
        } else if excess > 0 {
            text += repeatElement(UInt8(ascii: " "), count: excess)
        }
        try text.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let count = pwrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset, off_t(offset))
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { throw HeartbeatWriteError(path: path, errno: count < 0 ? errno : EIO) }
                offset += count
            }
        }
    }

    private static let encoder: JSONEncoder = {
        // Slashes escaped, as the file has always been written.
        let encoder = JSONWriter.encoder(escapingSlashes: true)
        // Not .iso8601: Foundation's formatter loads ICU's time-zone data for it.
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ISO8601UTC.string(from: date))
        }
        return encoder
    }()

    private static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = ISO8601UTC.date(from: text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "not an ISO 8601 UTC time: \(text)")
            }
            return date
        }
        return decoder
    }()
}

/// Why the heartbeat file could not be replaced.
public struct HeartbeatWriteError: Error, CustomStringConvertible {
    public let path: String
    public let errno: Int32
    /// Set when the file is not one we may write: a FIFO, a device or a link.
    public var reason: String?

    public var description: String {
        "cannot write the heartbeat: " + (reason ?? "\(path): \(String(cString: strerror(errno)))")
    }
}

/// FNV-1a, 64 bits: a short stable digest of a few bytes, to notice a change or a torn write; not a
/// defence against anyone.
public enum FNV1a {
    public static func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> UInt64 {
        bytes.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }
}
