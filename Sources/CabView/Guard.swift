import Foundation
import HTTPTypes
import Hummingbird
import JSONText

/// Every request passes here first:
/// - without a password (loopback only), the Host must name this machine, so that a web page cannot
///   reach the API through a rebound DNS name;
/// - with a password, everything but the page itself, Leaflet, the session and the login needs a session;
/// - every state-changing request needs a session and its CSRF token in `X-CSRF-Token`;
/// - every answer forbids framing and sniffing, and scripts come only from this origin.
struct Guard: RouterMiddleware {
    typealias Context = CabContext

    static let cookieName = "agrigps_session"
    static let expiredCookie = "\(cookieName)=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0"
    static let csrfHeader = HTTPField.Name("X-CSRF-Token")!

    let configuration: CabConfiguration
    let sessions: Sessions
    /// Read once: a rename of the machine takes effect at the next start.
    let hostName = LocalHost.machineName()
    /// Made once: every answer carries it.
    let contentSecurityPolicy: String

    init(configuration: CabConfiguration, sessions: Sessions) {
        self.configuration = configuration
        self.sessions = sessions
        contentSecurityPolicy = Self.contentSecurityPolicy(tiles: configuration.tiles)
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var response: Response
        do {
            try await check(request)
            response = try await next(request, context)
        } catch let error as HTTPError {
            response = Self.problem(error.status, error.body ?? "refused")
            for field in error.headers { response.headers.append(field) }
        } catch {
            response = Self.problem(.internalServerError, "the request failed")
        }
        response.headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        response.headers[.contentSecurityPolicy] = contentSecurityPolicy
        return response
    }

    /// A 4xx or 5xx as JSON that the page shows as it is: `{"error": "…"}`.
    static func problem(_ status: HTTPResponse.Status, _ message: String) -> Response {
        CabServer.jsonResponse(Data(problemText(message).utf8), status: status)
    }

    static func problemText(_ message: String) -> String {
        var body = JSONWriter()
        body.object { $0.field("error", message) }
        return body.text
    }

    static func contentSecurityPolicy(tiles: String?) -> String {
        var images = "'self' data:"
        if let tiles,
            let url = URL(
                string: tiles.replacingOccurrences(of: "{", with: "").replacingOccurrences(of: "}", with: "")),
            let scheme = url.scheme, let host = url.host
        {
            images += " \(scheme)://\(host)"
        }
        return
            "default-src 'self'; img-src \(images); style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
    }

    func check(_ request: Request) async throws {
        let path = request.uri.path
        let passwordSet = configuration.passwordFile.exists
        if !passwordSet, !LocalHost.accepts(request.head.authority, hostName: hostName) {
            throw HTTPError(
                .misdirectedRequest,
                message: "open this page as http://127.0.0.1:\(configuration.port)/ on this machine")
        }
        let open =
            ["/", "/app.js", "/app.css", "/api/session", "/api/login"].contains(path) || path.hasPrefix("/leaflet/")
            || path.hasPrefix("/lang/")
        let session = await sessions.session(Self.cookie(request))
        if passwordSet, !open, session == nil {
            throw HTTPError(.unauthorized, message: "log in first")
        }
        guard request.method != .get, request.method != .head, path != "/api/login" else { return }
        guard let session else { throw HTTPError(.unauthorized, message: "no session: reload the page") }
        guard let token = request.headers[Self.csrfHeader],
            PasswordFile.equalInConstantTime(Array(token.utf8), Array(session.csrfToken.utf8))
        else {
            throw HTTPError(.forbidden, message: "missing or wrong CSRF token: reload the page")
        }
    }

    /// The session cookie's value, if the request carries one.
    static func cookie(_ request: Request) -> String? {
        cookie(inHeaders: request.headers[values: .cookie])
    }

    /// The session cookie's value among Cookie headers' values.
    static func cookie(inHeaders values: [String]) -> String? {
        for header in values {
            for part in header.split(separator: ";") {
                // Spaces and tabs around a pair, trimmed here: Foundation's trimming bridged every
                // part to NSString, the dearest step of a tile's request.
                var piece = part[...]
                while piece.first == " " || piece.first == "\t" { piece = piece.dropFirst() }
                while piece.last == " " || piece.last == "\t" { piece = piece.dropLast() }
                let pair = piece.split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0] == cookieName { return String(pair[1]) }
            }
        }
        return nil
    }
}
