import BlockingWork
import Bounds
import CCurl
import Foundation
import Synchronization

/// A client certificate handed to libcurl from memory: the key stays encrypted, and no plaintext key
/// ever reaches a file. Printing it shows nothing secret.
public struct CurlClientCertificate: Sendable, CustomStringConvertible {
    public var certificatePEM: String
    public var encryptedKeyPEM: String
    public var secret: String

    public init(certificatePEM: String, encryptedKeyPEM: String, secret: String) {
        self.certificatePEM = certificatePEM
        self.encryptedKeyPEM = encryptedKeyPEM
        self.secret = secret
    }

    public var description: String { "ClientCredentials(certificate, encrypted key, secret: redacted)" }
}

/// One request as libcurl is told it. The server is always verified when the scheme is https; there
/// is no switch to turn that off.
public struct CurlRequest: Sendable {
    public var method = "GET"
    public var url: String
    public var headers: [String] = []
    public var body: Data?
    /// The one scheme allowed, for the URL and for any redirect: "https", or "http" where a user's
    /// own template asks for it.
    public var scheme = "https"
    /// Redirects followed (same scheme only); 0 follows none.
    public var maximumRedirects = 0
    public var connectTimeout: Double
    public var totalTimeout: Double
    /// The largest answer read; a larger one ends the request with `tooLarge`, so that a hostile or
    /// broken server cannot make the caller hold more than this.
    public var maximumResponseBytes: Int
    /// Replaces the system's CA bundle (the local agrirouter has its own CA).
    public var trustedCAPEM: String?
    public var clientCertificate: CurlClientCertificate?
    public var userAgent: String?
    /// Response headers to read back, by name.
    public var responseHeaders: [String] = []

    public init(url: String, connectTimeout: Double, totalTimeout: Double, maximumResponseBytes: Int) {
        self.url = url
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maximumResponseBytes = maximumResponseBytes
    }
}

public struct CurlResponse: Sendable {
    public var status: Int
    public var body: Data
    /// The headers asked for that came, each cut at 1 KiB.
    public var headers: [String: String]
    /// The server's `Date` header (whole seconds); nil without one or with one that is not a date.
    public var serverDate: Date?
}

/// Why a request failed, as libcurl said it, for the caller to put in its own words.
public enum CurlFailure: Error, Sendable, Equatable {
    /// libcurl cannot be opened: not installed, too old, or damaged.
    case unavailable(String)
    /// libcurl refused an option: one too old, or built without what is needed.
    case refused(option: String, code: Int)
    /// libcurl could not make a handle (out of memory).
    case cannotStart
    /// The answer grew past `maximumResponseBytes` and was cut off.
    case tooLarge(limit: Int)
    /// The task that sent it was cancelled, and the transfer ended. `sentWholeBody` as below.
    case cancelled(sentWholeBody: Bool)
    /// The transfer failed. `sentWholeBody`: the whole request body went out first, so the server
    /// may have taken it.
    case failed(CurlErrorKind, detail: String, sentWholeBody: Bool)
}

/// The kinds of libcurl's failures that callers tell apart.
public enum CurlErrorKind: Sendable, Equatable {
    case timedOut
    /// No connection: refused, or the name did not resolve.
    case cannotConnect
    case tooManyRedirects
    /// Our certificate or key cannot be used.
    case clientCertificateProblem
    /// The server's certificate is not trusted.
    case serverNotTrusted
    case other(code: Int)
}

/// HTTP over libcurl's easy API, the one place agrigps makes requests. Handles are kept between
/// requests, so a request every few seconds pays neither a new TCP and TLS handshake nor the
/// decryption of the client key each time (publishing's CPU fell by about a quarter).
public final class CurlClient: Sendable {
    private let idle = Mutex<[CurlHandle]>([])
    private let idleLimit: Int

    public init(idleHandles: Int = 2) {
        idleLimit = idleHandles
    }

    /// Opens libcurl at the first request, once per process: nil when it is ready, else why not.
    private static let libcurlProblem: String? = {
        var error = [CChar](repeating: 0, count: 512)
        guard ccurl_open(&error, error.count) != 0 else { return nil }
        return String(errorBuffer: error)
    }()

