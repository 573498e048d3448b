import BlockingWork
import Bounds
import CCurl
import Foundation
import Synchronization

/// The endpoint's client certificate. The key stays encrypted; libcurl gets all three from memory, so
/// no plaintext key ever reaches a file. Printing it shows nothing secret.
public struct ClientCredentials: Sendable, CustomStringConvertible {
    public var certificatePEM: String
    public var encryptedKeyPEM: String
    public var secret: String

    public init(certificatePEM: String, encryptedKeyPEM: String, secret: String) {
        self.certificatePEM = certificatePEM
        self.encryptedKeyPEM = encryptedKeyPEM
        self.secret = secret
    }

    /// agrirouter's PEM credential: the encrypted key block, then the certificate block.
    public init?(agrirouterPEM: String, secret: String) {
        guard let split = agrirouterPEM.range(of: "-----BEGIN CERTIFICATE-----") else { return nil }
        let key = String(agrirouterPEM[..<split.lowerBound])
        guard key.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") else { return nil }
        self.init(certificatePEM: String(agrirouterPEM[split.lowerBound...]), encryptedKeyPEM: key, secret: secret)
    }

    public var description: String { "ClientCredentials(certificate, encrypted key, secret: redacted)" }
}

public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var body: Data
    /// The server's clock, from its `Date` header (whole seconds, so never ahead of it); nil without
    /// one or with one that is not a date from 1980 to 2200.
    public var serverDate: Date?

    public init(status: Int, body: Data, serverDate: Date? = nil) {
        self.status = status
        self.body = body
        self.serverDate = serverDate
    }
}

/// A failed request, by what the user or the code can do about it.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    case cannotConnect(String)
    case timedOut
    /// The server's certificate is not trusted: wrong CA bundle, or not agrirouter.
    case serverNotTrusted(String)
    /// The server refused our client certificate (none, or one from another CA).
    case clientCertificateRejected(String)
    /// Our certificate or key cannot be used: the secret does not open the key, or the PEM is damaged.
    case credentialsUnusable(String)
    /// The TLS handshake or the connection failed otherwise, before the whole request was sent.
    case connectionFailed(String)
    /// The whole request was sent, then the connection broke before the answer: it may have arrived.
    case brokenAfterSending(String)
    case unauthorized
    case forbidden
    case notFound
    case payloadTooLarge
    case serverError(Int)
    case unexpectedStatus(Int)
    /// The answer grew past the client's cap and was cut off: no answer agrirouter sends is that large.
    case responseTooLarge(limit: Int)
    /// libcurl refused an option we set: a libcurl too old or built without what agrigps needs.
    case libcurlRefused(option: String, code: Int)
    /// libcurl cannot be opened: not installed, too old, or damaged.
    case libcurlUnavailable(String)
    /// Not sent: the daemon is stopping, and a request begun now could take an answer from the
    /// outbox that nothing would be left to record.
    case stopping

    public var description: String {
        switch self {
        case .cannotConnect(let detail): return "cannot connect to agrirouter: \(detail)"
        case .timedOut: return "agrirouter did not answer in time"
        case .serverNotTrusted(let detail): return "the server's certificate is not trusted (\(detail)); check the CA bundle"
        case .clientCertificateRejected(let detail): return "agrirouter refused this endpoint's certificate (\(detail)); onboard again"
        case .credentialsUnusable(let detail): return "the stored certificate cannot be used (\(detail)); its secret does not open its key or it is damaged: onboard again"
        case .connectionFailed(let detail): return "the connection to agrirouter failed: \(detail)"
        case .brokenAfterSending(let detail): return "the connection to agrirouter broke after the request was sent: \(detail)"
        case .unauthorized: return "agrirouter answered 401 Unauthorized: the endpoint's certificate is not accepted; onboard again"
        case .forbidden: return "agrirouter answered 403 Forbidden: the endpoint may have been removed; onboard again"
        case .notFound: return "agrirouter answered 404 Not Found: the endpoint's URLs are no longer valid; onboard again"
        case .payloadTooLarge: return "agrirouter answered 413: the message is larger than it accepts"
        case .serverError(let status): return "agrirouter answered \(status), a server error; it will be retried"
        case .unexpectedStatus(let status): return "agrirouter answered with unexpected HTTP status \(status)"
        case .responseTooLarge(let limit):
            return "the answer was larger than \(limit / 1_048_576) MiB, more than agrirouter ever sends; it was cut off and not read"
        case .libcurlRefused(let option, let code):
            return "libcurl refused \(option) (CURLcode \(code)); install a libcurl with OpenSSL, 7.85 or later"
        case .libcurlUnavailable(let detail):
            return "libcurl cannot be loaded (\(detail)); install the libcurl4 package, 7.85 or later"
        case .stopping: return "not sent: the daemon is stopping"
        }
    }
}

