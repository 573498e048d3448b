import CurlHTTP
import Foundation

/// The endpoint's client certificate: the certificate, its encrypted key and the key's secret, handed
/// to libcurl from memory (see `CurlClientCertificate`, which never prints them).
public typealias ClientCredentials = CurlClientCertificate

extension ClientCredentials {
    /// agrirouter's PEM credential: the encrypted key block, then the certificate block.
    public init?(agrirouterPEM: String, secret: String) {
        guard let split = agrirouterPEM.range(of: "-----BEGIN CERTIFICATE-----") else { return nil }
        let key = String(agrirouterPEM[..<split.lowerBound])
        guard key.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") else { return nil }
        self.init(certificatePEM: String(agrirouterPEM[split.lowerBound...]), encryptedKeyPEM: key, secret: secret)
    }
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
        case .serverNotTrusted(let detail):
            return "the server's certificate is not trusted (\(detail)); check the CA bundle"
        case .clientCertificateRejected(let detail):
            return "agrirouter refused this endpoint's certificate (\(detail)); onboard again"
        case .credentialsUnusable(let detail):
            return
                "the stored certificate cannot be used (\(detail)); its secret does not open its key or it is damaged: onboard again"
        case .connectionFailed(let detail): return "the connection to agrirouter failed: \(detail)"
        case .brokenAfterSending(let detail):
            return "the connection to agrirouter broke after the request was sent: \(detail)"
        case .unauthorized:
            return "agrirouter answered 401 Unauthorized: the endpoint's certificate is not accepted; onboard again"
        case .forbidden: return "agrirouter answered 403 Forbidden: the endpoint may have been removed; onboard again"
        case .notFound:
            return "agrirouter answered 404 Not Found: the endpoint's URLs are no longer valid; onboard again"
        case .payloadTooLarge: return "agrirouter answered 413: the message is larger than it accepts"
        case .serverError(let status): return "agrirouter answered \(status), a server error; it will be retried"
        case .unexpectedStatus(let status): return "agrirouter answered with unexpected HTTP status \(status)"
        case .responseTooLarge(let limit):
            return
                "the answer was larger than \(limit / 1_048_576) MiB, more than agrirouter ever sends; it was cut off and not read"
        case .libcurlRefused(let option, let code):
            return "libcurl refused \(option) (CURLcode \(code)); install a libcurl with OpenSSL, 7.85 or later"
        case .libcurlUnavailable(let detail):
            return "libcurl cannot be loaded (\(detail)); install the libcurl4 package, 7.85 or later"
        case .stopping: return "not sent: the daemon is stopping"
        }
    }
}

/// HTTPS to agrirouter, over the one libcurl client (`CurlClient`). The server is always verified;
/// `trustedCAPEM` replaces the system's CA bundle (the local agrirouter has its own CA).
public struct HTTPSClient: Sendable {
    public var trustedCAPEM: String?
    public var connectTimeout: Double
    public var totalTimeout: Double
    /// The largest answer read; a larger one is cut off with `responseTooLarge`, so a hostile or broken
    /// server cannot make the daemon hold more than this in memory.
    public var maximumResponseBytes: Int
    /// Shared by copies of this client, with the connections its handles keep.
    private let curl = CurlClient()

    /// The outbox holds at most a few feed pages (1 MB each) and pushes: 16 MiB is several times that.
    public static let defaultResponseLimit = 16 * 1_048_576

    public init(
        trustedCAPEM: String? = nil, connectTimeout: Double = 10, totalTimeout: Double = 60,
        maximumResponseBytes: Int = HTTPSClient.defaultResponseLimit
    ) {
        self.trustedCAPEM = trustedCAPEM
        self.connectTimeout = connectTimeout
        self.totalTimeout = totalTimeout
        self.maximumResponseBytes = maximumResponseBytes
    }

