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
        let stop = StopFlag()
        continuation.onTermination = { _ in stop.set() }
        let reader = SourceReader(configuration: configuration, logger: logger,
                                  continuation: continuation, stop: stop)
        let thread = Thread { reader.run() }
        thread.name = "agrigps.gpsd-reader"
        thread.start()
        return stream
    }
}

/// A one-way flag from the consumer to the reader thread.
final class StopFlag: Sendable {
    private let value = Atomic<Bool>(false)
    func set() { value.store(true, ordering: .releasing) }
    var isSet: Bool { value.load(ordering: .acquiring) }
}

/// The reader thread's loop. Everything here runs on that one thread.
private struct SourceReader: Sendable {
    let configuration: GPSDSource.Configuration
    let logger: Logger
    let continuation: AsyncStream<SourceEvent>.Continuation
    let stop: StopFlag

    private static let pollSeconds = 0.25

    func run() {
        var backoff = configuration.initialBackoff
        var lastFailure: GPSDError?
        while !stop.isSet {
            let connection: GPSDConnection
            do {
                connection = try GPSDConnection(address: configuration.address)
            } catch {
                if error != lastFailure { logger.warning("\(error.description); retrying") }
                lastFailure = error
                continuation.yield(.unreachable(error))
                guard configuration.reconnects else { break }
                pause(seconds: backoff)
                backoff = min(backoff * 2, configuration.maximumBackoff)
                continue
            }
            backoff = configuration.initialBackoff
            lastFailure = nil
            logger.info("connected to gpsd at \(configuration.address)")
            continuation.yield(.connected(configuration.address))
            let outcome = follow(connection)
            if case .lost(let error) = outcome {
                logger.warning("\(error.description)")
                continuation.yield(.disconnected(error))
            }
            if outcome == .finished || !configuration.reconnects { break }
        }
        continuation.finish()
    }

    private enum Outcome: Equatable {
        case stopped, finished, lost(GPSDError)
    }

    /// Reads one connection until it fails, the consumer leaves, or a replay ends.
    private func follow(_ connection: GPSDConnection) -> Outcome {
        var lastReport = uptime()
        var silenceReported = false
        while !stop.isSet {
            if !connection.waitForData(timeout: Self.pollSeconds) {
                let quiet = uptime() - lastReport
                if !silenceReported && quiet >= configuration.silenceThreshold {
                    silenceReported = true
                    continuation.yield(.receiverSilent(seconds: quiet))
                }
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
                lastReport = uptime()
                silenceReported = false
                continuation.yield(.report(report))
            case .devices(let paths):
                continuation.yield(.devices(paths))
            case .device(let path, true):
                continuation.yield(.deviceActivated(path))
            case .device(let path, false):
                continuation.yield(.deviceRemoved(path))
                if configuration.finishWhenDeviceRemoved { return .finished }
            case .sky, .other, .partial:
                break
            }
        }
        return .stopped
    }

    /// Sleeps in short steps so that a stop request is honoured quickly.
    private func pause(seconds: Double) {
        let deadline = uptime() + seconds
        while !stop.isSet {
            let left = deadline - uptime()
            if left <= 0 { return }
            Thread.sleep(forTimeInterval: min(left, 0.05))
        }
    }
}

/// Monotonic seconds; unaffected by the system clock being set (boxes without an RTC boot at 1970).
public func uptime() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
