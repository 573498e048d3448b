import Foundation

/// Which names in a request's Host header mean "this machine".
///
/// Without a password the cab view answers only browsers on this machine. A page served under a
/// rebound DNS name (`127.attacker.example`, `localhost.attacker`, `127.0.0.1.nip.io`) resolves to
/// 127.0.0.1 too, so the address the request came from proves nothing: the name the browser asked for
/// must itself be local. Accepted are loopback literals written as the kernel would (127.a.b.c in
/// plain decimal, `[::1]` in any spelling), `localhost`, and this machine's own host name, each with
/// or without a port. The port is not compared with ours: an SSH tunnel or a port forward presents
/// the page on another one, and it says nothing about the name.
enum LocalHost {
    /// Whether a Host header (`name`, `name:port`, `[v6]` or `[v6]:port`) names this machine.
    static func accepts(_ header: String?, hostName: String? = machineName()) -> Bool {
        guard let header, let (name, isBracketed) = split(header) else { return false }
        if isBracketed { return isIPv6Loopback(name) }
        let lowered = name.lowercased()
        if lowered == "localhost" || isIPv4Loopback(lowered) { return true }
        if let hostName, !hostName.isEmpty, lowered == hostName.lowercased() { return true }
        return false
    }

    /// The name and whether it was a bracketed IPv6 literal; nil if the port or the brackets are malformed.
    static func split(_ header: String) -> (String, Bool)? {
        var rest = Substring(header)
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            let name = String(rest[rest.index(after: rest.startIndex)..<close])
            rest = rest[rest.index(after: close)...]
            guard rest.isEmpty || (rest.hasPrefix(":") && isPort(rest.dropFirst())) else { return nil }
            return (name, true)
        }
        if let colon = rest.firstIndex(of: ":") {
            guard isPort(rest[rest.index(after: colon)...]) else { return nil }
            rest = rest[..<colon]
        }
        return rest.isEmpty ? nil : (String(rest), false)
    }

    /// 1 to 5 ASCII digits, 1...65535.
    static func isPort(_ text: Substring) -> Bool {
        guard (1...5).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text) else {
            return false
        }
        return (1...65535).contains(port)
    }

    /// 127.a.b.c: four decimal parts 0...255 without leading zeros or a trailing dot.
    static func isIPv4Loopback(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return false }
        for part in parts {
            guard (1...3).contains(part.count), part.allSatisfy({ $0.isASCII && $0.isNumber }),
                part == "0" || !part.hasPrefix("0"), let value = Int(part), value <= 255
            else { return false }
        }
        return parts[0] == "127"
    }

    /// ::1 in any spelling inet_pton reads (0:0:0:0:0:0:0:1 included); no zone, no mapped IPv4.
    static func isIPv6Loopback(_ name: String) -> Bool {
        var address = in6_addr()
        guard name.utf8.count <= 45, inet_pton(AF_INET6, name, &address) == 1 else { return false }
        return withUnsafeBytes(of: &address) { bytes in
            bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1
        }
    }

    /// This machine's host name, as `hostname` prints it; nil if it cannot be read.
    static func machineName() -> String? {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return nil }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? nil : name
    }
}
