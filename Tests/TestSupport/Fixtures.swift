import Foundation
import GNSS
import GPSDReplay

/// Where the repository's fixtures live, found from this file's path so tests run from any directory.
public enum Fixtures {
    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    public static let nmeaDirectory = root.appendingPathComponent("Fixtures/nmea")

    /// Every recorded log, by name without `.log`.
    public static let logNames: [String] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: nmeaDirectory.path)) ?? []
        return names.filter { $0.hasSuffix(".log") }.map { String($0.dropLast(4)) }.sorted()
    }()

    public static func log(_ name: String) -> String { nmeaDirectory.appendingPathComponent("\(name).log").path }

    /// Recorded CAN buses (candump), by file name.
    public static func can(_ name: String) -> String { root.appendingPathComponent("Fixtures/can/\(name)").path }

    /// Lines of a text file, split on bytes: "\r\n" is one Character in Swift and would not split.
    public static func lines(of path: String) throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.split(separator: UInt8(ascii: "\n")).map {
            var line = String(decoding: $0, as: UTF8.self)
            if line.hasSuffix("\r") { line.removeLast() }
            return line
        }.filter { !$0.isEmpty }
    }
}

/// The fields of a TPV line from gpsd's own regression output, or from our JSON lines.
public struct TPVFields: Equatable, CustomStringConvertible, Sendable {
    public var time: String?
    public var mode: Int
    public var status: Int
    public var lat: Double?
    public var lon: Double?

    public init(json line: String) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw CocoaError(.coderReadCorrupt)
        }
        time = object["time"] as? String
        mode = (object["mode"] as? NSNumber)?.intValue ?? 0
        status = (object["status"] as? NSNumber)?.intValue ?? 0  // gpsd 3.22 omits status for a plain fix
        lat = (object["lat"] as? NSNumber)?.doubleValue
        lon = (object["lon"] as? NSNumber)?.doubleValue
        // gpsd writes coordinates only with a fix; we write null then. Compare what both mean.
        if mode < 2 { (lat, lon) = (nil, nil) }
    }

    public var description: String {
        "time=\(time ?? "-") mode=\(mode) status=\(status) lat=\(lat.map { "\($0)" } ?? "-") lon=\(lon.map { "\($0)" } ?? "-")"
    }

    /// The TPV lines of a `.chk` file.
    public static func fromCheckFile(_ path: String) throws -> [TPVFields] {
        try Fixtures.lines(of: path).filter { $0.contains(#""class":"TPV""#) }.map(TPVFields.init(json:))
    }
}

/// Collects a whole replay, bounded in time.
public enum ReplayRun {
    public struct Timeout: Error, CustomStringConvertible {
        public var description: String { "the replay did not finish in time" }
    }

    public static func reports(log name: String, timeout: Double = 60) async throws
        -> (reports: [PositionReport], ending: ReplayEnding, processes: [pid_t])
    {
        let gpsd = try await ReplayGPSD.start(log: try NMEALog(contentsOf: Fixtures.log(name)))
        defer { gpsd.stop() }
        let stream = gpsd.stream()
        let reports = try await collect(stream.reports(), timeout: timeout)
        return (reports, await stream.ending.value, gpsd.processIDs)
    }

    public static func samples(log name: String, interval: Double = 1, timeout: Double = 60) async throws
        -> (samples: [PositionSample], ending: ReplayEnding)
    {
        let gpsd = try await ReplayGPSD.start(log: try NMEALog(contentsOf: Fixtures.log(name)))
        defer { gpsd.stop() }
        let stream = gpsd.stream()
        let samples = try await collect(stream.samples(interval: interval), timeout: timeout)
        return (samples, await stream.ending.value)
    }

    /// Everything a stream yields until it ends; throws if that takes longer than `timeout`.
    public static func collect<T: Sendable>(_ stream: AsyncStream<T>, timeout: Double) async throws -> [T] {
        try await withThrowingTaskGroup(of: [T]?.self) { group in
            group.addTask {
                var items: [T] = []
                for await item in stream { items.append(item) }
                return items
            }
            group.addTask {
                try await Task.sleep(for: .seconds(timeout))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let items = first else { throw Timeout() }
            return items
        }
    }
}

/// Consumes a stream in the background so tests can wait for an item with a deadline.
public actor Recorder<T: Sendable> {
    public private(set) var items: [T] = []
    public private(set) var ended = false
    private var task: Task<Void, Never>?

    public init() {}

    public func start(_ stream: AsyncStream<T>) {
        task = Task {
            for await item in stream { self.append(item) }
            self.end()
        }
    }

    public func append(_ item: T) { items.append(item) }
    private func end() { ended = true }

    /// Cancels the consumer, which ends the stream and whatever feeds it.
    public func stop() { task?.cancel() }

    /// Index of the first item at or after `from` matching `predicate`, waiting up to `timeout` seconds.
    public func waitFor(from: Int = 0, timeout: Double, _ predicate: @Sendable (T) -> Bool) async -> Int? {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if from < items.count, let index = items[from...].firstIndex(where: predicate) { return index }
            if ended { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        } while Date() < deadline
        return nil
    }
}

public enum Processes {
    /// True when no process has this pid any more (reaped or never existed).
    public static func isGone(_ pid: pid_t) -> Bool {
        kill(pid, 0) != 0 && errno == ESRCH
    }

    /// True when the process is gone or a zombie: it runs no more, whoever has yet to reap it.
    public static func isDead(_ pid: pid_t) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return isGone(pid) }
        // The state follows the parenthesised command name: "pid (comm) S ...".
        guard let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
    }

    /// Every running process whose command line contains all of `words`.
    public static func matching(_ words: [String]) -> [pid_t] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(pid_t.init).filter { pid in
            guard let raw = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline")) else { return false }
            let command = String(decoding: raw.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
            return words.allSatisfy(command.contains)
        }
    }
}

/// True once `condition` holds, looked at every 20 ms for up to `timeout` seconds. It suspends
/// between looks: tests run side by side on a pool of two threads, which a sleeping test would hold.
public func eventually(within timeout: Double, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(20))
    }
    return condition()
}

/// The same for a condition that must itself wait (a command run, a question to the local
/// agrirouter), looked at every 100 ms.
public func eventually(within timeout: Double, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return try await condition()
}
