import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
// The benchmarks that run `agrigps run` itself as a process: CPU and peak memory against gpspipe
// on the same replay, and the latency from a fix to agrirouter-sim's acknowledgement.
import ChildProcesses
import Foundation
import GNSS
import GPSDReplay
import GRDB
import Spool
import StateDirectory
import Synchronization
import TestSupport

/// A long 10 Hz log made from a fixture's own GGA and RMC sentences, re-timed and re-checksummed, so
/// that the receiver's fields are real and only the clock is ours.
enum SyntheticLog {
    static func make(fromFixture path: String, epochs: Int, step: Double, start: Date) throws -> String {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(whereSeparator: \.isNewline).map(
            String.init)
        var pairs: [(gga: [String], rmc: [String])] = []
        var pendingGGA: [String]?
        for line in lines {
            let body = line.split(separator: "*").first.map(String.init) ?? ""
            let fields = body.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            if fields.first?.hasSuffix("GGA") == true { pendingGGA = fields }
            if fields.first?.hasSuffix("RMC") == true, let gga = pendingGGA {
                pairs.append((gga, fields))
                pendingGGA = nil
            }
        }
        precondition(!pairs.isEmpty, "no GGA and RMC pairs in \(path)")
        let time = DateFormatter()
        time.locale = Locale(identifier: "en_US_POSIX")
        time.timeZone = TimeZone(identifier: "UTC")
        var text = ""
        for epoch in 0..<epochs {
            let at = start.addingTimeInterval(Double(epoch) * step)
            time.dateFormat = "HHmmss.SS"
            let clock = time.string(from: at)
            time.dateFormat = "ddMMyy"
            let day = time.string(from: at)
            var (gga, rmc) = pairs[epoch % pairs.count]
            gga[1] = clock
            rmc[1] = clock
            rmc[9] = day
            text += sentence(gga) + sentence(rmc)
        }
        return text
    }

    private static func sentence(_ fields: [String]) -> String {
        let body = fields.joined(separator: ",")
        let checksum = body.utf8.dropFirst().reduce(UInt8(0)) { $0 ^ $1 }
        return body + String(format: "*%02X\r\n", checksum)
    }
}

/// A child process, and what the kernel counted for it once it has ended.
struct MeasuredProcess {
    let process: ChildProcess
    let output: String

    init(_ executable: String, _ arguments: [String], output: String) throws {
        self.output = output
        process = try ChildProcess(
            executable: executable, arguments: arguments, environment: ProcessInfo.processInfo.environment,
            outputPath: output, errorPath: output + ".err")
    }

    /// The peak resident set so far, in MiB: VmHWM counts from the exec, unlike the rusage of a child
    /// spawned with vfork, which starts from its parent's peak.
    func peakMiB() -> Double { statusMiB("VmHWM:") }

