import BlockingWork
import Clocks
import Foundation
import GNSS
import Synchronization

/// How a replay ended.
public enum ReplayEnding: Sendable, Equatable {
    /// gpsd reached the log's `# EOF` and closed the device.
    case endOfLog
    case failed(String)
}

/// The events of one replay, and how it ended once they are consumed.
public struct ReplayStream: Sendable {
    public let events: AsyncStream<SourceEvent>
    public let ending: Task<ReplayEnding, Never>

    public init(events: AsyncStream<SourceEvent>, ending: Task<ReplayEnding, Never>) {
        (self.events, self.ending) = (events, ending)
    }

    /// Every TPV report, in order.
    public func reports() -> AsyncStream<PositionReport> {
        AsyncStream { output in
            let task = Task {
                for await case .report(let report) in events { output.yield(report) }
                output.finish()
            }
            output.onTermination = { _ in task.cancel() }
        }
    }

    /// One sample per interval. The skew check is off: a recording's time is not now.
    public func samples(interval: Double) -> AsyncStream<PositionSample> {
        Sampler(interval: interval, skewLimit: nil).samples(from: events)
    }
}

extension ReplayGPSD {
    /// Connects a one-shot gpsd source to this replay: no reconnection, and the stream ends when
    /// gpsd closes the device at the end of the log.
    ///
    /// gpsd may never close it: bytes it takes for the start of a binary frame can swallow our
    /// `# EOF`. So once the whole log has been fed and gpsd has said nothing for `endGrace`
    /// seconds, gpsd is stopped and the replay fails, rather than waiting for ever.
    ///
    /// A feed that writes to a bus (`endsWithFeed`) begins once the source is connected, and the
    /// replay ends, as a whole log, `endGrace` seconds after its last frame. `adjust` and `standIn`
    /// are the source's (`GPSDSource.Configuration`): the bus listener's, for a CAN recording.
    public func stream(
        silenceThreshold: Double = 5, endGrace: Double = 3,
        adjust: (@Sendable (PositionReport) -> PositionReport?)? = nil,
        standIn: (@Sendable () -> PositionReport?)? = nil
    ) -> ReplayStream {
        var configuration = GPSDSource.Configuration(address: address)
        configuration.reconnects = false
        configuration.finishWhenDeviceRemoved = true
        configuration.silenceThreshold = silenceThreshold
        configuration.adjust = adjust
        configuration.standIn = standIn
        let source = GPSDSource(configuration: configuration).events()
        let (events, relay) = AsyncStream.makeStream(of: SourceEvent.self)
        let watch = ReplayWatch()
        let watchdog = Task { [self] in
            while !Task.isCancelled {
                try? await Task.sleep(nanoseconds: 100_000_000)
                guard let fedAt = feedFinishedAt else { continue }
                guard uptime() - max(fedAt, endsWithFeed ? 0 : watch.heard) >= endGrace else { continue }
                if endsWithFeed {
                    watch.reachEnd()
                    await onOwnThread { self.stop() }
                    return
                }
                watch.give(
                    up: "gpsd had not closed the device \(String(format: "%g", endGrace)) s after reading "
                        + "the whole log (part of the log may have been taken for binary data)")
                // stop() waits for gpsd to exit: not on the cooperative pool.
                await onOwnThread { self.stop() }
                return
            }
        }
        let ending = Task { () -> ReplayEnding in
            var ending = ReplayEnding.failed("gpsd stopped before the end of the log")
            for await event in source {
                watch.hear()
                switch event {
                case .connected: beginFeed()
                case .deviceRemoved: ending = .endOfLog
                case .unreachable(let error), .disconnected(let error): ending = .failed(error.description)
                default: break
                }
                relay.yield(event)
            }
            watchdog.cancel()
            relay.finish()
            // Stopping gpsd ends the source with a lost connection; the watchdog's reason is the real one.
            if watch.reachedEnd { return .endOfLog }
            if ending != .endOfLog, let reason = watch.verdict { return .failed(reason) }
            return ending
        }
        relay.onTermination = { _ in ending.cancel() }
        return ReplayStream(events: events, ending: ending)
    }
}

/// What the watchdog of a replay knows: when gpsd last said something, and why it gave up, if it did.
private final class ReplayWatch: Sendable {
    private let lastHeard = Mutex<Double>(uptime())
    private let reason = Mutex<String?>(nil)
    private let ended = Mutex(false)

    var heard: Double { lastHeard.withLock { $0 } }
    var verdict: String? { reason.withLock { $0 } }

    func hear() { lastHeard.withLock { $0 = uptime() } }
    func give(up why: String) { reason.withLock { $0 = why } }
    /// The feed wrote everything and the grace passed: the replay is over, whole.
    func reachEnd() { ended.withLock { $0 = true } }
    var reachedEnd: Bool { ended.withLock { $0 } }
}