    /// `perform` off Swift's cooperative pool, on a thread of its own (a request waits on the network
    /// for up to its timeout). When `cancellable`, cancelling the task ends the transfer within about
    /// a second; otherwise it runs to its end, for a request whose answer must not be lost (a GET of
    /// agrirouter's outbox takes what it answers out of it).
    public func send(_ request: CurlRequest, cancellable: Bool = true) async throws(CurlFailure) -> CurlResponse {
        let cancellation = CurlCancellation()
        guard cancellable else {
            return try await onOwnThread { () throws(CurlFailure) in try self.perform(request) }
        }
        // The handler's operation rethrows untyped, so the typed failure rides out in a Result.
        let result = await withTaskCancellationHandler {
            await onOwnThread {
                Result { () throws(CurlFailure) in try self.perform(request, cancellation: cancellation) }
            }
        } onCancel: {
            cancellation.cancel()
        }
        return try result.get()
    }

    /// Opens a connection to `request`'s server, TCP and TLS both ways, and closes it without a
    /// request: whether the server can be reached. A fresh handle, so that a kept live connection
    /// never answers for a server that has gone.
    public func reach(_ request: CurlRequest) async throws(CurlFailure) {
        try await onOwnThread { () throws(CurlFailure) in try self.connect(request) }
    }