    private func statusMiB(_ field: String) -> Double {
        let status = (try? String(contentsOfFile: "/proc/\(process.pid)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix(field) } ?? ""
        return (line.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0) / 1024
    }

    /// The CPU seconds (user + system) so far, from /proc/PID/stat in clock ticks; 0 when unreadable.
    func cpuSoFar() -> Double {
        // The process's CPU-time clock: nanoseconds over all its threads, those that ended included.
        // utime and stime in /proc/PID/stat come in 10 ms ticks, too coarse for a process that costs
        // a millisecond a second.
        var clock = clockid_t()
        var time = timespec()
        guard clock_getcpuclockid(process.pid, &clock) == 0, clock_gettime(clock, &time) == 0 else {
            return ticksSoFar()
        }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    private func ticksSoFar() -> Double {
        let stat = (try? String(contentsOfFile: "/proc/\(process.pid)/stat", encoding: .utf8)) ?? ""
        // The fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(max(sysconf(Int32(_SC_CLK_TCK)), 1))
    }

    /// What the process caused to be written to storage so far (write_bytes in /proc/PID/io).
    func writtenBytes() -> Int {
        let io = (try? String(contentsOfFile: "/proc/\(process.pid)/io", encoding: .utf8)) ?? ""
        let line = io.split(separator: "\n").first { $0.hasPrefix("write_bytes:") } ?? ""
        return line.split(separator: " ").last.flatMap { Int($0) } ?? 0
    }

    /// Reads the peak, then SIGTERM; returns the CPU seconds (user + system), the peak in MiB, and
    /// how much of the resident set was anonymous (heap, stacks) rather than mapped from files.
    func stop() -> (cpu: Double, peakMiB: Double, anonymousMiB: Double) {
        let peak = peakMiB()
        let anonymous = statusMiB("RssAnon:")
        kill(process.pid, SIGTERM)
        var status: Int32 = 0
        var usage = rusage()
        _ = wait4(process.pid, &status, 0, &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
            + Double(usage.ru_stime.tv_sec) + Double(usage.ru_stime.tv_usec) / 1e6
        return (cpu, peak, anonymous)
    }
}

func waitUntil(timeout: Double, _ condition: () async -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return false
}

/// A state directory onboarded to the simulator, as `agrigps onboard --env local` leaves it.
func onboardedState(_ directory: String, simulator: AgrirouterSimulator, tan: String, transport: Transport = .rest)
    async throws -> OnboardingResponse
{
    let environment = AgrirouterEnvironment.local(
        onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM)
    let settings = OnboardingSettings(applicationID: "bench", certificationVersionID: "bench")
    let store = CredentialStore(directory: directory)
    let response = try await OnboardingClient(environment: environment, settings: settings)
        .onboard(tan: tan, externalID: try store.externalID(), transport: transport)
    try store.save(response, environment: "local", settings: settings, trustedCAPEM: simulator.caCertificatePEM)
    return response
}

func lastSampleState(_ directory: String) -> String? {
    Heartbeat.read(from: directory + "/heartbeat.json")?.lastSample?.state
}

/// `minutes` of 10 Hz data in real time, from one gpsd to three clients at once: `agrigps run`
/// publishing to the simulator at production spacing, `agrigps run` not onboarded (sampling into its
/// spool only), and the baseline `gpspipe -w`, which only copies gpsd's JSON to a file.
func cpuAndMemory(agrigps: String, fixture: String, work: String, simulator: AgrirouterSimulator, minutes: Int)
    async throws
{
    let epochs = minutes * 600
    try SyntheticLog.make(fromFixture: fixture, epochs: epochs, step: 0.1, start: Date())
        .write(toFile: work + "/10hz.log", atomically: true, encoding: .utf8)
    var options = ReplayGPSD.Options()
    options.realTime = true
    let publishingState = work + "/cpu-state", samplingState = work + "/cpu-sampling-state"
    let endpoint = try await onboardedState(publishingState, simulator: simulator, tan: "BENCH00002")
    let gpsd = try ReplayGPSD(log: try NMEALog(contentsOf: work + "/10hz.log"), options: options)
    defer { gpsd.stop() }
    let pipe = try MeasuredProcess("/usr/bin/gpspipe", ["-w", gpsd.address.description], output: work + "/gpspipe.out")
    let daemon = { (state: String) in
        try MeasuredProcess(
            agrigps,
            [
                "run", "--gpsd", gpsd.address.description, "--state-dir", state, "--spacing", "5",
                "--send-interval", "10",
            ], output: state + ".out")
    }
    let publishing = try daemon(publishingState), sampling = try daemon(samplingState)
    let piped = await waitUntil(timeout: Double(minutes * 60 + 60)) {
        (try? String(contentsOfFile: work + "/gpspipe.out", encoding: .utf8))?.contains("\"activated\":0") ?? false
    }
    // Samples arrive in order, so the first "no receiver" at the simulator means every fix before it arrived.
    let finished = await waitUntil(timeout: 60) {
        guard lastSampleState(samplingState) == "no_receiver" else { return false }
        return await simulator.sentMessages(endpoint: endpoint.deviceAlternateId).contains { message in
            message.envelope.technicalMessageType == TechnicalMessageType.gpsInfo
                && ((try? Agrirouter_Technicalmessagetype_GPSList(serializedBytes: message.payload))?.gpsEntries
                    .contains { $0.positionStatus == .dNotAvailable } ?? false)
        }
    }
    let costs = [("sampling and publishing", publishing.stop()), ("sampling only (not onboarded)", sampling.stop())]
    let baseline = pipe.stop()
    precondition(piped, "gpspipe did not see the end of the replay")
    precondition(finished, "agrigps did not sample the end of the replay and send it")
    let reports =
        ((try? String(contentsOfFile: work + "/gpspipe.out", encoding: .utf8)) ?? "").components(
            separatedBy: "\"class\":\"TPV\""
        ).count - 1
    print(
        String(
            format:
                "agrigps run on %d min of 10 Hz data in real time (%d TPV); baseline gpspipe -w on the same gpsd: CPU %.2f s, peak RSS %.1f MiB",
            minutes, reports, baseline.cpu, baseline.peakMiB))
    for (label, cost) in costs {
        print(
            String(
                format: "   %-30@ CPU %.2f s (ratio %.1f), peak RSS %.1f MiB (%.1f MiB of it anonymous at the end)",
                label as NSString,
                cost.cpu, cost.cpu / max(baseline.cpu, 0.001), cost.peakMiB, cost.anonymousMiB))
    }
}

/// Storage written per sample at 1 Hz: three daemons on one real-time gpsd, one publishing both
/// formats to the simulator (send interval 10 s, production spacing) and two not onboarded, one of
/// them with the machine's data in every sample (the work switch on: the work state and running
/// totals in the spool's machine columns and beside the queue). A second publisher would receive
/// the first's positions from the feed and store them as another machine's (about 7 KiB a sample
/// more for each), which is not what this measures. The
/// figure is the kernel's write_bytes for each daemon (/proc/PID/io: what it caused to be written to
/// storage, in whole pages of the page cache) over the run, divided by the samples it committed.
func storageWrites(agrigps: String, fixture: String, work: String, simulator: AgrirouterSimulator, minutes: Int)
    async throws
{
    try SyntheticLog.make(fromFixture: fixture, epochs: minutes * 60, step: 1, start: Date())
        .write(toFile: work + "/1hz.log", atomically: true, encoding: .utf8)
    var options = ReplayGPSD.Options()
    options.realTime = true
    let publishingState = work + "/storage-state", samplingState = work + "/storage-sampling-state"
    let machineState = work + "/storage-machine-state"
    _ = try await onboardedState(publishingState, simulator: simulator, tan: "BENCH00005")
    try FileManager.default.createDirectory(atPath: machineState, withIntermediateDirectories: true)
    try await Spool(path: machineState + "/spool.sqlite").setWorkSwitch(on: true)  // as `agrigps work on` sets it
    let gpsd = try ReplayGPSD(log: try NMEALog(contentsOf: work + "/1hz.log"), options: options)
    defer { gpsd.stop() }
    let daemon = { (state: String) in
        try MeasuredProcess(
            agrigps,
            [
                "run", "--gpsd", gpsd.address.description, "--state-dir", state, "--spacing", "5",
                "--send-interval", "10",
            ], output: state + ".out")
    }
    let runs = [
        ("publishing (both formats)", publishingState, try daemon(publishingState)),
        ("sampling only (not onboarded)", samplingState, try daemon(samplingState)),
        ("sampling only, machine's data", machineState, try daemon(machineState)),
    ]
    // Start-up writes once (a new spool's schema, the other machines' store, the first endpoint
    // list); what a day costs is the steady state after it, measured from here. The others' store is
    // made on the publishing daemon's first feed reply, which comes a minute or so in: 110 KiB once
    // per installation, which a 5-minute run would spread over its samples.
    try await Task.sleep(for: .seconds(30))
    let settled = await waitUntil(timeout: 120) {
        FileManager.default.fileExists(atPath: publishingState + "/others.sqlite")
    }
    precondition(settled, "the publishing daemon made no store of other machines: no feed reply in 2 minutes")
    try await Task.sleep(for: .seconds(5))
    var marks: [(written: Int, samples: Int)] = []
    for (_, state, process) in runs { marks.append((process.writtenBytes(), committedSamples(state))) }
    let ended = await waitUntil(timeout: Double(minutes * 60 + 60)) { lastSampleState(samplingState) == "no_receiver" }
    precondition(ended, "agrigps did not sample the end of the replay")
    // The publishing daemon's last batch is acknowledged within a cycle or two.
    try await Task.sleep(for: .seconds(25))
    print(
        String(
            format:
                "storage written by agrigps run at 1 Hz for %d min (write_bytes in /proc/PID/io, per committed sample, after "
                + "start-up: 30 s and the first feed reply); baseline: the floor of 4 KiB, one page of the kernel's cache per durable commit; goal 8 KiB:",
            minutes))
    for ((label, state, process), mark) in zip(runs, marks) {
        let written = process.writtenBytes()
        _ = process.stop()
        let samples = committedSamples(state)
        let left = await Spool(path: state + "/spool.sqlite").status()
        let steady = Double(written - mark.written) / 1024 / Double(max(samples - mark.samples, 1))
        print(
            String(
                format:
                    "   %-30@ %.1f KiB per sample (%d samples after start-up; start-up %.0f KiB for %d; %.1f MiB in all; %d left in the spool)",
                label as NSString, steady, samples - mark.samples, Double(mark.written) / 1024, mark.samples,
                Double(written) / 1_048_576, left.pending + left.inFlight))
    }
}

/// Samples the daemon in `state` has committed so far, read from its spool without opening it for
/// writing (no migration, no WAL of our own): its highest row id.
func committedSamples(_ state: String) -> Int {
    guard
        let database = try? DatabaseQueue(
            path: state + "/spool.sqlite",
            configuration: {
                var c = Configuration()
                c.readonly = true
                return c
            }())
    else { return 0 }
    let highest = try? database.read { db in
        try Int.fetchOne(
            db,
            sql:
                "SELECT MAX(IFNULL((SELECT MAX(id) FROM sample), 0), IFNULL((SELECT CAST(number AS INTEGER) FROM spool_state WHERE name = 'highest_id'), 0))"
        )
    }
    return highest.flatMap { $0 } ?? 0
}

/// What one daemon's run measured for the latency benchmark.
struct TransportRun {
    var label: String
    var publishToAcknowledged: [Double] = []
    var fixToAcknowledged: [Double] = []
    var requests = 0
    var bytesSent = 0
    var bytesReceived = 0
    var cpu = 0.0
    var peakMiB = 0.0
    /// Per sample: its receiver time, and its publish and acknowledgement in seconds after its fix.
    var rows: [String] = []
}

/// A 1 Hz receiver in real time and two daemons on it, one onboarded for REST and one for MQTT,
/// publishing to the simulator at production spacing. For each sample: from its publish (the spool's
/// sent_at) and from gpsd reporting its fix (seen by a client of our own) to its acknowledgement (the
/// moment it leaves the spool, polled every 50 ms). Also each daemon's requests (REST requests or
/// MQTT publishes, counted by the simulator), its TCP bytes to agrirouter (the kernel's per-socket
/// counters, read with ss every second), its CPU and its peak resident set.
func latency(
    agrigps: String, fixture: String, work: String, simulator: AgrirouterSimulator,
    seconds: Int, sendInterval: Double, spacing: Double
) async throws {
    let gpsd = try realTimeGPSD(fixture: fixture, seconds: seconds, log: work + "/1hz.log")
    let transports: [(Transport, String)] = [(.rest, "BENCH00003"), (.mqtt, "BENCH00004")]
    var endpoints: [OnboardingResponse] = []
    for (transport, tan) in transports {
        endpoints.append(
            try await onboardedState(
                work + "/latency-\(transport.rawValue)", simulator: simulator, tan: tan, transport: transport))
    }
    let seen = fixesSeen(by: gpsd)
    try await Task.sleep(for: .milliseconds(300))
    let started = Date()
    var daemons: [MeasuredProcess] = []
    var watchers: [Task<[Int64: SpoolWatch.Watched], Never>] = []
    let stop = SpoolWatch.Flag()
    for (transport, _) in transports {
        let state = work + "/latency-\(transport.rawValue)"
        daemons.append(
            try MeasuredProcess(
                agrigps,
                [
                    "run", "--gpsd", gpsd.address.description, "--state-dir", state, "--spacing", "\(spacing)",
                    "--send-interval", "\(sendInterval)",
                ], output: work + "/latency-\(transport.rawValue).out"))
        watchers.append(Task { await SpoolWatch.rows(of: state + "/spool.sqlite", until: stop) })
    }
    let pids = daemons.map(\.process.pid)
    let gpsdPort = Int(gpsd.address.port)
    let sockets = Task { await SocketBytes.watch(pids: pids, excludingPeerPort: gpsdPort, until: stop) }
    let fixTimes = await seen.value
    for (transport, _) in transports {
        _ = await waitUntil(timeout: 3 * sendInterval + 10) {
            await Spool(path: work + "/latency-\(transport.rawValue)/spool.sqlite").status().waiting == 0
        }
    }
    stop.set()
    let bytes = await sockets.value
    gpsd.stop()
    var runs: [TransportRun] = []
    for (index, (transport, _)) in transports.enumerated() {
        let cost = daemons[index].stop()
        var run = TransportRun(label: transport.description)
        for row in await watchers[index].value.values {
            guard let acknowledged = row.goneAt else { continue }
            // The first minute holds the start (set-up, the device description, the feed catch-up).
            guard let time = row.receiverTime, let fix = fixTimes[time.rounded()], fix > started.addingTimeInterval(60)
            else { continue }
            if let sent = row.sentAt { run.publishToAcknowledged.append(acknowledged.timeIntervalSince(sent)) }
            run.fixToAcknowledged.append(acknowledged.timeIntervalSince(fix))
            run.rows.append(
                String(
                    format: "%@ %.1f %.2f %.2f", transport.rawValue, time,
                    (row.sentAt ?? .distantPast).timeIntervalSince(fix),
                    acknowledged.timeIntervalSince(fix)))
        }
        run.requests = await simulator.requestCount(endpoint: endpoints[index].deviceAlternateId)
        (run.bytesSent, run.bytesReceived) = bytes[daemons[index].process.pid] ?? (0, 0)
        (run.cpu, run.peakMiB) = (cost.cpu, cost.peakMiB)
        runs.append(run)
    }
    if let path = ProcessInfo.processInfo.environment["AGRIGPS_BENCH_LATENCIES"] {
        try runs.flatMap(\.rows).sorted().joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
    report(runs, seconds: seconds, sendInterval: sendInterval, spacing: spacing)
}

func percentile(_ values: [Double], _ fraction: Double) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return .nan }
    return sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * fraction).rounded(.up)) - 1))]
}

