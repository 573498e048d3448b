import BlockingWork
import Clocks
import Foundation
import Synchronization

/// Serves a log to gpsd over loopback TCP. gpsd connects only when its first client sends WATCH,
/// so that client sees the log from its first sentence; TCP backpressure makes top speed lossless.
/// What a private gpsd reads in a replay: the device it is given, and what writes to it.
public protocol ReplayFeed: Sendable {
    /// gpsd's device argument: `tcp://127.0.0.1:PORT`, or `nmea2000://vcan0`.
    var device: String { get }
    /// The replay ends when the feed has written everything (gpsd never closes a bus), rather than
    /// when gpsd closes the device.
    var endsWithFeed: Bool { get }
    /// When everything was written (`uptime()`); nil until then.
    var finishedAt: Double? { get }
    /// Starts writing, once the replay's client is connected.
    func begin()
    func stop()
}

final class ReplayFeeder: ReplayFeed {
    let port: UInt16
    private let listener: Int32
    private let log: NMEALog
    private let realTime: Bool
    private let endWithEOF: Bool
    private let stopped = Atomic<Bool>(false)
    private let fedAt = Mutex<Double?>(nil)

    init(log: NMEALog, realTime: Bool, endWithEOF: Bool) throws(ReplayError) {
        (listener, port) = try LoopbackSocket.listen()
        self.log = log
        self.realTime = realTime
        self.endWithEOF = endWithEOF
        // It blocks on gpsd's socket for the whole replay: a thread of its own.
        guard startThread(named: "agrigps.replay-feeder", { [self] in serve() }) else {
            close(listener)
            throw .gpsdFailedToStart("no thread could be started to feed it the log")
        }
    }

    var device: String { "tcp://127.0.0.1:\(port)" }
    var endsWithFeed: Bool { false }
    /// gpsd connects when a client watches: the log is written then.
    func begin() {}

    func stop() { stopped.store(true, ordering: .releasing) }

    private var isStopped: Bool { stopped.load(ordering: .acquiring) }

    /// When (`uptime()`) gpsd had taken the whole log and `# EOF`; nil until then.
    var finishedAt: Double? { fedAt.withLock { $0 } }

    private func serve() {
        defer { close(listener) }
        var peer: Int32 = -1
        while !isStopped && peer < 0 {
            if LoopbackSocket.readable(listener, timeout: 0.1) { peer = accept(listener, nil, nil) }
        }
        guard peer >= 0 else { return }
        defer { close(peer) }
        guard write(to: peer) else { return }
        if endWithEOF, LoopbackSocket.sendAll(peer, NMEALog.endOfFeed) {
            fedAt.withLock { $0 = uptime() }
        }
        // Without EOF the receiver just goes quiet: hold the line open until told to stop.
        while !endWithEOF && !isStopped { usleep(50_000) }
    }

    private func write(to peer: Int32) -> Bool {
        guard realTime else { return LoopbackSocket.sendAll(peer, log.lines.flatMap(\.bytes)) }
        for line in log.lines {
            if line.delayBefore > 0 && !sleep(line.delayBefore) { return false }
            guard LoopbackSocket.sendAll(peer, line.bytes) else { return false }
        }
        return true
    }

    /// Sleeps in short steps; false if stopped meanwhile.
    private func sleep(_ seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if isStopped { return false }
            usleep(UInt32(min(deadline.timeIntervalSinceNow, 0.05) * 1_000_000))
        }
        return !isStopped
    }
}
