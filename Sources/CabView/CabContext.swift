import Hummingbird
import NIOCore

/// Hummingbird's basic context plus the address the request came from: the login throttle and the
/// session table count per client.
struct CabContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The peer's IP address as text ("127.0.0.1", "::1"), or "unknown".
    let client: String

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        client = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }
}
