import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The signals of a program, caught in its one service group: a service that ends at the first
/// SIGINT or SIGTERM, which shuts the group down gracefully (`successTerminationBehavior:
/// .gracefullyShutdownGroup`), and remembers which came, so that the program can exit as the
/// default action would have it (128 + the signal's number) and a caller sees which ended it.
/// Through swift-service-lifecycle's `UnixSignalsSequence`, the one way `agrigps` and
/// `agrirouter-sim` catch signals.
public final class SignalWatch: Service, Sendable {
    private let signal = Mutex<Int32?>(nil)

    public init() {}

    /// The signal that ended the group; nil when it ended otherwise.
    public var caught: Int32? { signal.withLock { $0 } }

    /// The exit code a caught signal asks for, as the shell reports one that killed a process.
    public var exitCode: Int32? { caught.map { 128 + $0 } }

    public func run() async {
        let signals = await UnixSignalsSequence(trapping: .sigint, .sigterm)
        for await received in signals.cancelOnGracefulShutdown() {
            signal.withLock { $0 = received.rawValue }
            return
        }
    }

    /// The group's entry for this watch.
    public var configuration: ServiceGroupConfiguration.ServiceConfiguration {
        .init(service: self, successTerminationBehavior: .gracefullyShutdownGroup)
    }
}

/// A job run as a service of a program's group: a command's main work beside its `SignalWatch`.
/// Its end, or its failure, shuts the group down; what it throws is kept for the command to throw
/// after the group has stopped, with its own exit code.
public final class CommandJob: Service, Sendable {
    private let body: @Sendable () async throws -> Void
    private let thrown = Mutex<(any Error)?>(nil)

    public init(_ body: @escaping @Sendable () async throws -> Void) {
        self.body = body
    }

    public func run() async {
        do {
            try await body()
        } catch {
            thrown.withLock { $0 = error }
        }
    }

    /// Rethrows what the job threw, if it did.
    public func check() throws {
        if let error = thrown.withLock({ $0 }) { throw error }
    }

    public var configuration: ServiceGroupConfiguration.ServiceConfiguration {
        .init(service: self, successTerminationBehavior: .gracefullyShutdownGroup)
    }
}

extension ServiceGroup {
    /// Runs `job` in a group with a `SignalWatch`, the program's one group that owns its signals, and
    /// returns the watch, which says whether a signal ended it. Rethrows what the job threw.
    public static func runCommand(_ job: CommandJob, label: String) async throws -> SignalWatch {
        let signals = SignalWatch()
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [job.configuration, signals.configuration], logger: Logger(label: label)))
        try await group.run()
        try job.check()
        return signals
    }
}
