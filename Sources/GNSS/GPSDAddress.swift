import Foundation

/// Where gpsd listens: `HOST`, `HOST:PORT` or `[IPv6]:PORT`. The default port is gpsd's 2947.
public struct GPSDAddress: Sendable, Hashable, CustomStringConvertible {
    public static let defaultPort: UInt16 = 2947

    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16 = GPSDAddress.defaultPort) {
        self.host = host
        self.port = port
    }

    /// Parses and checks an address typed by a user; the error says what is wrong with it.
    public init(parsing text: String) throws(GPSDAddressError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { throw .empty }
        var host = trimmed
        var portText: Substring?
        if trimmed.hasPrefix("[") {
            guard let close = trimmed.firstIndex(of: "]") else { throw .malformed(text) }
            host = String(trimmed[trimmed.index(after: trimmed.startIndex)..<close])
            let rest = trimmed[trimmed.index(after: close)...]
            if !rest.isEmpty {
                guard rest.hasPrefix(":") else { throw .malformed(text) }
                portText = rest.dropFirst()
            }
        } else if let colon = trimmed.lastIndex(of: ":") {
            guard trimmed.firstIndex(of: ":") == colon else { throw .bareIPv6(text) }
            host = String(trimmed[..<colon])
            portText = trimmed[trimmed.index(after: colon)...]
        }
        guard !host.isEmpty else { throw .missingHost(text) }
        guard GPSDAddress.isPlausibleHost(host) else { throw .invalidHost(host) }
        self.host = host
        if let portText {
            guard let port = UInt16(portText), port > 0 else { throw .invalidPort(String(portText)) }
            self.port = port
        } else {
            self.port = GPSDAddress.defaultPort
        }
    }

    public var description: String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Rejects hosts that could only fail: a dotted quad out of range, or characters no host name has.
    private static func isPlausibleHost(_ host: String) -> Bool {
        if host.contains(":") { return host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } }
        let labels = host.split(separator: ".", omittingEmptySubsequences: false)
        if labels.allSatisfy({ !$0.isEmpty && $0.allSatisfy(\.isNumber) }) {
            return labels.count == 4 && labels.allSatisfy { Int($0).map { $0 <= 255 } ?? false }
        }
        return labels.allSatisfy { label in
            !label.isEmpty && label.count <= 63
                && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }
        }
    }
}

public enum GPSDAddressError: Error, Sendable, Equatable, CustomStringConvertible {
    case empty
    case malformed(String)
    case bareIPv6(String)
    case missingHost(String)
    case invalidHost(String)
    case invalidPort(String)

    public var description: String {
        switch self {
        case .empty: return "the gpsd address is empty; use HOST or HOST:PORT, e.g. 127.0.0.1:2947"
        case .malformed(let text): return "'\(text)' is not a gpsd address; use HOST:PORT or [IPv6]:PORT"
        case .bareIPv6(let text): return "'\(text)' looks like an IPv6 address; write it as [ADDRESS]:PORT"
        case .missingHost(let text): return "'\(text)' has no host; use HOST:PORT, e.g. 127.0.0.1:2947"
        case .invalidHost(let host): return "'\(host)' is not a valid host name or IP address"
        case .invalidPort(let port): return "'\(port)' is not a valid port; use a number from 1 to 65535"
        }
    }
}