    /// One request on the calling thread, which it blocks: for callers on a thread of their own.
    public func perform(_ request: CurlRequest, cancellation: CurlCancellation? = nil) throws(CurlFailure)
        -> CurlResponse
    {
        if let problem = Self.libcurlProblem { throw .unavailable(problem) }
        guard let reusable = idle.withLock({ $0.popLast() }) ?? CurlHandle() else { throw .cannotStart }
        var completed = false
        // Only a handle whose request completed goes back; after a failure its connection is suspect.
        defer { if completed { keep(reusable) } }
        let handle = reusable.raw
        let response = ResponseBuffer(limit: request.maximumResponseBytes)
        let requestBody = request.body.map(RequestBody.init)
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { ccurl_slist_free_all(headerList) }
        for header in request.headers where !header.contains("\r") && !header.contains("\n") {
            // Out of memory: the request goes without the header, and fails on its own terms.
            if let longer = ccurl_slist_append(headerList, header) { headerList = longer }
        }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = try errorBuffer.withUnsafeMutableBufferPointer { errors throws(CurlFailure) in
            var options = CurlOptions(handle)
            options.connection(request, errors: errors.baseAddress)
            options.set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headerList), "CURLOPT_HTTPHEADER")
            // A larger declared answer is refused before its body is read; an undeclared one at the cap.
            options.set(CURLOPT_MAXFILESIZE_LARGE, request.maximumResponseBytes, "CURLOPT_MAXFILESIZE_LARGE")
            options.set(CURLOPT_CUSTOMREQUEST, request.method, "CURLOPT_CUSTOMREQUEST")
            // A connection idle this long may have been closed by the server: a new one is safer
            // than a request that dies on it, whose body may or may not have been taken.
            options.set(CURLOPT_MAXAGE_CONN, 30, "CURLOPT_MAXAGE_CONN")
            if request.maximumRedirects > 0 {
                options.set(CURLOPT_FOLLOWLOCATION, 1, "CURLOPT_FOLLOWLOCATION")
                options.set(CURLOPT_MAXREDIRS, request.maximumRedirects, "CURLOPT_MAXREDIRS")
                options.set(CURLOPT_REDIR_PROTOCOLS_STR, request.scheme, "CURLOPT_REDIR_PROTOCOLS_STR")
            }
            if let userAgent = request.userAgent { options.set(CURLOPT_USERAGENT, userAgent, "CURLOPT_USERAGENT") }
            if let requestBody { options.body(requestBody) }
            options.check(
                ccurl_set_write_callback(
                    handle,
                    { data, size, count, context in
                        guard let data, let context else { return 0 }
                        // Returning less than was given makes libcurl stop with CURLE_WRITE_ERROR.
                        return Unmanaged<ResponseBuffer>.fromOpaque(context).takeUnretainedValue().append(
                            data, size * count) ? size * count : 0
                    }, Unmanaged.passUnretained(response).toOpaque()), "CURLOPT_WRITEFUNCTION")
            if let cancellation { options.cancelled(by: cancellation) }
            if let refused = options.refused { throw refused }
            return withExtendedLifetime((response, requestBody, cancellation)) { ccurl_easy_perform(handle) }
        }
        if response.overflowed || code == CURLE_FILESIZE_EXCEEDED {
            throw .tooLarge(limit: request.maximumResponseBytes)
        }
        guard code == CURLE_OK else {
            // Whether a POST may have arrived decides whether its batch waits for an answer: it did
            // only if its whole body went out, on this connection or one that died before it.
            let sentWhole =
                requestBody.map {
                    $0.wentOutWhole || (!$0.bytes.isEmpty && ccurl_size_uploaded(handle) >= Int64($0.bytes.count))
                } ?? false
            if code == CURLE_ABORTED_BY_CALLBACK, cancellation?.isCancelled == true {
                throw .cancelled(sentWholeBody: sentWhole)
            }
            throw Self.failure(code, errorBuffer, sentWholeBody: sentWhole)
        }
        completed = true
        var headers: [String: String] = [:]
        for name in request.responseHeaders {
            headers[name] = ccurl_header(handle, name).map { String(String(cString: $0).prefix(1024)) }
        }
        return CurlResponse(
            status: Int(ccurl_response_code(handle)), body: response.data, headers: headers,
            serverDate: Self.serverDate(handle))
    }

    private func connect(_ request: CurlRequest) throws(CurlFailure) {
        if let problem = Self.libcurlProblem { throw .unavailable(problem) }
        guard let probe = CurlHandle() else { throw .cannotStart }
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code: CURLcode = try errorBuffer.withUnsafeMutableBufferPointer { errors throws(CurlFailure) in
            var options = CurlOptions(probe.raw)
            options.connection(request, errors: errors.baseAddress)
            options.set(CURLOPT_CONNECT_ONLY, 1, "CURLOPT_CONNECT_ONLY")
            if let refused = options.refused { throw refused }
            let code = ccurl_easy_perform(probe.raw)
            // The handle outlives this buffer and may write to it as it is cleaned up: it is told first.
            _ = ccurl_set_pointer(probe.raw, CURLOPT_ERRORBUFFER, nil)
            return code
        }
        guard code == CURLE_OK else { throw Self.failure(code, errorBuffer, sentWholeBody: false) }
    }

    private func keep(_ handle: CurlHandle) {
        ccurl_easy_reset(handle.raw)  // clears the options; keeps the live connection and session cache
        idle.withLock { handles in
            if handles.count < idleLimit { handles.append(handle) }
        }
    }

    private static func failure(_ code: CURLcode, _ errorBuffer: [CChar], sentWholeBody: Bool) -> CurlFailure {
        let written = String(errorBuffer: errorBuffer)
        let detail = written.isEmpty ? String(cString: ccurl_easy_strerror(code)) : written
        let kind: CurlErrorKind =
            switch code {
            case CURLE_OPERATION_TIMEDOUT: .timedOut
            case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY: .cannotConnect
            case CURLE_TOO_MANY_REDIRECTS: .tooManyRedirects
            case CURLE_SSL_CERTPROBLEM: .clientCertificateProblem
            case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE: .serverNotTrusted
            default: .other(code: Int(code.rawValue))
            }
        return .failed(kind, detail: detail, sentWholeBody: sentWholeBody)
    }

    private static func serverDate(_ handle: UnsafeMutableRawPointer) -> Date? {
        guard let value = ccurl_header(handle, "Date") else { return nil }
        let seconds = ccurl_getdate(value)  // -1 when it is not a date
        return seconds >= 0 ? Bounds.date(secondsSince1970: Double(seconds)) : nil
    }

    /// A timeout for libcurl: whole milliseconds, at least 1, clamped to a day (a checked value never
    /// reaches the clamp; a NaN would otherwise trap the conversion).
    static func milliseconds(_ seconds: Double) -> Int {
        guard seconds.isFinite else { return 86_400_000 }
        return Bounds.clamped(seconds * 1000, to: 1...86_400_000) ?? 86_400_000
    }
}

/// Set from another thread to end a transfer: libcurl's progress callback reads it.
public final class CurlCancellation: Sendable {
    private let flag = Atomic<Bool>(false)

    public init() {}

    public func cancel() { flag.store(true, ordering: .relaxed) }

    public var isCancelled: Bool { flag.load(ordering: .relaxed) }
}

