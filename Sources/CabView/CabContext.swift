import Hummingbird
import NIOCore

/// Hummingbird's basic context plus the address the request came from: the login throttle and the
/// session table count per client.
struct CabContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The peer as the throttle and the sessions count it: an address ("127.0.0.1", "::1",
    /// "fe80::1"), a global IPv6 /64 network ("2001:db8:1:2::/64"), or "unknown".
    let client: String

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        client = Self.client(source.channel.remoteAddress, local: source.channel.localAddress)
    }

    /// One host on the internet may hold a whole IPv6 /64 and take a new address for every request:
    /// as one address each, it would get a guess from each, so its network counts as one client. Not
    /// so on the box's own links: the devices of the cab's Wi-Fi share a /64 (or fe80::/10), and one
    /// guessing wrong must not hold up the driver's tablet.
    static func client(_ address: SocketAddress?, local: SocketAddress? = nil) -> String {
        let asText = address?.ipAddress ?? "unknown"
        // 2000::/3, global unicast
        guard let bytes = ipv6Bytes(address), bytes[0] & 0xE0 == 0x20 else { return asText }
        if let own = ipv6Bytes(local), own.prefix(8) == bytes.prefix(8) { return asText }
        let groups = stride(from: 0, to: 8, by: 2).map {
            String(UInt16(bytes[$0]) << 8 | UInt16(bytes[$0 + 1]), radix: 16)
        }
        return groups.joined(separator: ":") + "::/64"
    }

    private static func ipv6Bytes(_ address: SocketAddress?) -> [UInt8]? {
        guard case .v6(let v6)? = address else { return nil }
        let bytes = withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }
        return bytes.count == 16 ? bytes : nil
    }
}
