import Clocks
import Glibc
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The HTTP server of the cab view: what Hummingbird's `Application` runs, without its date service.
///
/// That service rewrites the `Date` header's text on a one-second timer, for as long as the
/// process runs: a wake-up of a timer thread and a worker every second, idle or not, which was a
/// quarter of the page process's CPU beside a 1 Hz receiver. Here a response formats the header
/// itself, once per second at most (`ResponseDate`), and an idle box is not woken at all.
struct CabHTTPService<Responder: HTTPResponder>: Service where Responder.Context == CabContext {
    var responder: Responder
    var server: HTTPServerBuilder
    var configuration: ServerConfiguration
    var onServerRunning: @Sendable (any Channel) async -> Void
    var logger: Logger

    func run() async throws {
        let (responder, logger) = (responder, logger)
        let dates = ResponseDate()
        let service = try server.buildServer(
            configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: logger
        ) { request, writer, channel in
            let context = CabContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
            var response: Response
            do {
                response = try await responder.respond(to: request, context: context)
            } catch let error as HTTPParserError {
                throw error  // the connection is closed: no answer fits a request that could not be read
            } catch {
                // The router answers what its handlers throw; anything past it is ours to hide.
                logger.debug("unanswered error", metadata: ["error.type": "\(String(reflecting: type(of: error)))"])
                response = Response(status: .internalServerError)
            }
            response.headers[.date] = dates.now()
            try await writer.write(response: response.head, body: response.body)
        } onServerRunning: { channel in
            await onServerRunning(channel)
        }
        try await service.run()
    }
}

/// The `Date` header (RFC 9110's IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT"), formatted again only
/// when the second has moved on.
final class ResponseDate: Sendable {
    private let last = Mutex<(second: Int, text: String)>((-1, ""))

    func now() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let second = now.tv_sec
        if let text = last.withLock({ $0.second == second ? $0.text : nil }) { return text }
        let text = HTTPDate.format(second)
        last.withLock { $0 = (second, text) }
        return text
    }
}