func report(_ runs: [TransportRun], seconds: Int, sendInterval: Double, spacing: Double) {
    print(
        String(
            format:
                "latency at 1 Hz for %d s, send interval %.0f s, spacing %.0f s (REST and MQTT daemons side by side on one gpsd):",
            seconds, sendInterval, spacing))
    let hour = 3600 / Double(seconds)
    for run in runs {
        precondition(
            run.fixToAcknowledged.count >= (seconds - 60) / 2,
            "\(run.label): only \(run.fixToAcknowledged.count) samples matched their fixes")
        print(
            String(
                format:
                    "   %@ (after the first minute): publish to acknowledged p50 %.2f s, p99 %.2f s (goal for MQTT: 2 s); fix to acknowledged p50 %.1f s, p99 %.1f s, max %.1f s (goal: %.0f s), %d samples",
                run.label, percentile(run.publishToAcknowledged, 0.5), percentile(run.publishToAcknowledged, 0.99),
                percentile(run.fixToAcknowledged, 0.5), percentile(run.fixToAcknowledged, 0.99),
                run.fixToAcknowledged.max() ?? 0,
                sendInterval + 2, run.fixToAcknowledged.count))
        print(
            String(
                format: "      %d of %d samples acknowledged more than 2 s after their publish",
                run.publishToAcknowledged.filter { $0 > 2 }.count, run.publishToAcknowledged.count))
        print(
            String(
                format:
                    "      per hour: %.0f requests, %.0f kB sent and %.0f kB received over TCP; CPU %.2f s over the run, peak RSS %.1f MiB",
                Double(run.requests) * hour, Double(run.bytesSent) * hour / 1000,
                Double(run.bytesReceived) * hour / 1000, run.cpu, run.peakMiB))
    }
}

