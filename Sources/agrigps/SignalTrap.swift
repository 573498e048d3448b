import Dispatch
import Foundation

/// Delivers SIGINT and SIGTERM to a handler instead of killing the process, so that commands can
/// stop their children and close what they hold.
struct SignalTrap: ~Copyable {
    private let sources: [DispatchSourceSignal]

    init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        sources = signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }

    deinit {
        sources.forEach { $0.cancel() }
    }
}
