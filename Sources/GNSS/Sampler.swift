import Clocks

/// What a sampled source delivers: one sample per interval, and the source's events other than
/// reports (connected, unreachable, devices), which are rare and say how the source is doing.
public enum SamplerOutput: Sendable, Equatable {
    case sample(PositionSample)
    case event(SourceEvent)

    public var sample: PositionSample? {
        if case .sample(let sample) = self { return sample }
        return nil
    }
}

/// Turns a stream of source events into one `PositionSample` per interval, in real time.
///
/// For gpsd itself, `GPSDSource.sampled(by:)` applies the same rules on the reader thread, so that
/// reports never cross threads; this form serves any other stream of events (replays, tests).
public struct Sampler: Sendable {
    public var interval: Double
    public var skewLimit: Double?
    /// The system clock that stamps samples.
    public var wall: WallClock

    public init(interval: Double, skewLimit: Double? = 60, wall: WallClock = .system) {
        precondition(interval > 0, "the sampling interval must be positive")
        self.interval = interval
        self.skewLimit = skewLimit
        self.wall = wall
    }

    func core() -> SamplerCore {
        SamplerCore(interval: interval, skewLimit: skewLimit, start: wall.reading())
    }

    func relay(to continuation: AsyncStream<SamplerOutput>.Continuation) -> SamplingRelay {
        SamplingRelay(core: core(), wall: wall, continuation: continuation)
    }

    private enum Input: Sendable {
        case event(SourceEvent)
        case tick
        case end
    }

    /// The samples end when `events` ends (after the last interval is emitted) or when cancelled.
    public func samples(from events: AsyncStream<SourceEvent>) -> AsyncStream<PositionSample> {
        let outputs = outputs(from: events)
        return AsyncStream { output in
            let task = Task {
                for await case .sample(let sample) in outputs { output.yield(sample) }
                output.finish()
            }
            output.onTermination = { _ in task.cancel() }
        }
    }

    /// Samples, and the events other than reports, in the order they happened.
    public func outputs(from events: AsyncStream<SourceEvent>) -> AsyncStream<SamplerOutput> {
        // Ticks only prompt a check of the clocks; a fraction of the interval keeps samples punctual.
        let tickSeconds = min(max(interval / 4, 0.01), 0.5)
        let start = core()
        let wall = wall
        return AsyncStream { output in
            let work = Task {
                let (inputs, feed) = AsyncStream.makeStream(of: Input.self)
                let forwarder = Task {
                    for await event in events { feed.yield(.event(event)) }
                    feed.yield(.end)
                }
                let ticker = Task {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .seconds(tickSeconds))
                        feed.yield(.tick)
                    }
                }
                // The same relay the gpsd reader thread uses, fed from this task instead.
                var relay = SamplingRelay(core: start, wall: wall, continuation: output)
                loop: for await input in inputs {
                    switch input {
                    case .event(let event): relay.take(event)
                    case .tick: relay.idle()
                    case .end: break loop
                    }
                }
                forwarder.cancel()
                ticker.cancel()
                feed.finish()
                relay.finish()
            }
            output.onTermination = { _ in work.cancel() }
        }
    }
}

/// The sampler's rules applied to events as they arrive, on whichever thread delivers them: the gpsd
/// reader thread (`GPSDSource.sampled(by:)`) or `Sampler`'s task.
struct SamplingRelay: SourceSink {
    var core: SamplerCore
    let wall: WallClock
    let continuation: AsyncStream<SamplerOutput>.Continuation

    var deadline: Double? { core.nextTick }

    /// The samples the event closes, then the event itself unless it is a report.
    mutating func take(_ event: SourceEvent) {
        for sample in core.handle(event, at: wall.reading()) { continuation.yield(.sample(sample)) }
        if case .report = event {} else { continuation.yield(.event(event)) }
    }

    mutating func idle() {
        for sample in core.tick(at: wall.reading()) { continuation.yield(.sample(sample)) }
    }

    mutating func finish() {
        for sample in core.finish(at: wall.reading()) { continuation.yield(.sample(sample)) }
        continuation.finish()
    }
}
