import BlockingWork
import Clocks
import Foundation
import Logging
import Synchronization

/// Reads gpsd through libgps on a thread of its own and yields what it learns as `SourceEvent`s.
///
/// gps_waiting and gps_read block, so they must not run on the cooperative thread pool, which has
/// about two threads on a small box. The thread ends, and the connection closes, when the stream's
/// consumer goes away or `finishWhenDeviceRemoved` sees the device go.
public struct GPSDSource: Sendable {
    public struct Configuration: Sendable {
        public var address: GPSDAddress
        /// No report for this long, while connected, makes the receiver "silent".
        public var silenceThreshold: Double = 5
        /// First and largest pause between reconnection attempts, in seconds.
        public var initialBackoff: Double = 0.25
        public var maximumBackoff: Double = 5
        /// Keep reconnecting forever (daemon) or stop at the first failure (replay).
        public var reconnects: Bool = true
        /// End the stream once a device is removed: a replayed log is over.
        public var finishWhenDeviceRemoved: Bool = false
        /// What another source knows about the same receiver, put into each report before it is
        /// sampled (a CAN receiver's fix method, which gpsd 3.22 drops); nil sets a report aside as
        /// another receiver's, as if gpsd had not sent it. Runs on the reader thread.
        public var adjust: (@Sendable (PositionReport) -> PositionReport?)?
        /// A report of the receiver from another source, asked for a few times a second while
        /// connected; for a receiver gpsd has stopped reporting (see `BusWatcher.standIn`).
        public var standIn: (@Sendable () -> PositionReport?)?

        public init(address: GPSDAddress) {
            self.address = address
        }
    }

    public let configuration: Configuration
    private let logger: Logger

    public init(configuration: Configuration, logger: Logger = Logger(label: "agrigps.gnss.gpsd")) {
        self.configuration = configuration
        self.logger = logger
    }

    /// Starts the reader thread. Dropping or cancelling the stream stops it.
    public func events() -> AsyncStream<SourceEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: SourceEvent.self)
        start(EventRelay(continuation: continuation)) { stop in continuation.onTermination = { _ in stop.set() } }
        return stream
    }

    /// Samples made on the reader thread itself, by the same rules as `Sampler`: a 10 Hz receiver's
    /// reports stay on that thread, and only a sample per interval (and the rare events other than
    /// reports) wakes the consumer. Dropping or cancelling the stream stops the thread.
    public func sampled(by sampler: Sampler) -> AsyncStream<SamplerOutput> {
        let (stream, continuation) = AsyncStream.makeStream(of: SamplerOutput.self)
        start(sampler.relay(to: continuation)) { stop in
            continuation.onTermination = { _ in stop.set() }
        }
        return stream
    }

    private func start<Sink: SourceSink>(_ sink: Sink, stoppedBy connect: (StopFlag) -> Void) {
        let stop = StopFlag()
        connect(stop)
        let reader = SourceReader(configuration: configuration, logger: logger, sink: sink, stop: stop)
        // The reader blocks in libgps (poll and read on gpsd's socket) for as long as the source
        // lives, so it has a thread of its own, never one of Swift's pool.
        let started = startThread(named: "agrigps-gpsd") {
            var reader = reader
            reader.run()
        }
        if !started {
            logger.critical("cannot start the thread that reads gpsd: the process is at its limit of threads")
        }
    }
}

/// Where the reader thread puts what it learns. Its methods run on that thread only.
protocol SourceSink: Sendable {
    /// The monotonic time at which `idle` has something to do, if ever.
    var deadline: Double? { get }
    mutating func take(_ event: SourceEvent)
    mutating func idle()
    mutating func finish()
}

/// Every event, as it comes, to an async consumer.
struct EventRelay: SourceSink {
    let continuation: AsyncStream<SourceEvent>.Continuation
    var deadline: Double? { nil }
    func take(_ event: SourceEvent) { continuation.yield(event) }
    func idle() {}
    func finish() { continuation.finish() }
}

/// A one-way flag from the consumer to the reader thread.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// The reader thread's loop. Everything here runs on that one thread.
private struct SourceReader<Sink: SourceSink>: Sendable {
    let configuration: GPSDSource.Configuration
    let logger: Logger
    var sink: Sink
    let stop: StopFlag