    /// One request off the cooperative pool. With `anyStatus`, every HTTP answer is returned with its
    /// body (onboarding reads agrirouter's error codes from it); otherwise non-2xx statuses are typed
    /// errors. Only a `cancellable` request ends when its task is cancelled (a POST whose body went out
    /// then fails as `brokenAfterSending`): by default a request runs to its answer or its timeout,
    /// as one that took answers from the outbox must.
    public func send(
        method: String, url: String, body: Data? = nil, headers: [String] = [],
        credentials: ClientCredentials? = nil, anyStatus: Bool = false,
        cancellable: Bool = false
    ) async throws(TransportError) -> HTTPResponse {
        let answer: CurlResponse
        do {
            answer = try await curl.send(
                request(method: method, url: url, body: body, headers: headers, credentials: credentials),
                cancellable: cancellable)
        } catch {
            throw Self.error(error, hasBody: body != nil)
        }
        return try Self.checked(answer, anyStatus: anyStatus)
    }

    /// Ends every request of this client (and its copies) under way now, as cancelled: a GET as
    /// `stopping`, a POST whose body went out as `brokenAfterSending`. Later requests run.
    public func abortRequests() {
        curl.abortTransfers()
    }

    /// Opens a connection to `url`'s server, TCP and TLS both ways, and closes it without a request:
    /// whether agrirouter can be reached, at the cost of a handshake and none of its API.
    public func probe(url: String, credentials: ClientCredentials? = nil) async throws(TransportError) {
        var probe = request(method: "GET", url: url, credentials: credentials)
        probe.connectTimeout = min(connectTimeout, 5)
        do {
            try await curl.reach(probe)
        } catch {
            throw Self.error(error, hasBody: false)
        }
    }

    private func request(
        method: String, url: String, body: Data? = nil, headers: [String] = [],
        credentials: ClientCredentials?
    ) -> CurlRequest {
        var request = CurlRequest(
            url: url, connectTimeout: connectTimeout, totalTimeout: totalTimeout,
            maximumResponseBytes: maximumResponseBytes)
        request.method = method
        request.body = body
        request.headers = ["Accept: application/json"] + headers
        request.trustedCAPEM = trustedCAPEM
        request.clientCertificate = credentials
        return request
    }

    private static func checked(_ answer: CurlResponse, anyStatus: Bool) throws(TransportError) -> HTTPResponse {
        let response = HTTPResponse(status: answer.status, body: answer.body, serverDate: answer.serverDate)
        if anyStatus { return response }
        switch answer.status {
        case 200..<300: return response
        case 401: throw .unauthorized
        case 403: throw .forbidden
        case 404: throw .notFound
        case 413: throw .payloadTooLarge
        case 500..<600: throw .serverError(answer.status)
        default: throw .unexpectedStatus(answer.status)
        }
    }

    static func error(_ failure: CurlFailure, hasBody: Bool) -> TransportError {
        switch failure {
        case .unavailable(let detail): return .libcurlUnavailable(detail)
        case .refused(let option, let code): return .libcurlRefused(option: option, code: code)
        case .cannotStart: return .connectionFailed("libcurl could not start a request")
        case .tooLarge(let limit): return .responseTooLarge(limit: limit)
        case .cancelled(let sentWholeBody):
            return sentWholeBody
                ? .brokenAfterSending("cancelled after the request was sent, as the daemon stops") : .stopping
        case .failed(let kind, let detail, let sentWholeBody):
            // A body that went out whole may have been taken, whatever failed after it (a retry's
            // connect, a rewind libcurl was not allowed to make).
            if sentWholeBody, kind != .timedOut { return .brokenAfterSending(detail) }
            switch kind {
            case .timedOut:
                return hasBody && !sentWholeBody
                    ? .connectionFailed("timed out before the request was sent (\(detail))") : .timedOut
            case .cannotConnect: return .cannotConnect(detail)
            case .clientCertificateProblem: return .credentialsUnusable(detail)
            case .serverNotTrusted: return .serverNotTrusted(detail)
            case .tooManyRedirects, .other:
                // A server that refuses our certificate says so with a TLS alert ("certificate required",
                // "unknown ca", "decrypt error", ...); TLS 1.3 delivers it on the first read.
                if detail.lowercased().contains("alert") { return .clientCertificateRejected(detail) }
                return sentWholeBody ? .brokenAfterSending(detail) : .connectionFailed(detail)
            }
        }
    }
}
