import GNSS

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
    public func stream(silenceThreshold: Double = 5) -> ReplayStream {
        var configuration = GPSDSource.Configuration(address: address)
        configuration.reconnects = false
        configuration.finishWhenDeviceRemoved = true
        configuration.silenceThreshold = silenceThreshold
        let source = GPSDSource(configuration: configuration).events()
        let (events, relay) = AsyncStream.makeStream(of: SourceEvent.self)
        let ending = Task { () -> ReplayEnding in
            var ending = ReplayEnding.failed("gpsd stopped before the end of the log")
            for await event in source {
                switch event {
                case .deviceRemoved: ending = .endOfLog
                case .unreachable(let error), .disconnected(let error): ending = .failed(error.description)
                default: break
                }
                relay.yield(event)
            }
            relay.finish()
            return ending
        }
        relay.onTermination = { _ in ending.cancel() }
        return ReplayStream(events: events, ending: ending)
    }
}