/// HTTPS over libcurl's easy API. The server is always verified; `trustedCAPEM` replaces the system's
/// CA bundle (the local agrirouter has its own CA). There is no switch to turn verification off.
public struct HTTPSClient: Sendable {
    public var trustedCAPEM: String?
    public var connectTimeout: Double
    public var totalTimeout: Double
    /// The largest answer read; a larger one is cut off with `responseTooLarge`, so a hostile or broken
    /// server cannot make the daemon hold more than this in memory.
    public var maximumResponseBytes: Int
    /// Shared by copies of this client: the handles whose connections can be used again.
    private let handles = CurlHandlePool()

    /// The outbox holds at most a few feed pages (1 MB each) and pushes: 16 MiB is several times that.
    public static let defaultResponseLimit = 16 * 1_048_576

    public init(trustedCAPEM: String? = nil, connectTimeout: Double = 10, totalTimeout: Double = 60,
                maximumResponseBytes: Int = HTTPSClient.defaultResponseLimit) {
        self.trustedCAPEM = trustedCAPEM
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maximumResponseBytes = maximumResponseBytes
    }

    /// Opens libcurl at the first request, once per process: nil when it is ready, else why not.
    private static let libcurlProblem: String? = {
        var error = [CChar](repeating: 0, count: 512)
        guard ccurl_open(&error, error.count) != 0 else { return nil }
        return String(errorBuffer: error)
    }()

