import Foundation

/// An HTTP/1.1 answer as it came off the wire.
public struct HTTPReply: Sendable {
    public var status: Int
    public var headers: [(name: String, value: String)]
    public var body: Data

    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var text: String { String(decoding: body, as: UTF8.self) }
    public var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] }
}

public struct LoopbackHTTPError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}

/// A deliberately small HTTP client for tests, on plain blocking sockets run on a thread of their own
/// (never on Swift's cooperative pool, which an in-process server needs): every header is the test's
/// to choose, the Host included, and a stream (Server-Sent Events) can be read as it arrives.
public enum LoopbackHTTP {
    public static func request(
        _ method: String, port: Int, path: String, headers: [String: String] = [:], body: Data? = nil,
        timeout: Double = 15
    ) async throws -> HTTPReply {
        let raw = try await onThread {
            try exchange(method, port: port, path: path, headers: headers, body: body, timeout: timeout) { _ in false }
        }
        return try parse(raw)
    }

    /// JSON in, the answer out.
    public static func post(port: Int, path: String, json: Any, headers: [String: String] = [:]) async throws
        -> HTTPReply
    {
        let body = try JSONSerialization.data(withJSONObject: json)
        return try await request(
            "POST", port: port, path: path, headers: headers.merging(["Content-Type": "application/json"]) { $1 },
            body: body)
    }

    /// Reads a streaming answer until `done` says the text so far is enough, or `timeout` passes; the text read.
    public static func stream(
        port: Int, path: String, headers: [String: String] = [:], timeout: Double,
        until done: @escaping @Sendable (String) -> Bool
    ) async throws -> String {
        let raw = try await onThread {
            try exchange("GET", port: port, path: path, headers: headers, body: nil, timeout: timeout) {
                done(String(decoding: $0, as: UTF8.self))
            }
        }
        return String(decoding: raw, as: UTF8.self)
    }

    private static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Result { try body() }) }
            thread.start()
        }
    }

    private static func exchange(
        _ method: String, port: Int, path: String, headers: [String: String], body: Data?, timeout: Double,
        enough: (Data) -> Bool
    ) throws -> Data {
        let descriptor = try connectedSocket(port: port)
        defer { close(descriptor) }
        var wait = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        var head = "\(method) \(path) HTTP/1.1\r\n"
        var all = ["Host": "127.0.0.1:\(port)", "Connection": "close"].merging(headers) { $1 }
        if let body { all["Content-Length"] = String(body.count) }
        for (name, value) in all.sorted(by: { $0.key < $1.key }) where !value.isEmpty {
            head += "\(name): \(value)\r\n"
        }
        let request = Data((head + "\r\n").utf8) + (body ?? Data())
        let sent = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard sent == request.count else { throw LoopbackHTTPError(description: "send: \(errno)") }
        var received = Data()
        let deadline = Date().addingTimeInterval(timeout)
        var buffer = [UInt8](repeating: 0, count: 65536)
        while Date() < deadline {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
                if enough(received) || isComplete(received) { return received }
            } else if count == 0 {
                return received
            } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
                throw LoopbackHTTPError(description: "recv: \(errno)")
            }
        }
        if method == "GET", headers["Accept"] == "text/event-stream" { return received }
        throw LoopbackHTTPError(
            description:
                "no whole answer from 127.0.0.1:\(port)\(path) within \(timeout) s: \(String(decoding: received.prefix(300), as: UTF8.self))"
        )
    }

    /// A TCP socket connected to 127.0.0.1:`port`; the caller closes it.
    public static func connectedSocket(port: Int) throws -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw LoopbackHTTPError(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw LoopbackHTTPError(description: "connect to 127.0.0.1:\(port): errno \(code)")
        }
        return descriptor
    }

    /// Whether a whole answer is in: its Content-Length read, or a chunked body's last chunk. A server
    /// may keep the connection open despite "Connection: close".
    static func isComplete(_ raw: Data) -> Bool {
        guard let split = raw.range(of: Data("\r\n\r\n".utf8)) else { return false }
        let head = String(decoding: raw[..<split.lowerBound], as: UTF8.self).lowercased()
        let body = raw[split.upperBound...]
        for line in head.components(separatedBy: "\r\n") where line.hasPrefix("content-length:") {
            return Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)).map {
                body.count >= $0
            } ?? false
        }
        if head.contains("transfer-encoding: chunked") {
            return body.range(of: Data("\r\n0\r\n\r\n".utf8)) != nil || body.starts(with: Data("0\r\n\r\n".utf8))
        }
        return false
    }

    static func parse(_ raw: Data) throws -> HTTPReply {
        guard let split = raw.range(of: Data("\r\n\r\n".utf8)) else {
            throw LoopbackHTTPError(description: "no header end in \(raw.count) bytes")
        }
        let lines = String(decoding: raw[..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines.first?.split(separator: " ") ?? []
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw LoopbackHTTPError(description: "bad status line \(lines.first ?? "")")
        }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var body = Data(raw[split.upperBound...])
        if headers.contains(where: { $0.0.lowercased() == "transfer-encoding" && $0.1.lowercased().contains("chunked") }
        ) {
            body = dechunk(body)
        }
        return HTTPReply(status: status, headers: headers, body: body)
    }

    static func dechunk(_ data: Data) -> Data {
        var output = Data()
        var rest = data[...]
        while let lineEnd = rest.range(of: Data("\r\n".utf8)) {
            let sizeText =
                String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText, radix: 16), size > 0 else { break }
            let start = lineEnd.upperBound
            guard let end = rest.index(start, offsetBy: size, limitedBy: rest.endIndex) else { break }
            output.append(rest[start..<end])
            rest = rest[min(rest.index(end, offsetBy: 2, limitedBy: rest.endIndex) ?? rest.endIndex, rest.endIndex)...]
        }
        return output
    }
}

/// Connections to a loopback port that send nothing: what a careless or hostile client leaves open.
public final class IdleConnections: @unchecked Sendable {
    public private(set) var descriptors: [Int32] = []

    /// Opens `count` connections to 127.0.0.1:`port`, raising this process's file limit if it must.
    public init(count: Int, port: Int) throws {
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(count * 2 + 512) {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(count * 2 + 512))
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        for _ in 0..<count {
            descriptors.append(try LoopbackHTTP.connectedSocket(port: port))
        }
    }

    /// How many the server has closed: a read that finds the end (or a reset) at once.
    public func closedByServer() -> Int {
        descriptors.filter { descriptor in
            var byte: UInt8 = 0
            let count = recv(descriptor, &byte, 1, Int32(MSG_DONTWAIT))
            return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        }.count
    }

    public func close() {
        for descriptor in descriptors { Glibc.close(descriptor) }
        descriptors = []
    }

    deinit { close() }
}
