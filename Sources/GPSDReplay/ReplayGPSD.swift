import BlockingWork
import Clocks
import Foundation
import GNSS
import Synchronization

/// A private gpsd that reads a recorded NMEA log over loopback TCP, on a port of its own so that it
/// never meets a system gpsd on 2947. `stop()` (also run on deinit) ends gpsd, reaps it, and removes
/// what it left behind; if this process dies first, the kernel ends gpsd (see `GPSDProcess`).
public final class ReplayGPSD: Sendable {
    public struct Options: Sendable {
        /// Feed the log at top speed, or paced by the receiver's own clock.
        public var realTime = false
        /// Append `# EOF` so gpsd closes the device; false leaves a silent, connected receiver.
        public var endWithEOF = true
        /// Listen here instead of on a free port.
        public var port: UInt16?
        public var gpsdExecutable = "/usr/sbin/gpsd"
        /// How long gpsd may take to accept clients before the replay gives up.
        public var startTimeout: Double = 10

        public init() {}
    }

    public let address: GPSDAddress
    /// Every process this replay started (gpsd).
    public let processIDs: [pid_t]
    private let gpsd: GPSDProcess
    private let feeder: any ReplayFeed
    private let workDirectory: String
    /// Held for the whole of `stop()`, so that a second caller returns only once everything is reaped.
    private let stopped = Mutex<Bool>(false)

    public convenience init(log: NMEALog, options: Options = Options()) throws(ReplayError) {
        try self.init(
            feed: { () throws(ReplayError) in
                try ReplayFeeder(log: log, realTime: options.realTime, endWithEOF: options.endWithEOF)
            }, options: options)
    }

    /// gpsd reading a device that `makeFeed`'s feed writes to (a virtual CAN bus); gpsd opens it at
    /// once, and the feed begins when the stream's client is connected (`stream()`).
    public init(feed makeFeed: () throws(ReplayError) -> any ReplayFeed, options: Options = Options())
        throws(ReplayError)
    {
        guard access(options.gpsdExecutable, X_OK) == 0 else { throw .gpsdMissing(options.gpsdExecutable) }
        var template = Array("/tmp/agrigps-replay.XXXXXX".utf8CString)
        guard let directory = mkdtemp(&template) else {
            throw .system("cannot create a temporary directory: \(String(cString: strerror(errno)))")
        }
        workDirectory = String(cString: directory)
        let feeder: any ReplayFeed
        do throws(ReplayError) {
            feeder = try makeFeed()
            do throws(ReplayError) {
                (gpsd, address) = try Self.startGPSD(options: options, device: feeder.device, directory: workDirectory)
            } catch {
                feeder.stop()
                throw error
            }
        } catch {
            try? FileManager.default.removeItem(atPath: workDirectory)
            throw error
        }
        self.feeder = feeder
        processIDs = [gpsd.pid]
        // gpsd writes to the log it holds open; the directory need not outlive a SIGKILL of ours.
        try? FileManager.default.removeItem(atPath: workDirectory)
    }

    /// Starts a replay from async code: gpsd's start-up is waited for on a thread of its own, so that
    /// many replays starting at once (tests in parallel) never hold Swift's cooperative pool.
    public static func start(log: NMEALog, options: Options = Options()) async throws(ReplayError) -> ReplayGPSD {
        try await onOwnThread { () throws(ReplayError) in try ReplayGPSD(log: log, options: options) }
    }

    /// A replay of a device its feed writes to (see `init(feed:options:)`), started off the pool.
    public static func start(
        feed makeFeed: @escaping @Sendable () throws(ReplayError) -> any ReplayFeed,
        options: Options = Options()
    ) async throws(ReplayError) -> ReplayGPSD {
        try await onOwnThread { () throws(ReplayError) in try ReplayGPSD(feed: makeFeed, options: options) }
    }

    /// Whether the replay ends when its feed has written everything (a device gpsd never closes),
    /// rather than when gpsd closes the device at the log's end.
    var endsWithFeed: Bool { feeder.endsWithFeed }

    /// Lets the feed begin: once the client reading the replay is connected.
    func beginFeed() { feeder.begin() }

    /// `stop()` from async code, off the cooperative pool: gpsd is given two seconds to end.
    public func finish() async {
        await onOwnThread { self.stop() }
    }

    /// When the feeder had handed gpsd the whole log and `# EOF` (`uptime()`); nil until then.
    var feedFinishedAt: Double? { feeder.finishedAt }