    /// Performs one request on the calling thread; use `send` from async code.
    /// With `anyStatus`, every HTTP answer is returned with its body (onboarding reads agrirouter's
    /// error codes from it); otherwise non-2xx statuses are typed errors.
    public func perform(method: String, url: String, body: Data? = nil, headers: [String] = [],
                        credentials: ClientCredentials? = nil, anyStatus: Bool = false) throws(TransportError) -> HTTPResponse {
        if let problem = Self.libcurlProblem { throw .libcurlUnavailable(problem) }
        guard let reusable = handles.take() else { throw .connectionFailed("libcurl could not start a request") }
        let handle = reusable.raw
        var completed = false
        // Only a handle whose request completed goes back; after a failure its connection is suspect.
        defer { if completed { handles.put(reusable) } }
        let response = ResponseBuffer(limit: maximumResponseBytes)
        let requestBody = body.map(RequestBody.init)
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { ccurl_slist_free_all(headerList) }
        for header in ["Accept: application/json"] + headers {
            // Out of memory: the request goes without the header, and fails on its own terms.
            if let longer = ccurl_slist_append(headerList, header) { headerList = longer }
        }

        let code: CURLcode = try errorBuffer.withUnsafeMutableBufferPointer { errors throws(TransportError) in
            // Every option is checked, as a refused one (a TLS option in a libcurl without it) would
            // otherwise send the request without it.
            var options = CurlOptions(handle)
            connection(&options, url: url, credentials: credentials, errors: errors.baseAddress, connectTimeout: connectTimeout)
            options.set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headerList), "CURLOPT_HTTPHEADER")
            // A larger declared answer is refused before its body is read.
            options.set(CURLOPT_MAXFILESIZE_LARGE, maximumResponseBytes, "CURLOPT_MAXFILESIZE_LARGE")
            options.set(CURLOPT_CUSTOMREQUEST, method, "CURLOPT_CUSTOMREQUEST")
            // A connection idle this long may have been closed by the server: a new one is safer
            // than a request that dies on it, whose body may or may not have been taken.
            options.set(CURLOPT_MAXAGE_CONN, 30, "CURLOPT_MAXAGE_CONN")
            if let requestBody {
                // Read through our callback, which knows whether the whole body ever went out.
                options.set(CURLOPT_POST, 1, "CURLOPT_POST")
                options.set(CURLOPT_POSTFIELDSIZE_LARGE, requestBody.bytes.count, "CURLOPT_POSTFIELDSIZE_LARGE")
                options.check(ccurl_set_read_callback(handle, { buffer, size, count, context in
                    guard let buffer, let context else { return 0 }
                    return Unmanaged<RequestBody>.fromOpaque(context).takeUnretainedValue().read(into: buffer, size * count)
                }, Unmanaged.passUnretained(requestBody).toOpaque()), "CURLOPT_READFUNCTION")
            }
            let context = Unmanaged.passUnretained(response).toOpaque()
            options.check(ccurl_set_write_callback(handle, { data, size, count, context in
                guard let data, let context else { return 0 }
                // Returning less than was given makes libcurl stop with CURLE_WRITE_ERROR.
                return Unmanaged<ResponseBuffer>.fromOpaque(context).takeUnretainedValue().append(data, size * count) ? size * count : 0
            }, context), "CURLOPT_WRITEFUNCTION")
            if let refused = options.refused { throw refused }
            return ccurl_easy_perform(handle)
        }
        if response.overflowed || code == CURLE_FILESIZE_EXCEEDED { throw .responseTooLarge(limit: maximumResponseBytes) }
        guard code == CURLE_OK else {
            let written = String(errorBuffer: errorBuffer)
            let detail = written.isEmpty ? String(cString: ccurl_easy_strerror(code)) : written
            // Whether a POST may have arrived decides whether its batch waits for an answer: it did
            // only if its whole body went out, on this connection or one that died before it.
            let sentWhole = requestBody.map { $0.wentOutWhole || (!$0.bytes.isEmpty && ccurl_size_uploaded(handle) >= Int64($0.bytes.count)) } ?? false
            throw Self.error(for: code, detail: detail, sentWholeBody: sentWhole, hasBody: body != nil)
        }
        completed = true
        let status = Int(ccurl_response_code(handle))
        let date = Self.serverDate(handle)
        if anyStatus { return HTTPResponse(status: status, body: response.data, serverDate: date) }
        switch status {
        case 200..<300: return HTTPResponse(status: status, body: response.data, serverDate: date)
        case 401: throw .unauthorized
        case 403: throw .forbidden
        case 404: throw .notFound
        case 413: throw .payloadTooLarge
        case 500..<600: throw .serverError(status)
        default: throw .unexpectedStatus(status)
        }
    }

    /// The options every connection gets: where to, the timeouts, and TLS both ways (the server
    /// always verified, the endpoint's certificate shown when there is one).
    private func connection(_ options: inout CurlOptions, url: String, credentials: ClientCredentials?,
                            errors: UnsafeMutablePointer<CChar>?, connectTimeout: Double) {
        options.set(CURLOPT_URL, url, "CURLOPT_URL")
        options.set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errors), "CURLOPT_ERRORBUFFER")
        options.set(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        options.set(CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(connectTimeout), "CURLOPT_CONNECTTIMEOUT_MS")
        options.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(totalTimeout), "CURLOPT_TIMEOUT_MS")
        options.set(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
        options.set(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
        options.set(CURLOPT_PROTOCOLS_STR, "https", "CURLOPT_PROTOCOLS_STR")
        if let trustedCAPEM { options.set(CURLOPT_CAINFO_BLOB, blob: trustedCAPEM, "CURLOPT_CAINFO_BLOB") }
        if let credentials {
            options.set(CURLOPT_SSLCERT_BLOB, blob: credentials.certificatePEM, "CURLOPT_SSLCERT_BLOB")
            options.set(CURLOPT_SSLCERTTYPE, "PEM", "CURLOPT_SSLCERTTYPE")
            options.set(CURLOPT_SSLKEY_BLOB, blob: credentials.encryptedKeyPEM, "CURLOPT_SSLKEY_BLOB")
            options.set(CURLOPT_SSLKEYTYPE, "PEM", "CURLOPT_SSLKEYTYPE")
            options.set(CURLOPT_KEYPASSWD, credentials.secret, "CURLOPT_KEYPASSWD")
        }
    }

    /// Opens a connection to `url`'s server, TCP and TLS both ways, and closes it without a request:
    /// whether agrirouter can be reached, at the cost of a handshake and none of its API. A fresh
    /// handle, so that a pooled live connection never answers for a server that has gone.
    public func reach(url: String, credentials: ClientCredentials? = nil) throws(TransportError) {
        if let problem = Self.libcurlProblem { throw .libcurlUnavailable(problem) }
        guard let probe = CurlHandle() else { throw .connectionFailed("libcurl could not start a connection") }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = try errorBuffer.withUnsafeMutableBufferPointer { errors throws(TransportError) in
            var options = CurlOptions(probe.raw)
            connection(&options, url: url, credentials: credentials, errors: errors.baseAddress, connectTimeout: min(connectTimeout, 5))
            options.set(CURLOPT_CONNECT_ONLY, 1, "CURLOPT_CONNECT_ONLY")
            if let refused = options.refused { throw refused }
            let code = ccurl_easy_perform(probe.raw)
            // The handle outlives this buffer and may write to it as it is cleaned up: it is told first.
            _ = ccurl_set_pointer(probe.raw, CURLOPT_ERRORBUFFER, nil)
            return code
        }
        guard code == CURLE_OK else {
            let written = String(errorBuffer: errorBuffer)
            throw Self.error(for: code, detail: written.isEmpty ? String(cString: ccurl_easy_strerror(code)) : written)
        }
    }

    private static func serverDate(_ handle: UnsafeMutableRawPointer) -> Date? {
        guard let value = ccurl_header(handle, "Date") else { return nil }
        let seconds = ccurl_getdate(value)  // -1 when it is not a date
        return seconds >= 0 ? Bounds.date(secondsSince1970: Double(seconds)) : nil
    }

    /// `perform` on a thread of its own (about 50 µs to start, beside requests seconds apart): a
    /// request waits on the network for up to its timeout, and must never block the cooperative pool.
    public func send(method: String, url: String, body: Data? = nil, headers: [String] = [],
                     credentials: ClientCredentials? = nil, anyStatus: Bool = false) async throws(TransportError) -> HTTPResponse {
        try await onOwnThread { () throws(TransportError) in
            try perform(method: method, url: url, body: body, headers: headers, credentials: credentials, anyStatus: anyStatus)
        }
    }

    /// `reach` off the cooperative pool.
    public func probe(url: String, credentials: ClientCredentials? = nil) async throws(TransportError) {
        try await onOwnThread { () throws(TransportError) in try reach(url: url, credentials: credentials) }
    }

    /// A timeout for libcurl: whole milliseconds, at least 1, clamped to a day (a checked value never
    /// reaches the clamp; a NaN would otherwise trap the conversion).
    static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite else { return 86_400_000 }
        return Bounds.clamped(seconds * 1000, to: 1...86_400_000) ?? 86_400_000
    }

    static func error(for code: CURLcode, detail: String, sentWholeBody: Bool = false, hasBody: Bool = false) -> TransportError {
        // A body that went out whole may have been taken, whatever failed after it (a retry's
        // connect, a rewind libcurl was not allowed to make).
        if sentWholeBody, code != CURLE_OPERATION_TIMEDOUT { return .brokenAfterSending(detail) }
        switch code {
        case CURLE_OPERATION_TIMEDOUT:
            return hasBody && !sentWholeBody ? .connectionFailed("timed out before the request was sent (\(detail))") : .timedOut
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: return .cannotConnect(detail)
        case CURLE_SSL_CERTPROBLEM: return .credentialsUnusable(detail)
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE: return .serverNotTrusted(detail)
        default:
            // A server that refuses our certificate says so with a TLS alert ("certificate required",
            // "unknown ca", "decrypt error", ...); TLS 1.3 delivers it on the first read.
            if detail.lowercased().contains("alert") {
                return .clientCertificateRejected(detail)
            }
            return sentWholeBody ? .brokenAfterSending(detail) : .connectionFailed(detail)
        }
    }
}

