import AgrirouterWire
import Bounds
import Clocks
import Foundation

/// What a transport brought from agrirouter's side: outbox items (REST's outbox, or MQTT's commands
/// topic), the ones that did not parse, and agrirouter's clock if the transport told it.
public struct LinkMail: Sendable {
    public var items: [OutboxItem] = []
    public var unreadable: [CodecError] = []
    public var serverDate: Date?
    /// Messages dropped unread because too many, or too many bytes, waited (MQTT under a flood).
    public var dropped = 0

    public init(items: [OutboxItem] = [], unreadable: [CodecError] = [], serverDate: Date? = nil) {
        (self.items, self.unreadable, self.serverDate) = (items, unreadable, serverDate)
    }
}

/// What the transport's connection is doing, as status shows it.
public enum LinkState: Sendable, Equatable, CustomStringConvertible {
    /// REST has no standing connection: each request opens or reuses one.
    case requests
    case connecting
    case connected
    /// Lost or refused; it is being tried again.
    case disconnected(reason: String)
    /// Another client connected with this endpoint's client id and the broker closed ours for it,
    /// again and again: agrigps stops fighting and tries again after a pause.
    case takenOver(retryInSeconds: Int)

    public var description: String {
        switch self {
        case .requests: return "requests"
        case .connecting: return "connecting"
        case .connected: return "connected"
        case .disconnected(let reason): return "disconnected (\(reason))"
        case .takenOver(let seconds):
            return
                "taken over: another client uses this endpoint's client id; trying again in \(seconds) s (is the same credential on two machines?)"
        }
    }
}

/// One way to carry measures to agrirouter and bring its answers back. The connection above it
/// encodes, spaces requests and routes answers the same way whichever transport is below.
public protocol Link: Sendable {
    var transport: Transport { get }
    /// Whether answers arrive by themselves (MQTT) rather than by a request for them (REST's outbox GET).
    var deliversAnswers: Bool { get }
    /// Sends one measures body. Returns agrirouter's clock if the transport tells it. Success means the
    /// body was taken on its way, never that agrirouter acknowledged what is in it.
    func publish(_ body: Data) async throws(TransportError) -> Date?
    /// REST: one GET of the outbox (an answer that is not an outbox fails as `.codec`). MQTT: what
    /// arrived on the commands topic since the last call.
    func collect() async throws(GatewayError) -> LinkMail
    /// Returns when something may be there to collect, or after `seconds`; at once for REST. MQTT
    /// returns as a message arrives.
    func waitForMail(atMost seconds: Double) async
    /// Returns once a publish could go out (MQTT: connected), or after `seconds`; at once for REST.
    func waitUntilReady(atMost seconds: Double) async
    /// Whether agrirouter can be reached now, found without a request of its API (REST: a TCP and
    /// TLS handshake with the measures URL's server; MQTT: whether the broker connection stands).
    /// Lets a connection that could not connect end its backoff as soon as the way is back.
    func reachable() async -> Bool
    var state: LinkState { get }
    /// Ends the requests under way now (REST), whatever their tasks: how a stop ends one whose grace
    /// ran out. MQTT has no request that waits on agrirouter.
    func abortRequests()
    /// Ends the connection, if there is one; the link is not used again.
    func close()
}

/// REST over libcurl: measures are POSTed, answers fetched with a GET of the outbox.
public struct RESTLink: Link {
    public let transport = Transport.rest
    public let deliversAnswers = false
    private let measuresURL: String
    private let commandsURL: String
    private let credentials: ClientCredentials
    private let client: HTTPSClient

    public init(
        endpoint: OnboardingResponse, credentials: ClientCredentials, trustedCAPEM: String?, timeout: Double = 60
    ) {
        measuresURL = endpoint.connectionCriteria.measures
        commandsURL = endpoint.connectionCriteria.commands
        self.credentials = credentials
        client = HTTPSClient(trustedCAPEM: trustedCAPEM, connectTimeout: min(10, timeout), totalTimeout: timeout)
    }

    public func publish(_ body: Data) async throws(TransportError) -> Date? {
        try await client.send(
            method: "POST", url: measuresURL, body: body, headers: ["Content-Type: application/json"],
            credentials: credentials
        ).serverDate
    }

    public func collect() async throws(GatewayError) -> LinkMail {
        let response: HTTPResponse
        do {
            response = try await client.send(method: "GET", url: commandsURL, credentials: credentials)
        } catch {
            throw .transport(error)
        }
        do {
            return LinkMail(items: try OutboxItem.list(from: response.body), serverDate: response.serverDate)
        } catch {
            throw .codec(error)
        }
    }

    public func waitForMail(atMost seconds: Double) async {}

    public func waitUntilReady(atMost seconds: Double) async {}

    public func reachable() async -> Bool {
        (try? await client.probe(url: measuresURL, credentials: credentials)) != nil
    }

    public var state: LinkState { .requests }

    public func abortRequests() {
        client.abortRequests()
    }

    public func close() {}
}

extension AgrirouterConnection {
    /// The connection a stored endpoint was onboarded for: REST, or MQTT with its files in `directory`.
    public static func open(_ stored: StoredEndpoint, directory: String, minimumSpacing: Double, clock: TrueTime? = nil)
        throws(OnboardingError) -> AgrirouterConnection
    {
        guard let credentials = stored.credentials else {
            throw .unreadableResponse("the stored certificate is not an encrypted PEM key and certificate")
        }
        switch stored.response.transport {
        case .rest?:
            return AgrirouterConnection(
                endpoint: stored.response,
                link: RESTLink(endpoint: stored.response, credentials: credentials, trustedCAPEM: stored.trustedCAPEM),
                minimumSpacing: minimumSpacing, clock: clock)
        case .mqtt?:
            do {
                let link = try MQTTLink(
                    endpoint: stored.response, credentials: credentials, trustedCAPEM: stored.trustedCAPEM,
                    directory: directory)
                return AgrirouterConnection(
                    endpoint: stored.response, link: link, minimumSpacing: minimumSpacing, clock: clock)
            } catch {
                throw .mqttSetup(error.description)
            }
        case nil:
            throw .unreadableResponse(
                "the stored endpoint's gateway id \(TerminalText.safe(stored.response.connectionCriteria.gatewayId, limit: 8)) is neither REST's nor MQTT's; onboard again"
            )
        }
    }
}
