/// Turns a stream of source events into one `PositionSample` per interval, in real time.
public struct Sampler: Sendable {
    public var interval: Double
    public var skewLimit: Double?

    public init(interval: Double, skewLimit: Double? = 60) {
        precondition(interval > 0, "the sampling interval must be positive")
        self.interval = interval
        self.skewLimit = skewLimit
    }

    private enum Input: Sendable {
        case event(SourceEvent)
        case tick
        case end
    }

    /// The samples end when `events` ends (after the last interval is emitted) or when cancelled.
    public func samples(from events: AsyncStream<SourceEvent>) -> AsyncStream<PositionSample> {
        let interval = interval
        let skewLimit = skewLimit
        // Ticks only prompt a check of the clocks; a fraction of the interval keeps samples punctual.
        let tickSeconds = min(max(interval / 4, 0.01), 0.5)
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
                var core = SamplerCore(interval: interval, skewLimit: skewLimit, start: .now())
                loop: for await input in inputs {
                    let now = ClockReading.now()
                    switch input {
                    case .event(let event): core.handle(event, at: now).forEach { output.yield($0) }
                    case .tick: core.tick(at: now).forEach { output.yield($0) }
                    case .end:
                        core.finish(at: now).forEach { output.yield($0) }
                        break loop
                    }
                }
                forwarder.cancel()
                ticker.cancel()
                feed.finish()
                output.finish()
            }
            output.onTermination = { _ in work.cancel() }
        }
    }
}
