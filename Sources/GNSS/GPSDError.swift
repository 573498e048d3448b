/// A failure talking to gpsd. `code` is libgps' NL_* code (negative) or an errno value.
public struct GPSDError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The host name does not resolve (NL_NOHOST).
        case cannotResolve = "cannot_resolve"
        /// Nothing accepts connections at the address (NL_NOCONNECT and friends).
        case cannotConnect = "cannot_connect"
        /// gpsd accepted the connection but refused the WATCH request.
        case watchFailed = "watch_failed"
        /// gpsd closed the connection, or reading from it failed.
        case connectionLost = "connection_lost"
    }

    public var kind: Kind
    public var address: GPSDAddress
    public var code: Int32
    public var message: String

    public init(kind: Kind, address: GPSDAddress, code: Int32, message: String) {
        self.kind = kind
        self.address = address
        self.code = code
        self.message = message
    }

    public var description: String {
        switch kind {
        case .cannotResolve: return "cannot resolve gpsd host '\(address.host)': \(message)"
        case .cannotConnect: return "gpsd unreachable at \(address): \(message)"
        case .watchFailed: return "gpsd at \(address) refused the watch request: \(message)"
        case .connectionLost: return "lost the connection to gpsd at \(address): \(message)"
        }
    }
}
