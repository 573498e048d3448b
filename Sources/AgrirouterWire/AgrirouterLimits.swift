/// agrirouter's limits, in one place: what the gateway budgets with and what the local agrirouter
/// enforces. The sources are in the README's "agrirouter" section.
public enum AgrirouterLimits {
    /// The most raw payload bytes one message may carry. agrirouter's own cap is 1 MB of protobuf;
    /// the SDKs chunk at 767,997 bytes so that the base64 stays within 1,024,000 characters, and
    /// gps:info and EFDI cannot be chunked, so no message of ours carries more.
    public static let payloadBytes = 767_997
    /// The most characters of one message's base64 in a measures request.
    public static let messageCharacters = 1_024_000
    /// The most characters of one chunk's message in a measures request: the chunk's base64 is
    /// encoded again inside the envelope's base64, and the Java SDK notes agrirouter takes up to
    /// 1,468,000 characters per message.
    public static let chunkedMessageCharacters = 1_468_000
    /// How long an answer waits in the outbox before agrirouter forgets it.
    public static let outboxLifetime: Double = 300
    /// The least seconds between two requests DKE advises: 10 on QA, 5 in production.
    public static func spacing(for environment: String) -> Double {
        environment == "production" ? 5 : 10
    }
}