/// One easy handle, used by one request at a time: the client's pool hands it out exclusively.
private final class CurlHandle: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer

    init?() {
        guard let raw = ccurl_easy_init() else { return nil }
        self.raw = raw
    }

    deinit { ccurl_easy_cleanup(raw) }
}

/// The options of one request, set in turn; the first that libcurl refuses is kept to be thrown, as a
/// refused one (a TLS option in a libcurl without it) would otherwise send the request without it.
private struct CurlOptions {
    let handle: UnsafeMutableRawPointer
    private(set) var refused: CurlFailure?

    init(_ handle: UnsafeMutableRawPointer) {
        self.handle = handle
    }

    /// What every connection gets: where to, the timeouts, and TLS both ways (the server verified,
    /// the client's certificate shown when there is one).
    mutating func connection(_ request: CurlRequest, errors: UnsafeMutablePointer<CChar>?) {
        set(CURLOPT_URL, request.url, "CURLOPT_URL")
        set(CURLOPT_ERRORBUFFER, pointer: UnsafeMutableRawPointer(errors), "CURLOPT_ERRORBUFFER")
        set(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        set(CURLOPT_CONNECTTIMEOUT_MS, CurlClient.milliseconds(request.connectTimeout), "CURLOPT_CONNECTTIMEOUT_MS")
        set(CURLOPT_TIMEOUT_MS, CurlClient.milliseconds(request.totalTimeout), "CURLOPT_TIMEOUT_MS")
        set(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
        set(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
        set(CURLOPT_PROTOCOLS_STR, request.scheme, "CURLOPT_PROTOCOLS_STR")
        if let trusted = request.trustedCAPEM { set(CURLOPT_CAINFO_BLOB, blob: trusted, "CURLOPT_CAINFO_BLOB") }
        if let certificate = request.clientCertificate {
            set(CURLOPT_SSLCERT_BLOB, blob: certificate.certificatePEM, "CURLOPT_SSLCERT_BLOB")
            set(CURLOPT_SSLCERTTYPE, "PEM", "CURLOPT_SSLCERTTYPE")
            set(CURLOPT_SSLKEY_BLOB, blob: certificate.encryptedKeyPEM, "CURLOPT_SSLKEY_BLOB")
            set(CURLOPT_SSLKEYTYPE, "PEM", "CURLOPT_SSLKEYTYPE")
            set(CURLOPT_KEYPASSWD, certificate.secret, "CURLOPT_KEYPASSWD")
        }
    }

    /// The request body, read through our callback, which knows whether all of it ever went out.
    mutating func body(_ body: RequestBody) {
        set(CURLOPT_POST, 1, "CURLOPT_POST")
        set(CURLOPT_POSTFIELDSIZE_LARGE, body.bytes.count, "CURLOPT_POSTFIELDSIZE_LARGE")
        check(
            ccurl_set_read_callback(
                handle,
                { buffer, size, count, context in
                    guard let buffer, let context else { return 0 }
                    return Unmanaged<RequestBody>.fromOpaque(context).takeUnretainedValue().read(
                        into: buffer, size * count)
                }, Unmanaged.passUnretained(body).toOpaque()), "CURLOPT_READFUNCTION")
    }

    mutating func cancelled(by cancellation: CurlCancellation) {
        check(
            ccurl_set_progress_callback(
                handle,
                { context, _, _, _, _ in
                    guard let context else { return 0 }
                    return Unmanaged<CurlCancellation>.fromOpaque(context).takeUnretainedValue().isCancelled ? 1 : 0
                }, Unmanaged.passUnretained(cancellation).toOpaque()), "CURLOPT_XFERINFOFUNCTION")
    }

    mutating func check(_ code: CURLcode, _ name: String) {
        if code != CURLE_OK, refused == nil { refused = .refused(option: name, code: Int(code.rawValue)) }
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

/// An answer's body as libcurl hands it over, up to a cap: past it, nothing more is kept and the
/// write callback stops the transfer.
private final class ResponseBuffer {
    let limit: Int
    private(set) var data = Data()
    private(set) var overflowed = false

    init(limit: Int) {
        self.limit = limit
    }

    /// False when `count` more bytes would pass the cap.
    func append(_ bytes: UnsafeMutablePointer<CChar>, _ count: Int) -> Bool {
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
