import Foundation
import Synchronization

/// The write end of the signal pipe. Set before the handlers are installed and read only by them.
nonisolated(unsafe) private var signalPipe: Int32 = -1

/// Delivers SIGINT and SIGTERM to a handler instead of killing the process, so that commands can
/// stop their children and close what they hold.
///
/// The signal handler only writes the signal number to a pipe (async-signal-safe); a thread reads
/// it and runs `handler`. This works whichever thread the kernel picks for a process-wide signal,
/// which dispatch signal sources on Linux do not guarantee. One trap per process.
struct SignalTrap: ~Copyable {
    private let signals: [Int32]
    private let writeEnd: Int32

    init(_ signals: [Int32] = [SIGINT, SIGTERM], handler: @escaping @Sendable (Int32) -> Void) {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "cannot create the signal pipe")
        let readEnd = ends[0]
        self.signals = signals
        self.writeEnd = ends[1]
        signalPipe = ends[1]
        for number in signals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { received in
                var byte = UInt8(truncatingIfNeeded: received)
                _ = write(signalPipe, &byte, 1)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(number, &action, nil)
        }
        let reader = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count < 0 && errno == EINTR { continue }
                if count != 1 || byte == 0 { break }
                handler(Int32(byte))
            }
            close(readEnd)
        }
        reader.name = "agrigps.signals"
        reader.start()
    }

    deinit {
        for number in signals { signal(number, SIG_DFL) }
        var stop: UInt8 = 0
        _ = write(writeEnd, &stop, 1)
        close(writeEnd)
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