/// Polls a spool read-only: when each row was sent (its batches' send times) and when it was first seen
/// gone, which is when the daemon took its acknowledgement.
enum SpoolWatch {
    struct Watched: Sendable {
        var receiverTime: Double?
        var sentAt: Date?
        var goneAt: Date?
    }

    final class Flag: Sendable {
        private let value = Mutex(false)
        func set() { value.withLock { $0 = true } }
        var isSet: Bool { value.withLock { $0 } }
    }

    static func rows(of path: String, until stop: Flag) async -> [Int64: Watched] {
        var rows: [Int64: Watched] = [:]
        var database: DatabaseQueue?
        while !stop.isSet {
            if database == nil, FileManager.default.fileExists(atPath: path) {
                var settings = Configuration()
                settings.readonly = true
                database = try? DatabaseQueue(path: path, configuration: settings)
            }
            if let database,
                let present = try? await database.read({ db in
                    // A sample leaves the spool when every output it waits for has its acknowledgement: its
                    // publish is the later of the two sends (each kept in its batch's row). A row in flight
                    // in an acknowledged batch is acknowledged; it is deleted later, with others.
                    try Row.fetchAll(
                        db,
                        sql: """
                            SELECT s.id, s.receiver_time, s.efdi_delivery = 'off' AS gps_only, g.sent_at AS gps, e.sent_at AS efdi FROM sample s
                            LEFT JOIN batch g ON g.output = 'gps_info' AND g.number = s.batch_id
                            LEFT JOIN batch e ON e.output = 'efdi' AND e.number = s.efdi_batch_id
                            WHERE s.acknowledged_at IS NULL AND NOT (
                                (s.delivery IN ('acknowledged', 'off') OR (s.delivery = 'in_flight' AND g.acknowledged_at IS NOT NULL))
                                AND (s.efdi_delivery IN ('acknowledged', 'off') OR (s.efdi_delivery = 'in_flight' AND e.acknowledged_at IS NOT NULL)))
                            """
                    ).map { row in
                        let (gps, efdi) = (row["gps"] as Double?, row["efdi"] as Double?)
                        let sent = row["gps_only"] == true ? gps : gps.flatMap { gps in efdi.map { max(gps, $0) } }
                        return (id: row["id"] as Int64, receiverTime: row["receiver_time"] as Double?, sentAt: sent)
                    }
                })
            {
                let now = Date()
                let ids = Set(present.map(\.id))
                for sample in present {
                    var row = rows[sample.id] ?? Watched(receiverTime: sample.receiverTime)
                    if row.sentAt == nil, let sent = sample.sentAt { row.sentAt = Date(timeIntervalSince1970: sent) }
                    rows[sample.id] = row
                }
                for (id, row) in rows where row.goneAt == nil && !ids.contains(id) { rows[id]?.goneAt = now }
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return rows
    }
}

/// TCP bytes each process sent and received to agrirouter (its connections to gpsd left out), from
/// the kernel's per-socket counters (ss -ti): the
/// largest value seen for each socket, summed. A socket that closes between two readings loses at
/// most its last second.
enum SocketBytes {
    static func watch(pids: [Int32], excludingPeerPort excluded: Int, until stop: SpoolWatch.Flag) async -> [Int32: (
        sent: Int, received: Int
    )] {
        var perSocket: [String: (pid: Int32, sent: Int, received: Int)] = [:]
        while !stop.isSet {
            // The daemons' connections to gpsd are not agrirouter's traffic.
            for (key, value) in read(pids: Set(pids)) where !key.hasSuffix(":\(excluded)") {
                let old = perSocket[key]
                perSocket[key] = (value.pid, max(old?.sent ?? 0, value.sent), max(old?.received ?? 0, value.received))
            }
            try? await Task.sleep(for: .seconds(1))
        }
        var totals: [Int32: (sent: Int, received: Int)] = [:]
        for value in perSocket.values {
            let total = totals[value.pid] ?? (0, 0)
            totals[value.pid] = (total.sent + value.sent, total.received + value.received)
        }
        return totals
    }

    /// One reading of `ss -tinpH`: each established socket of `pids`, by its addresses.
    static func read(pids: Set<Int32>) -> [String: (pid: Int32, sent: Int, received: Int)] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/ss")
        process.arguments = ["-tinpH", "state", "established"]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return [:] }
        let text = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var result: [String: (pid: Int32, sent: Int, received: Int)] = [:]
        var current: (key: String, pid: Int32)?
        for line in text.split(separator: "\n") {
            if !line.hasPrefix("\t") && !line.hasPrefix(" ") {
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                let pid = line.range(of: "pid=").flatMap { Int32(line[$0.upperBound...].prefix { $0.isNumber }) }
                current =
                    fields.count >= 4 && pid.map(pids.contains) == true ? (fields[2] + ">" + fields[3], pid!) : nil
                continue
            }
            guard let socket = current else { continue }
            func counter(_ name: String) -> Int {
                line.range(of: name + ":").flatMap { Int(line[$0.upperBound...].prefix { $0.isNumber }) } ?? 0
            }
            result[socket.key] = (socket.pid, counter("bytes_sent"), counter("bytes_received"))
        }
        return result
    }
}

