import Bounds
import Logging

/// Every log line passes through here on its way to standard error (the journal, under systemd).
/// Messages carry text from outside (agrirouter's codes and errors, other machines' ids, gpsd's
/// device names), so control characters are escaped and the length capped here, in one place: no
/// line can move a terminal's cursor or forge a second journal entry.
public struct SafeLogHandler: LogHandler {
    public var wrapped: any LogHandler

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        var safe = event
        safe.message = "\(TerminalText.safe(event.message.description, limit: 2000))"
        safe.metadata = event.metadata?.mapValues { .string(TerminalText.safe("\($0)", limit: 500)) }
        wrapped.log(event: safe)
    }
}
