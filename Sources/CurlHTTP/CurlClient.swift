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
    /// The client's live connections, one cache per set of credentials and trusted CAs, newest last:
    /// libcurl would otherwise hand a connection made with one key to a request with another, or
    /// one verified against one CA to a client that trusts another.
    private let caches = Mutex<[(identity: String, cache: ConnectionCache)]>([])
    /// Fired by `abortTransfers`, which puts a fresh one in its place for the requests after.
    private let abort = Mutex(CurlCancellation())

    public init(idleHandles: Int = 2) {
        idleLimit = idleHandles
    }

    deinit {
        // The handles let go of their caches before the caches close their connections.
        idle.withLock { $0.removeAll() }
    }

    /// Ends every transfer of this client under way now, whether or not its task can be cancelled:
    /// how a stop that gave a request its grace ends it. Each ends as cancelled; later ones run.
    public func abortTransfers() {
        let fired = abort.withLock { current in
            defer { current = CurlCancellation() }
            return current
        }
        fired.cancel()
        CurlEngine.shared?.wake()
    }

    /// The cache for `request`'s credentials, made at its first request; the oldest beyond a few go.
    private func cache(for request: CurlRequest) -> ConnectionCache? {
        let certificate = request.clientCertificate
        let identity = [
            request.trustedCAPEM ?? "", certificate?.certificatePEM ?? "", certificate?.encryptedKeyPEM ?? "",
            certificate?.secret ?? "",
        ].joined(separator: "\u{0}")
        return caches.withLock { caches in
            if let index = caches.firstIndex(where: { $0.identity == identity }) {
                let found = caches.remove(at: index)
                caches.append(found)
                return found.cache
            }
            guard let made = ConnectionCache() else { return nil }
            caches.append((identity, made))
            if caches.count > 4 { caches.removeFirst() }
            return made
        }
    }

    /// Opens libcurl at the first request, once per process: nil when it is ready, else why not.
    private static let libcurlProblem: String? = {
        var error = [CChar](repeating: 0, count: 512)
        guard ccurl_open(&error, error.count) != 0 else { return nil }
        return String(errorBuffer: error)
    }()

    /// One request, run on the process's HTTP thread (`CurlEngine`) while the task waits without
    /// holding a thread. When `cancellable`, cancelling the task ends the transfer at once; otherwise
    /// it runs to its end, for a request whose answer must not be lost (a GET of agrirouter's outbox
    /// takes what it answers out of it).
    public func send(_ request: CurlRequest, cancellable: Bool = true) async throws(CurlFailure) -> CurlResponse {
        if let problem = Self.libcurlProblem { throw .unavailable(problem) }
        guard let engine = CurlEngine.shared else { throw .cannotStart }
        guard let cache = cache(for: request),
            let reusable = idle.withLock({ $0.popLast() }) ?? CurlHandle()
        else { throw .cannotStart }
        var completed = false
        // Only a handle whose request completed goes back; after a failure its connection is suspect.
        // Either way it lets go of the cache first, which may close when the last request leaves it.
        defer {
            _ = ccurl_set_pointer(reusable.raw, CURLOPT_SHARE, nil)
            if completed { keep(reusable) }
            withExtendedLifetime(cache) {}
        }
        let handle = reusable.raw
        let errors = ErrorBuffer(reusable)
        // Before the handle goes back or away: it must not keep writing to memory about to be freed.
        defer { errors.detach() }
        let response = ResponseBuffer(limit: request.maximumResponseBytes)
        let requestBody = request.body.map(RequestBody.init)
        var headerList: UnsafeMutablePointer<curl_slist>?
        defer { ccurl_slist_free_all(headerList) }
        for header in request.headers where !header.contains("\r") && !header.contains("\n") {
            // Out of memory: the request goes without the header, and fails on its own terms.
            if let longer = ccurl_slist_append(headerList, header) { headerList = longer }
        }
        var options = CurlOptions(handle)
        options.connection(request, errors: errors.pointer)
        options.set(CURLOPT_SHARE, pointer: cache.raw, "CURLOPT_SHARE")
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
        options.receive(into: response)
        if let refused = options.refused { throw refused }
        let cancellation = cancellable ? CurlCancellation() : nil
        let aborted = abort.withLock { $0 }
        let code = await engine.run(handle, cancellation: cancellation, abort: aborted)
        // The callbacks' objects were handed to libcurl unretained: alive until the transfer ended.
        withExtendedLifetime((response, requestBody)) {}
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
            if code == CURLE_ABORTED_BY_CALLBACK, cancellation?.isCancelled == true || aborted.isCancelled {
                throw .cancelled(sentWholeBody: sentWhole)
            }
            throw Self.failure(code, errors.text, sentWholeBody: sentWhole)
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

    /// Opens a connection to `request`'s server, TCP and TLS both ways, and closes it without a
    /// request: whether the server can be reached. A fresh connection, so that a kept live one never
    /// answers for a server that has gone.
    public func reach(_ request: CurlRequest) async throws(CurlFailure) {
        if let problem = Self.libcurlProblem { throw .unavailable(problem) }
        guard let engine = CurlEngine.shared, let probe = CurlHandle() else { throw .cannotStart }
        let errors = ErrorBuffer(probe)
        defer { errors.detach() }
        var options = CurlOptions(probe.raw)
        options.connection(request, errors: errors.pointer)
        options.set(CURLOPT_CONNECT_ONLY, 1, "CURLOPT_CONNECT_ONLY")
        options.set(CURLOPT_FRESH_CONNECT, 1, "CURLOPT_FRESH_CONNECT")
        options.set(CURLOPT_FORBID_REUSE, 1, "CURLOPT_FORBID_REUSE")
        if let refused = options.refused { throw refused }
        let code = await engine.run(probe.raw, cancellation: CurlCancellation(), abort: abort.withLock { $0 })
        guard code == CURLE_OK else { throw Self.failure(code, errors.text, sentWholeBody: false) }
    }

    private func keep(_ handle: CurlHandle) {
        ccurl_easy_reset(handle.raw)  // clears the options; keeps the live connection and session cache
        idle.withLock { handles in
            if handles.count < idleLimit { handles.append(handle) }
        }
    }

    private static func failure(_ code: CURLcode, _ written: String, sentWholeBody: Bool) -> CurlFailure {
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

/// The one thread every transfer of the process runs on ("agrigps-http"), through libcurl's multi
/// interface: a request waits on the network without a thread of its own (its live connections
/// are kept by its client, per set of credentials: `ConnectionCache`). A task that submits a
/// transfer waits for it without holding a thread of Swift's cooperative pool.
final class CurlEngine: @unchecked Sendable {
    /// nil when libcurl has no multi handle to give (out of memory) or no thread could be started.
    static let shared: CurlEngine? = {
        guard let multi = ccurl_multi_init() else { return nil }
        let engine = CurlEngine(multi: UnsafeMutableRawPointer(multi))
        return startThread(named: "agrigps-http") { engine.loop() } ? engine : nil
    }()

    private struct Submitted: @unchecked Sendable {
        let handle: UnsafeMutableRawPointer
        let cancellation: CurlCancellation?
        let abort: CurlCancellation
        let finished: CheckedContinuation<CURLcode, Never>

        var ended: Bool { cancellation?.isCancelled == true || abort.isCancelled }
    }

    // Touched only by `loop`'s thread but for `wakeup`, which libcurl allows from any thread.
    private let multi: UnsafeMutableRawPointer
    private let incoming = Mutex<[Submitted]>([])

    private init(multi: UnsafeMutableRawPointer) {
        self.multi = multi
    }

    /// Runs the transfer set up on `handle` to its end and returns libcurl's result. With a
    /// `cancellation`, cancelling the task ends the transfer at once with CURLE_ABORTED_BY_CALLBACK;
    /// firing `abort` does so whatever the task.
    func run(_ handle: UnsafeMutableRawPointer, cancellation: CurlCancellation?, abort: CurlCancellation) async
        -> CURLcode
    {
        guard let cancellation else { return await submit(handle, cancellation: nil, abort: abort) }
        return await withTaskCancellationHandler {
            await submit(handle, cancellation: cancellation, abort: abort)
        } onCancel: {
            cancellation.cancel()
            wake()
        }
    }

    /// Has the thread look at its transfers now: one was submitted, cancelled or aborted.
    func wake() {
        _ = ccurl_multi_wakeup(multi)
    }

    private func submit(_ handle: UnsafeMutableRawPointer, cancellation: CurlCancellation?, abort: CurlCancellation)
        async -> CURLcode
    {
        await withCheckedContinuation { finished in
            let transfer = Submitted(handle: handle, cancellation: cancellation, abort: abort, finished: finished)
            incoming.withLock { $0.append(transfer) }
            wake()
        }
    }

    /// Adds what was submitted, ends what was cancelled, lets libcurl move every transfer on, hands
    /// back what finished, and sleeps until there is more to do. Runs for the life of the process.
    private func loop() {
        var active: [UnsafeMutableRawPointer: Submitted] = [:]
        while true {
            for transfer in incoming.withLock({ submitted in
                defer { submitted = [] }
                return submitted
            }) {
                if ccurl_multi_add_handle(multi, transfer.handle) == CURLM_OK {
                    active[transfer.handle] = transfer
                } else {
                    transfer.finished.resume(returning: CURLE_FAILED_INIT)
                }
            }
            for (handle, transfer) in active where transfer.ended {
                finish(handle, CURLE_ABORTED_BY_CALLBACK, in: &active)
            }
            _ = ccurl_multi_perform(multi)
            var done: UnsafeMutableRawPointer?
            var result = CURLE_OK
            while ccurl_multi_next_done(multi, &done, &result) != 0, let handle = done {
                finish(handle, result, in: &active)
            }
            // libcurl shortens the wait to its own next timeout; idle, only a submission wakes it.
            _ = ccurl_multi_poll(multi, active.isEmpty ? 60_000 : 1_000)
        }
    }

    /// Out of the multi handle first: the caller reads the handle's answer as soon as it resumes.
    private func finish(
        _ handle: UnsafeMutableRawPointer, _ result: CURLcode,
        in active: inout [UnsafeMutableRawPointer: Submitted]
    ) {
        guard let transfer = active.removeValue(forKey: handle) else { return }
        _ = ccurl_multi_remove_handle(multi, handle)
        transfer.finished.resume(returning: result)
    }
}

/// Set from another thread to end a transfer: the HTTP thread reads it when woken.
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

    /// The answer goes into `response`, which stops the transfer once it holds its limit.
    mutating func receive(into response: ResponseBuffer) {
        check(
            ccurl_set_write_callback(
                handle,
                { data, size, count, context in
                    guard let data, let context else { return 0 }
                    // Returning less than was given makes libcurl stop with CURLE_WRITE_ERROR.
                    return Unmanaged<ResponseBuffer>.fromOpaque(context).takeUnretainedValue().append(
                        data, size * count) ? size * count : 0
                }, Unmanaged.passUnretained(response).toOpaque()), "CURLOPT_WRITEFUNCTION")
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

/// A connection cache of libcurl's (a share handle), closed with its connections when the client
/// no longer keeps it and no request uses it.
private final class ConnectionCache: @unchecked Sendable {
    let raw: UnsafeMutableRawPointer

    init?() {
        guard let raw = ccurl_share_connections() else { return nil }
        self.raw = raw
    }

    deinit { _ = ccurl_share_cleanup(raw) }
}

/// libcurl's words on a failed transfer, in memory of their own that outlives the wait for it.
private final class ErrorBuffer {
    let pointer: UnsafeMutablePointer<CChar>
    private let handle: CurlHandle

    init(_ handle: CurlHandle) {
        self.handle = handle
        pointer = .allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
        pointer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
    }

    var text: String { String(cString: pointer) }

    /// Tells the handle to forget the buffer: called before the handle is reused or cleaned up.
    func detach() {
        _ = ccurl_set_pointer(handle.raw, CURLOPT_ERRORBUFFER, nil)
    }

    deinit { pointer.deallocate() }
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