    /// A last resort for an owner that did not stop it: the commands `finish()` it first, off the
    /// cooperative pool, which leaves this nothing to wait for.
    deinit { stop() }

    public func stop() {
        stopped.withLock { stopped in
            guard !stopped else { return }
            stopped = true
            feeder.stop()
            gpsd.terminate(grace: 2)
            Self.removeSharedMemory(key: Self.sharedMemoryKey(port: address.port))
            // Both normally done already, at start-up; kept in case that did not happen.
            try? FileManager.default.removeItem(atPath: workDirectory)
        }
    }

    /// Starts gpsd and waits until it accepts clients. A lost race for a free port shows as gpsd
    /// exiting early; then it tries another port.
    private static func startGPSD(
        options: Options, device: String,
        directory: String
    ) throws(ReplayError) -> (GPSDProcess, GPSDAddress) {
        var lastError = ReplayError.gpsdFailedToStart("no attempt made")
        for _ in 0..<(options.port == nil ? 3 : 1) {
            let port: UInt16
            if let chosen = options.port { port = chosen } else { port = try LoopbackSocket.freePort() }
            let outputPath = directory + "/gpsd.log"
            var environment = ProcessInfo.processInfo.environment
            environment["GPSD_SHM_KEY"] = String(format: "0x%08x", sharedMemoryKey(port: port))
            let child = try GPSDProcess(
                gpsd: options.gpsdExecutable,
                // A bus is opened at once (-n): its frames are read as they come, client or not.
                arguments: ["-N", "-b"] + (device.hasPrefix("tcp://") ? [] : ["-n"]) + ["-S", String(port), device],
                environment: environment, outputPath: outputPath)
            let deadline = Date().addingTimeInterval(options.startTimeout)
            while Date() < deadline && !child.hasExited {
                if LoopbackSocket.accepts(port: port) {
                    releaseSharedMemoryEarly(key: sharedMemoryKey(port: port), gpsd: child)
                    return (child, GPSDAddress(host: "127.0.0.1", port: port))
                }
                usleep(10_000)
            }
            child.terminate(grace: 2)
            let output = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            let lastLine = output.split(separator: "\n").last(where: { !$0.contains("DBUS") }) ?? "no output"
            lastError = .gpsdFailedToStart("gpsd on port \(port): \(lastLine)")
        }
        throw lastError
    }

    /// gpsd exports its data in SysV shared memory under this key; one key per instance keeps
    /// concurrent replays apart (gpsfake does the same).
    static func sharedMemoryKey(port: UInt16) -> Int32 { Int32(0x4770_0000) | Int32(port) }

    /// gpsd 3.22 always exports to shared memory and removes the segment only on an orderly exit,
    /// so every SIGKILL (of gpsd, or of us, which kills gpsd) would leave one behind. Marked for
    /// removal as soon as our gpsd holds it, the segment stays usable and the kernel frees it when
    /// gpsd goes, however it goes. gpsd creates it a few milliseconds after it opens its port.
    private static func releaseSharedMemoryEarly(key: Int32, gpsd: GPSDProcess, timeout: Double = 1) {
        let deadline = uptime() + timeout
        while uptime() < deadline && !gpsd.hasExited {
            let id = shmget(key, 0, 0)
            var info = shmid_ds()
            if id >= 0 && shmctl(id, IPC_STAT, &info) == 0 {
                // Attached means attached by our gpsd: nobody else uses this instance's key.
                if info.shm_cpid == gpsd.pid || info.shm_nattch > 0 {
                    shmctl(id, IPC_RMID, nil)
                    return
                }
                // Left by a gpsd killed before this fix, on the same port: let ours make its own.
                if kill(info.shm_cpid, 0) != 0 && errno == ESRCH { shmctl(id, IPC_RMID, nil) }
            }
            usleep(2_000)
        }
    }

    /// gpsd started as root drops privileges and then cannot remove its own segment.
    private static func removeSharedMemory(key: Int32) {
        let id = shmget(key, 0, 0)
        if id >= 0 { shmctl(id, IPC_RMID, nil) }
    }
}

extension ReplayGPSD {
    /// A loopback port that nothing listened on a moment ago; for pointing clients at "no gpsd".
    public static func freeLoopbackPort() throws(ReplayError) -> UInt16 { try LoopbackSocket.freePort() }
}