/// A 1 Hz receiver in real time, `agrigps run` sampling it and `agrigps web` serving the cab view to a
/// real headless Chromium: for every fix, the time from gpsd reporting it (seen by a client of our
/// own) to the page moving our marker to it; and the page process's peak resident set.
func cabView(agrigps: String, fixture: String, work: String, seconds: Int) async throws {
    guard WebDriver.isInstalled else {
        print("cab view: skipped, chromium and chromium-driver are not installed (script/bootstrap)")
        return
    }
    let gpsd = try realTimeGPSD(fixture: fixture, seconds: seconds, log: work + "/cab.log")
    defer { gpsd.stop() }
    let state = work + "/cab-state"
    let seen = fixesSeen(by: gpsd)
    let daemon = try MeasuredProcess(
        agrigps, ["run", "--gpsd", gpsd.address.description, "--state-dir", state], output: work + "/cab-run.out")
    let port = Int(try ReplayGPSD.freeLoopbackPort())
    // As its systemd unit runs it: the program itself, not `agrigps web`, which execs it.
    let program = URL(fileURLWithPath: agrigps).deletingLastPathComponent().appendingPathComponent("agrigps-web").path
    let web = try MeasuredProcess(
        program, ["--state-dir", state, "--listen", "127.0.0.1:\(port)"], output: work + "/cab-web.out")
    let browser = try await WebDriver(width: 1280, height: 800)
    try await browser.open("http://127.0.0.1:\(port)/")
    _ = try await browser.wait(timeout: 30, for: "return !!(window.cab && cab.map)")
    // Every time the page moves our marker: the fix's receiver time and the browser's clock (the same machine's).
    try await browser.run(
        """
        window.moves = [];
        const draw = window.drawOwn;
        window.drawOwn = function (own) { draw(own); if (own && own.time) { window.moves.push([own.time, Date.now()]); } };
        """)
    // The CPU once the page has loaded and settled, to tell the cost of a page load from that of a sample.
    let settleSeconds = 20
    let settled = Task { () -> (web: Double, daemon: Double)? in
        guard (try? await Task.sleep(for: .seconds(settleSeconds))) != nil else { return nil }
        return (web.cpuSoFar(), daemon.cpuSoFar())
    }
    let fixTimes = await seen.value
    let atEnd = (web: web.cpuSoFar(), daemon: daemon.cpuSoFar())
    let afterSettling = await settled.value
    let moves = (try await browser.run("return window.moves") as? [[Any]]) ?? []
    await browser.quit()
    let webCost = web.stop()
    let daemonCost = daemon.stop()
    let parser = ISO8601DateFormatter()
    parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    var latencies: [Double] = []
    var counted = Set<Double>()
    for move in moves {
        guard let time = (move.first as? String).flatMap(parser.date(from:)), let shown = move.last as? Double else {
            continue
        }
        let key = time.timeIntervalSince1970.rounded()
        guard let fix = fixTimes[key], counted.insert(key).inserted else { continue }
        latencies.append(shown / 1000 - fix.timeIntervalSince1970)
    }
    guard latencies.count >= seconds / 2 else {
        print("cab view: only \(latencies.count) of \(fixTimes.count) fixes reached the marker; nothing to report")
        return
    }
    latencies.sort()
    let p50 = latencies[latencies.count / 2]
    let p99 = latencies[min(latencies.count - 1, Int((Double(latencies.count) * 0.99).rounded(.up)) - 1)]
    print(
        String(
            format:
                "cab view, fix reported by gpsd to the marker moving in Chromium, %d fixes at 1 Hz: p50 %.2f s, p99 %.2f s, max %.2f s   goal p99 1.5 s (ratio %.2f)",
            latencies.count, p50, p99, latencies.last ?? 0, p99 / 1.5))
    // From each process's CPU-time clock (all threads, in nanoseconds): the run itself, then what
    // stopping added (rusage at exit).
    print(
        String(
            format:
                "   agrigps web: CPU %.3f s over %d s, %.3f s with its stop, peak RSS %.1f MiB; agrigps run beside it: CPU %.3f s, %.3f s with its stop, peak RSS %.1f MiB   goal: web no more than run (ratio %.2f)",
            atEnd.web, seconds, webCost.cpu, webCost.peakMiB, atEnd.daemon, daemonCost.cpu, daemonCost.peakMiB,
            atEnd.web / max(atEnd.daemon, 0.001)))
    if let afterSettling {
        print(
            String(
                format: "   from %d s on (the page loaded): agrigps web %.3f s, agrigps run %.3f s (ratio %.2f)",
                settleSeconds, atEnd.web - afterSettling.web, atEnd.daemon - afterSettling.daemon,
                (atEnd.web - afterSettling.web) / max(atEnd.daemon - afterSettling.daemon, 0.001)))
    }
}

