import BlockingWork
import Fields
import Foundation
import Synchronization

/// Received TaskData read and stored beside the gateway's loop, one at a time, on a thread of its
/// own. Whatever a TaskData holds, the loop that samples, publishes and reads the feed never waits
/// for it: the feed reader hands a whole TaskData over and goes on, and hears back when it is
/// stored or refused, to confirm its messages then.
///
/// Reading is bounded by the reader's caps (bytes, partfields, points, checks linear in them); a
/// shutdown stops a read in progress, and its message, unconfirmed, comes again.
public actor TaskDataImports {
    /// A whole TaskData and what to do once it is settled.
    struct Job: Sendable {
        var zip: Data
        var sender: String
        var sentAt: Date
        var contextID: String?
        var messageIDs: [String]
        var receivedAt: Date
    }

    /// How it went: stored (or older than what is there), or refused with the store's error.
    typealias Outcome = Result<ReceivedImport, FieldsError>

    /// TaskData waiting at most; past it a TaskData is left in the feed and comes again.
    static let maximumWaiting = 4

    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-taskdata")
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    private let fields: FieldStore
    private let limits: TaskDataLimits
    private nonisolated let jobs: AsyncStream<Job>
    private nonisolated let continuation: AsyncStream<Job>.Continuation
    /// Waiting or being read; counted by the feed reader's side too, but this is the queue's own count.
    private let waiting = Mutex(0)
    /// Held while a read runs, for tests that need an import to be in progress.
    private let gate: (@Sendable () async -> Void)?

    init(fields: FieldStore, limits: TaskDataLimits = TaskDataLimits(), gate: (@Sendable () async -> Void)? = nil) {
        self.fields = fields
        self.limits = limits
        self.gate = gate
        (jobs, continuation) = AsyncStream.makeStream(of: Job.self, bufferingPolicy: .unbounded)
    }

    /// Queues a TaskData; false (and nothing queued) when `maximumWaiting` are already waiting.
    nonisolated func submit(_ job: Job) -> Bool {
        let taken = waiting.withLock { count in
            guard count < Self.maximumWaiting else { return false }
            count += 1
            return true
        }
        if taken { continuation.yield(job) }
        return taken
    }

    /// Reads and stores each TaskData as it comes, handing `settled` the outcome; returns when
    /// cancelled (a read in progress stops at its next check and is `interrupted`).
    func run(settled: @Sendable (Job, Outcome) async -> Void) async {
        for await job in jobs {
            let outcome = await importing(job)
            waiting.withLock { $0 -= 1 }
            await settled(job, outcome)
            if Task.isCancelled { break }
        }
    }

    /// Read here, on this actor's thread; stored on the store's, in one short commit.
    private func importing(_ job: Job) async -> Outcome {
        await gate?()
        let source = Self.source(of: job.sender)
        do throws(FieldsError) {
            if let newest = try await fields.newestSent(source: source), newest > job.sentAt {
                return .success(.older(than: newest))
            }
            let storePath = await fields.path
            let content = try FieldStore.readReceivedTaskData(
                job.zip, source: source, scratchFolder: (storePath as NSString).deletingLastPathComponent,
                limits: limits)
            return .success(
                try await fields.storeReceived(
                    content, source: source, sentAt: job.sentAt,
                    releasing: job.contextID.map { (job.sender, $0) }, now: job.receivedAt))
        } catch {
            return .failure(error)
        }
    }

    /// By endpoint id, which a rename in agrirouter's UI does not change: the sender's next TaskData replaces these fields.
    static func source(of sender: String) -> String { "agrirouter: \(sender)" }
}
