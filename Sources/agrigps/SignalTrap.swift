import Foundation
import Synchronization
import UnixSignals

/// Delivers SIGINT and SIGTERM to a handler instead of killing the process, so that commands can
/// stop their children and close what they hold.
///
/// Through swift-service-lifecycle's `UnixSignalsSequence`, the one way our three programs catch
/// signals: `agrigps-web`'s `ServiceGroup` and `agrirouter-sim` use it too. (It took each of 400
/// SIGTERMs sent to a process whose other threads were blocked in `read` or busy on the pool,
/// started before or after it.) One trap per process at a time.
struct SignalTrap: ~Copyable {
    private let signals: [UnixSignal]
    private let listener: Task<Void, Never>

    init(_ signals: [UnixSignal] = [.sigint, .sigterm], handler: @escaping @Sendable (Int32) -> Void) async {
        let sequence = await UnixSignalsSequence(trapping: signals)
        self.signals = signals
        listener = Task {
            for await signal in sequence { handler(signal.rawValue) }
        }
    }

    /// The signals' default action comes back: a command that is done closing has nothing left to
    /// protect.
    deinit {
        listener.cancel()
        for number in signals { signal(number.rawValue, SIG_DFL) }
    }
}

/// Remembers the first SIGINT or SIGTERM and runs the registered stop action once; if the signal
/// came before the action was registered, registering runs it at once.
final class Interruption: Sendable {
    private let state = Mutex<(signal: Int32?, action: (@Sendable () -> Void)?)>((nil, nil))

    var signal: Int32? { state.withLock { $0.signal } }

    func interrupt(by number: Int32) {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            guard state.signal == nil else { return nil }
            state.signal = number
            return state.action
        }
        action?()
    }

    func onInterrupt(_ action: @escaping @Sendable () -> Void) {
        let alreadyInterrupted = state.withLock { state -> Bool in
            state.action = action
            return state.signal != nil
        }
        if alreadyInterrupted { action() }
    }
}