/// Live sharing, where the person sees it: machine A samples a 1 Hz receiver in real time and
/// publishes at production spacing (5 s, send interval 5 s); machine B reads its pushes and serves
/// its cab view to a real headless Chromium. For each of A's fixes, from gpsd reporting it (seen by
/// a client of our own) to B's page first showing A's marker at that fix or a newer one. The first
/// minute (set-up, B learning A's name, the feed's catch-up) is reported apart, by its slowest fix.
func liveSharing(
    agrigps: String, fixture: String, work: String, simulator: AgrirouterSimulator, transport: Transport,
    tans: (String, String), seconds: Int
) async throws {
    guard WebDriver.isInstalled else {
        print("live sharing: skipped, chromium and chromium-driver are not installed (script/bootstrap)")
        return
    }
    let gpsd = try realTimeGPSD(fixture: fixture, seconds: seconds, log: work + "/live-\(transport.rawValue).log")
    defer { gpsd.stop() }
    let (stateA, stateB) = (work + "/live-a-\(transport.rawValue)", work + "/live-b-\(transport.rawValue)")
    let a = try await onboardedState(stateA, simulator: simulator, tan: tans.0, transport: transport)
    _ = try await onboardedState(stateB, simulator: simulator, tan: tans.1, transport: transport)
    let seen = fixesSeen(by: gpsd)
    let started = Date()
    // B samples too (the same receiver), as a machine in the field does; only A's marker is timed.
    let daemons = try [stateA, stateB].map { state in
        try MeasuredProcess(
            agrigps,
            [
                "run", "--gpsd", gpsd.address.description, "--state-dir", state, "--spacing", "5", "--send-interval",
                "5",
            ],
            output: state + ".out")
    }
    let port = Int(try ReplayGPSD.freeLoopbackPort())
    let program = URL(fileURLWithPath: agrigps).deletingLastPathComponent().appendingPathComponent("agrigps-web").path
    let web = try MeasuredProcess(
        program, ["--state-dir", stateB, "--listen", "127.0.0.1:\(port)"], output: stateB + "-web.out")
    let browser = try await WebDriver(width: 1280, height: 800)
    try await browser.open("http://127.0.0.1:\(port)/")
    _ = try await browser.wait(timeout: 30, for: "return !!(window.cab && cab.map)")
    // Every time the page draws the others: A's position time and the browser's clock (the same machine's).
    try await browser.run(
        """
        window.moves = [];
        const draw = window.drawOthers;
        window.drawOthers = function (others) {
          draw(others);
          for (const other of others) { if (other.id === arguments[0] && other.positionTime) { window.moves.push([other.positionTime, Date.now()]); } }
        };
        """.replacingOccurrences(of: "arguments[0]", with: "'\(a.deviceAlternateId)'"))
    let fixTimes = await seen.value
    try await Task.sleep(for: .seconds(8))  // the last fixes' way through
    let moves = (try await browser.run("return window.moves") as? [[Any]]) ?? []
    await browser.quit()
    _ = web.stop()
    for daemon in daemons { _ = daemon.stop() }
    let parser = ISO8601DateFormatter()
    parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    let shown = moves.compactMap { move -> (position: Double, at: Double)? in
        guard let time = (move.first as? String).flatMap(parser.date(from:)), let at = move.last as? Double else {
            return nil
        }
        return (time.timeIntervalSince1970.rounded(), at / 1000)
    }
    // A fix is shown once the marker stands at it or at a newer one: a batch moves the marker to its newest.
    var delays: [Double] = []
    var late: [(second: Double, delay: Double)] = []
    var startDelays: [Double] = []
    for (fixTime, reported) in fixTimes {
        guard let first = shown.first(where: { $0.position >= fixTime && $0.at >= reported.timeIntervalSince1970 })
        else { continue }
        let delay = first.at - reported.timeIntervalSince1970
        guard reported > started.addingTimeInterval(60) else {
            startDelays.append(delay)
            continue
        }
        delays.append(delay)
        if delay > 6 { late.append((reported.timeIntervalSince(started), delay)) }
    }
    let counted = fixTimes.values.filter { $0 > started.addingTimeInterval(60) }.count
    guard delays.count >= counted / 2, !delays.isEmpty else {
        print(
            "live sharing (\(transport.description)): only \(delays.count) of \(counted) fixes reached B's page; nothing to report"
        )
        return
    }
    print(
        String(
            format:
                "live sharing over %@, A's fix to A's marker moving on B's cab view, after the first minute, %d of %d fixes, 1 Hz, spacing 5 s: p50 %.2f s, p99 %.2f s, max %.2f s   goal p99 6 s (ratio %.2f)",
            transport.description, delays.count, counted, percentile(delays, 0.5), percentile(delays, 0.99),
            delays.max() ?? 0,
            percentile(delays, 0.99) / 6))
    print(
        String(
            format: "   in the first minute (set-up, the feed's catch-up): %d fixes shown, the slowest after %.1f s",
            startDelays.count, startDelays.max() ?? 0))
    if !late.isEmpty {
        let listed = late.sorted { $0.second < $1.second }.prefix(8).map {
            String(format: "%.1f s at +%.0f s", $0.delay, $0.second)
        }
        print(
            "   past 6 s: \(late.count) fixes, " + listed.joined(separator: ", ")
                + (late.count > listed.count ? ", …" : ""))
    }
}

/// A gpsd of our own replaying `seconds` of a 1 Hz receiver made from `fixture`, in real time from now.
func realTimeGPSD(fixture: String, seconds: Int, log: String) throws -> ReplayGPSD {
    try SyntheticLog.make(fromFixture: fixture, epochs: seconds, step: 1, start: Date()).write(
        toFile: log, atomically: true, encoding: .utf8)
    var options = ReplayGPSD.Options()
    options.realTime = true
    return try ReplayGPSD(log: try NMEALog(contentsOf: log), options: options)
}

/// Our own client of `gpsd`: when it reported each fix, by the fix's receiver time, until the device goes.
func fixesSeen(by gpsd: ReplayGPSD) -> Task<[Double: Date], Never> {
    Task {
        var seen: [Double: Date] = [:]
        for await event in GPSDSource(configuration: GPSDSource.Configuration(address: gpsd.address)).events() {
            if case .report(let report) = event, let time = report.time, report.latitude != nil {
                seen[time.timeIntervalSince1970.rounded()] = Date()
            }
            if case .deviceRemoved = event { break }
        }
        return seen
    }
}
