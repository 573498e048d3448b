import BlockingWork
import Foundation
import JSONText
import StateFiles

/// Slows password guessing to a crawl without locking out the driver.
///
/// - Each client (an address; a global IPv6 /64 off the box's links) that guessed wrong must wait before its next try is checked: 1 s after
///   the first failure, doubling with each one, at most 15 minutes. A try before then is refused at
///   once, without hashing, so a thousand parallel guesses cost one hash, not a thousand.
/// - Over all addresses, at most `globalFailuresPerMinute` failures a minute; beyond that, only
///   addresses that never failed are checked, so an attacker with many addresses gets one guess from
///   each while the driver's own tablet still logs in.
/// - Over all clients together, at most `checksPerSecond` passwords are checked a second, after a
///   burst of `checkBurst`; a try beyond is refused at once and told when the next check is free. A
///   client that takes a fresh address for every guess (IPv6 on the cab's own link has them by the
///   billion) is held by nothing above; this keeps it to a few guesses a second, where the hash alone
///   allowed some 30.
/// - The record is kept in the state directory (`web-logins.json`, 0600), so restarting the server
///   forgets nothing; a client's failures are forgotten a day after its last one or when it logs in.
/// - The PBKDF2 hash runs here, on a thread of its own: never on Swift's cooperative pool, and one at
///   a time.
actor LoginThrottle {
    private nonisolated let executor = DedicatedThreadExecutor(name: "agrigps-login")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    enum Outcome: Equatable, Sendable {
        case accepted
        /// Wrong; the client's next try is checked after this many seconds.
        case wrong(retryAfter: Double)
        /// Not checked: too soon after this client's last failure, too many failures of late, or too
        /// many checks of late over all clients.
        case tooSoon(retryAfter: Double)
    }

    struct Client: Codable, Equatable {
        var failures: Int
        var lastFailure: Double
    }

    struct Record: Codable, Equatable {
        var clients: [String: Client] = [:]
        var recentFailures: [Double] = []
    }

    static let maximumDelay: Double = 15 * 60
    static let forgetAfter: Double = 24 * 3600
    static let maximumClients = 4096
    let globalFailuresPerMinute: Int
    let path: String
    private var record: Record
    private var loaded = false
    /// Kept in memory only: a restart refills it, which gives a guesser one burst more.
    private var checks: CheckBudget
    private let now: @Sendable () -> Double

    init(
        path: String, globalFailuresPerMinute: Int = 20, checksPerSecond: Double = 2, checkBurst: Int = 4,
        now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) {
        self.path = path
        self.globalFailuresPerMinute = max(1, globalFailuresPerMinute)
        checks = CheckBudget(perSecond: checksPerSecond, burst: checkBurst)
        self.now = now
        record = Record()
    }

    /// The wait after `failures` wrong tries: 1, 2, 4 … seconds, at most 15 minutes.
    static func delay(after failures: Int) -> Double {
        guard failures > 0 else { return 0 }
        return min(maximumDelay, pow(2, Double(min(failures - 1, 20))))
    }

    /// Checks `password` for `client` (an address), unless the client must wait first.
    func attempt(_ client: String, verify: @Sendable () -> Bool) -> Outcome {
        loadIfNeeded()
        let time = now()
        prune(at: time)
        if let known = record.clients[client] {
            let allowedAt = known.lastFailure + Self.delay(after: known.failures)
            if time < allowedAt { return .tooSoon(retryAfter: allowedAt - time) }
        }
        if record.recentFailures.count >= globalFailuresPerMinute, record.clients[client] != nil {
            let oldest = record.recentFailures.first ?? time
            return .tooSoon(retryAfter: max(1, oldest + 60 - time))
        }
        if let wait = checks.take(at: time) { return .tooSoon(retryAfter: wait) }
        if verify() {
            if record.clients.removeValue(forKey: client) != nil { save() }
            return .accepted
        }
        var known = record.clients[client] ?? Client(failures: 0, lastFailure: time)
        known.failures = min(known.failures + 1, 1000)
        known.lastFailure = time
        record.clients[client] = known
        record.recentFailures.append(time)
        save()
        return .wrong(retryAfter: Self.delay(after: known.failures))
    }

    /// How many failures a client has on record (for tests and the log).
    func failures(of client: String) -> Int {
        loadIfNeeded()
        return record.clients[client]?.failures ?? 0
    }

    private func prune(at time: Double) {
        record.recentFailures.removeAll { $0 <= time - 60 || $0 > time + 60 }
        record.clients = record.clients.filter { $0.value.lastFailure > time - Self.forgetAfter }
        if record.clients.count > Self.maximumClients {
            let keep = record.clients.sorted { $0.value.lastFailure > $1.value.lastFailure }.prefix(Self.maximumClients)
            record.clients = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }

    private func loadIfNeeded() {
        guard !loaded else { return }
        loaded = true
        guard let bytes = try? StateFile.read(path, limit: 1 << 20),
            let stored = try? JSONDecoder().decode(Record.self, from: Data(bytes))
        else { return }
        // Our own file read back is checked like any input: counts and times in range, or dropped.
        let time = now()
        record.clients = stored.clients.filter { key, value in
            key.utf8.count <= 64 && (1...1000).contains(value.failures) && value.lastFailure.isFinite
                && value.lastFailure <= time + 60
        }
        record.recentFailures = stored.recentFailures.filter { $0.isFinite && $0 > time - 60 && $0 <= time + 60 }
            .suffix(1000).sorted()
    }

    private func save() {
        guard let data = try? JSONWriter.encoder().encode(record) else { return }
        try? StateFile.replace(path, with: Array(data))
    }
}

/// Password checks over all clients together: a token bucket of `burst` checks, refilled at
/// `perSecond`. Its times are the throttle's (the system clock, which a box without a battery may
/// set back or forward): a step back refills nothing and the bucket goes on from the new time; a
/// step forward fills it, to one burst at most.
struct CheckBudget: Sendable, Equatable {
    let perSecond: Double
    let burst: Double
    private(set) var tokens: Double
    private(set) var last: Double?

    init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond.isFinite ? min(max(perSecond, 0.01), 1000) : 2
        self.burst = Double(max(1, burst))
        tokens = self.burst
    }

    /// Takes a check if one is free and gives nil; else the seconds until one is.
    mutating func take(at time: Double) -> Double? {
        if let last, time > last { tokens = min(burst, tokens + (time - last) * perSecond) }
        last = time
        guard tokens >= 1 else { return (1 - tokens) / perSecond }
        tokens -= 1
        return nil
    }
}