/// Idle libcurl handles, kept between requests. A handle keeps its connection and TLS session, so a
/// request every few seconds pays neither a new TCP and TLS handshake nor the decryption of the
/// client key each time (in the benchmark, publishing's CPU fell by about a quarter).
private final class CurlHandlePool: Sendable {
    private static let idleLimit = 2
    private let idle = Mutex<[CurlHandle]>([])

    /// An idle handle, or a new one; nil only if libcurl cannot make one.
    func take() -> CurlHandle? {
        idle.withLock { $0.popLast() } ?? CurlHandle()
    }

    func put(_ handle: CurlHandle) {
        ccurl_easy_reset(handle.raw)  // clears the options; keeps the live connection and session cache
        idle.withLock { handles in
            if handles.count < Self.idleLimit { handles.append(handle) }
        }
    }
}

/// One easy handle. It is used by one request at a time: the pool hands it out exclusively.
private final class CurlHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer

    init?() {
        guard let raw = ccurl_easy_init() else { return nil }
        self.raw = raw
    }

    deinit { ccurl_easy_cleanup(raw) }
}

/// The options of one request, set in turn; the first that libcurl refuses is kept to be thrown.
private struct CurlOptions {
    let handle: UnsafeMutableRawPointer
    private(set) var refused: TransportError?