    /// The longest wait between looks at the stop flag while gpsd is quiet or unreachable.
    private static var longestWait: Double { 1 }

    mutating func run() {
        var backoff = configuration.initialBackoff
        var lastFailure: GPSDError?
        while !stop.isSet {
            let connection: GPSDConnection
            do {
                connection = try GPSDConnection(address: configuration.address)
            } catch {
                if error != lastFailure { logger.warning("\(error.description); retrying") }
                lastFailure = error
                sink.take(.unreachable(error))
                guard configuration.reconnects else { break }
                pause(seconds: backoff)
                backoff = min(backoff * 2, configuration.maximumBackoff)
                continue
            }
            backoff = configuration.initialBackoff
            lastFailure = nil
            logger.info("connected to gpsd at \(configuration.address)")
            sink.take(.connected(configuration.address))
            let outcome = follow(connection)
            if case .lost(let error) = outcome {
                logger.warning("\(error.description)")
                sink.take(.disconnected(error))
            }
            if outcome == .finished || !configuration.reconnects { break }
        }
        sink.finish()
    }

    private enum Outcome: Equatable {
        case stopped, finished, lost(GPSDError)
    }

    /// How often the stand-in source is asked while connected.
    private static var standInEvery: Double { 0.25 }

    /// Reads one connection until it fails, the consumer leaves, or a replay ends.
    private mutating func follow(_ connection: GPSDConnection) -> Outcome {
        var lastReport = uptime()
        var silenceReported = false
        var standInAskedAt = uptime()
        while !stop.isSet {
            if let standIn = configuration.standIn, uptime() - standInAskedAt >= Self.standInEvery {
                standInAskedAt = uptime()
                if let report = standIn() {
                    lastReport = uptime()
                    silenceReported = false
                    sink.take(.report(report))
                }
            }
            // Awake for the silence threshold, and for the next ask of the stand-in source.
            var wakeAt = silenceReported ? nil : lastReport + configuration.silenceThreshold
            if configuration.standIn != nil { wakeAt = min(wakeAt ?? .infinity, standInAskedAt + Self.standInEvery) }
            if !connection.waitForData(timeout: waitUntil(wakeAt) - uptime()) {
                let quiet = uptime() - lastReport
                if !silenceReported && quiet >= configuration.silenceThreshold {
                    silenceReported = true
                    sink.take(.receiverSilent(seconds: quiet))
                }
                idleIfDue()
                continue
            }
            let message: GPSDMessage
            do {
                message = try connection.read()
            } catch {
                return .lost(error)
            }
            switch message {
            case .report(let report):
                let taken = configuration.adjust.map { $0(report) } ?? report
                if let taken {
                    lastReport = uptime()
                    silenceReported = false
                    sink.take(.report(taken))
                }
            case .devices(let paths):
                sink.take(.devices(paths))
            case .device(let path, true):
                // A device that comes and says nothing is silent in its turn: gpsd on a CAN bus
                // opens one for every sender, most of which never report a position.
                lastReport = uptime()
                silenceReported = false
                sink.take(.deviceActivated(path))
            case .device(let path, false):
                sink.take(.deviceRemoved(path))
                if configuration.finishWhenDeviceRemoved { return .finished }
            case .sky, .other, .partial:
                break
            }
            // Messages other than reports (SKY, say) must not hold back the end of an interval.
            idleIfDue()
        }
        return .stopped
    }

    /// The earliest of: the sink's deadline (a hair after it, so that it has passed), `other`, and
    /// the longest wait.
    private func waitUntil(_ other: Double?) -> Double {
        // Runs once per message from gpsd: no arrays here.
        var until = uptime() + Self.longestWait
        if let other { until = min(until, other) }
        if let deadline = sink.deadline { until = min(until, deadline + 0.001) }
        return until
    }

    private mutating func idleIfDue() {
        if let deadline = sink.deadline, uptime() >= deadline { sink.idle() }
    }

    /// Sleeps until `seconds` have passed or a stop is requested, serving the sink's deadlines meanwhile.
    private mutating func pause(seconds: Double) {
        let end = uptime() + seconds
        while !stop.isSet {
            let now = uptime()
            if now >= end { return }
            Thread.sleep(forTimeInterval: max(0, waitUntil(end) - now))
            idleIfDue()
        }
    }
}
