import Hummingbird
import NIOCore

/// Hummingbird's basic context plus the address the request came from: the login throttle and the
/// session table count per client.
struct CabContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The peer as the throttle and the sessions count it: an IPv4 address ("127.0.0.1"), "::1", an
    /// IPv6 /64 network ("2001:db8:1:2::/64"), or "unknown".
    let client: String

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        client = Self.client(source.channel.remoteAddress)
    }

    /// One host of IPv6 commonly holds a whole /64 and may take a new address for every request: as
    /// one address each, it would get a guess from each. Its network counts as one client.
    static func client(_ address: SocketAddress?) -> String {
        let asText = address?.ipAddress ?? "unknown"
        guard case .v6(let v6)? = address else { return asText }
        let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        guard bytes.count == 16 else { return asText }
        let mappedIPv4 = bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        let loopback = bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1
        guard !mappedIPv4, !loopback else { return asText }
        let groups = stride(from: 0, to: 8, by: 2).map { String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16) }
        return groups.joined(separator: ":") + "::/64"
    }
}