    init(_ handle: UnsafeMutableRawPointer) {
        self.handle = handle
    }

    mutating func check(_ code: CURLcode, _ name: String) {
        if code != CURLE_OK, refused == nil { refused = .libcurlRefused(option: name, code: Int(code.rawValue)) }
    }

    mutating func set(_ option: CURLoption, _ value: Int, _ name: String) {
        check(ccurl_set_long(handle, option, value), name)
    }

    mutating func set(_ option: CURLoption, _ value: String, _ name: String) {
        check(ccurl_set_string(handle, option, value), name)
    }

    mutating func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?, _ name: String) {
        check(ccurl_set_pointer(handle, option, pointer), name)
    }

    /// libcurl copies the bytes, so the array may go away afterwards.
    mutating func set(_ option: CURLoption, blob text: String, _ name: String) {
        var bytes = Array(text.utf8)
        check(ccurl_set_blob(handle, option, &bytes, bytes.count), name)
    }
}

/// The answer as it arrives, up to a cap; past it, nothing more is kept and the transfer stops.
/// The request body, handed to libcurl as it asks; it notes whether all of it was ever handed out.
private final class RequestBody {
    let bytes: [UInt8]
    private var offset = 0
    private(set) var wentOutWhole = false

    init(_ data: Data) {
        bytes = [UInt8](data)
    }

    func read(into buffer: UnsafeMutablePointer<CChar>, _ capacity: Int) -> Int {
        let count = min(capacity, bytes.count - offset)
        if count > 0 {
            bytes.withUnsafeBytes { source in
                UnsafeMutableRawPointer(buffer).copyMemory(from: source.baseAddress! + offset, byteCount: count)
            }
            offset += count
        }
        if offset == bytes.count { wentOutWhole = true }
        return count
    }
}

/// An answer's body as curl hands it over, up to a cap: past it, nothing more is kept and the
/// write callback stops the transfer. Also the cab view's tile fetches'.
public final class ResponseBuffer {
    public let limit: Int
    public private(set) var data = Data()
    public private(set) var overflowed = false

    public init(limit: Int) {
        self.limit = limit
    }

    /// False when `count` more bytes would pass the cap.
    public func append(_ bytes: UnsafeMutablePointer<CChar>, _ count: Int) -> Bool {
        guard count <= limit - data.count else {
            overflowed = true
            return false
        }
        data.append(UnsafeRawPointer(bytes).assumingMemoryBound(to: UInt8.self), count: count)
        return true
    }
}

extension String {
    /// The text a C library wrote into `buffer`, up to its terminating NUL (or the whole buffer).
    init(errorBuffer buffer: [CChar]) {
        self.init(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
