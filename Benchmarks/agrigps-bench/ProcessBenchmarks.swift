// The benchmarks that run `agrigps run` itself as a process: CPU and peak memory against gpspipe
// on the same replay, and the latency from a fix to agrirouter-sim's acknowledgement.
import AgrirouterWire
import AgrirouterLink
import AgrirouterSim
import Foundation
import GNSS
import GPSDReplay
import Gateway
import Spool
import TestSupport

/// A long 10 Hz log made from a fixture's own GGA and RMC sentences, re-timed and re-checksummed, so
/// that the receiver's fields are real and only the clock is ours.
enum SyntheticLog {
    static func make(fromFixture path: String, epochs: Int, step: Double, start: Date) throws -> String {
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(whereSeparator: \.isNewline).map(String.init)
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
        process = try ChildProcess(executable: executable, arguments: arguments, environment: ProcessInfo.processInfo.environment,
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

    /// Reads the peak, then SIGTERM; returns the CPU seconds (user + system), the peak in MiB, and
    /// how much of the resident set was anonymous (heap, stacks) rather than mapped from files.
    func stop() -> (cpu: Double, peakMiB: Double, anonymousMiB: Double) {
        let peak = peakMiB()
        let anonymous = statusMiB("RssAnon:")
        kill(process.pid, SIGTERM)
        var status: Int32 = 0
        var usage = rusage()
        _ = wait4(process.pid, &status, 0, &usage)
        let cpu = Double(usage.ru_utime.tv_sec) + Double(usage.ru_utime.tv_usec) / 1e6
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
func onboardedState(_ directory: String, simulator: AgrirouterSimulator, tan: String) async throws -> OnboardingResponse {
    let environment = AgrirouterEnvironment.local(onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM)
    let settings = OnboardingSettings(applicationID: "bench", certificationVersionID: "bench")
    let store = CredentialStore(directory: directory)
    let response = try await OnboardingClient(environment: environment, settings: settings).onboard(tan: tan, externalID: try store.externalID())
    try store.save(response, environment: "local", settings: settings, trustedCAPEM: simulator.caCertificatePEM)
    return response
}

func lastSampleState(_ directory: String) -> String? {
    Heartbeat.read(from: directory + "/heartbeat.json")?.lastSample?.state
}

/// `minutes` of 10 Hz data in real time, from one gpsd to three clients at once: `agrigps run`
/// publishing to the simulator at production spacing, `agrigps run` not onboarded (sampling into its
/// spool only), and the baseline `gpspipe -w`, which only copies gpsd's JSON to a file.
func cpuAndMemory(agrigps: String, fixture: String, work: String, simulator: AgrirouterSimulator, minutes: Int) async throws {
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
        try MeasuredProcess(agrigps, ["run", "--gpsd", gpsd.address.description, "--state-dir", state, "--spacing", "5",
                                      "--send-interval", "10"], output: state + ".out")
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
    let reports = ((try? String(contentsOfFile: work + "/gpspipe.out", encoding: .utf8)) ?? "").components(separatedBy: "\"class\":\"TPV\"").count - 1
    print(String(format: "agrigps run on %d min of 10 Hz data in real time (%d TPV); baseline gpspipe -w on the same gpsd: CPU %.2f s, peak RSS %.1f MiB",
                 minutes, reports, baseline.cpu, baseline.peakMiB))
    for (label, cost) in costs {
        print(String(format: "   %-30@ CPU %.2f s (ratio %.1f), peak RSS %.1f MiB (%.1f MiB of it anonymous at the end)", label as NSString,
                     cost.cpu, cost.cpu / max(baseline.cpu, 0.001), cost.peakMiB, cost.anonymousMiB))
    }
}

/// A 1 Hz receiver in real time, `agrigps run` publishing at production spacing: for every position
/// the simulator acknowledged, the time from gpsd reporting the fix (seen by a client of our own on
/// the same gpsd) to its arrival at the simulator, which acknowledges on arrival.
func latency(agrigps: String, fixture: String, work: String, simulator: AgrirouterSimulator,
             seconds: Int, sendInterval: Double, spacing: Double) async throws {
    try SyntheticLog.make(fromFixture: fixture, epochs: seconds, step: 1, start: Date()).write(toFile: work + "/1hz.log", atomically: true, encoding: .utf8)
    let log = try NMEALog(contentsOf: work + "/1hz.log")
    var options = ReplayGPSD.Options()
    options.realTime = true
    let gpsd = try ReplayGPSD(log: log, options: options)
    let state = work + "/latency-state"
    let endpoint = try await onboardedState(state, simulator: simulator, tan: "BENCH00003")

    // Our own client: when gpsd reported each fix, by its receiver time.
    let seen = Task { () -> [Double: Date] in
        var seen: [Double: Date] = [:]
        for await event in GPSDSource(configuration: GPSDSource.Configuration(address: gpsd.address)).events() {
            if case .report(let report) = event, let time = report.time { seen[time.timeIntervalSince1970.rounded()] = Date() }
            if case .deviceRemoved = event { break }
        }
        return seen
    }
    try await Task.sleep(for: .milliseconds(300))
    let daemon = try MeasuredProcess(agrigps, ["run", "--gpsd", gpsd.address.description, "--state-dir", state, "--spacing", "\(spacing)",
                                               "--send-interval", "\(sendInterval)"], output: work + "/latency.out")
    let fixTimes = await seen.value
    _ = await waitUntil(timeout: 3 * sendInterval + 10) { await Spool(path: state + "/spool.sqlite").status().pending == 0 }
    _ = daemon.stop()
    gpsd.stop()

    let messages = await simulator.sentMessages(endpoint: endpoint.deviceAlternateId)
    let arrivals = await simulator.arrivals(endpoint: endpoint.deviceAlternateId)
    var latencies: [Double] = []
    for (message, arrival) in zip(messages, arrivals) where message.envelope.technicalMessageType == TechnicalMessageType.gpsInfo {
        for entry in try Agrirouter_Technicalmessagetype_GPSList(serializedBytes: message.payload).gpsEntries
        where entry.positionStatus != .dNoGps && entry.positionStatus != .dNotAvailable {
            if let fix = fixTimes[entry.gpsUtcTimestamp.date.timeIntervalSince1970.rounded()] {
                latencies.append(arrival.timeIntervalSince(fix))
            }
        }
    }
    precondition(latencies.count >= seconds / 2, "only \(latencies.count) positions matched their fixes")
    if let path = ProcessInfo.processInfo.environment["AGRIGPS_BENCH_LATENCIES"] {
        try latencies.map { String(format: "%.2f", $0) }.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
    }
    // The first minute holds the start: capabilities, subscription and the feed catch-up.
    var steady = Array(latencies.dropFirst(60)).sorted()
    if steady.isEmpty { steady = latencies.sorted() }
    latencies.sort()
    let p50 = latencies[latencies.count / 2]
    let p99 = latencies[min(latencies.count - 1, Int((Double(latencies.count) * 0.99).rounded(.up)) - 1)]
    print(String(format: "latency fix to acknowledged, %d positions, send interval %.0f s, spacing %.0f s: p50 %.1f s, p99 %.1f s, max %.1f s",
                 latencies.count, sendInterval, spacing, p50, p99, latencies.last ?? 0))
    let steadyP99 = steady[min(steady.count - 1, Int((Double(steady.count) * 0.99).rounded(.up)) - 1)]
    print(String(format: "   after the first minute (%d positions): p50 %.1f s, p99 %.1f s", steady.count, steady[steady.count / 2], steadyP99))
    print(String(format: "   baseline: the send interval plus 2 s = %.0f s   p99 ratio %.2f (after the first minute %.2f)",
                 sendInterval + 2, p99 / (sendInterval + 2), steadyP99 / (sendInterval + 2)))
}

/// A 1 Hz receiver in real time, `agrigps run` sampling it and `agrigps web` serving the cab view to a
/// real headless Chromium: for every fix, the time from gpsd reporting it (seen by a client of our
/// own) to the page moving our marker to it; and the page process's peak resident set.
func cabView(agrigps: String, fixture: String, work: String, seconds: Int) async throws {
    guard WebDriver.isInstalled else {
        print("cab view: skipped, chromium and chromium-driver are not installed (script/bootstrap)")
        return
    }
    try SyntheticLog.make(fromFixture: fixture, epochs: seconds, step: 1, start: Date()).write(toFile: work + "/cab.log", atomically: true, encoding: .utf8)
    var options = ReplayGPSD.Options()
    options.realTime = true
    let gpsd = try ReplayGPSD(log: try NMEALog(contentsOf: work + "/cab.log"), options: options)
    defer { gpsd.stop() }
    let state = work + "/cab-state"
    let seen = Task { () -> [Double: Date] in
        var seen: [Double: Date] = [:]
        for await event in GPSDSource(configuration: GPSDSource.Configuration(address: gpsd.address)).events() {
            if case .report(let report) = event, let time = report.time, report.latitude != nil { seen[time.timeIntervalSince1970.rounded()] = Date() }
            if case .deviceRemoved = event { break }
        }
        return seen
    }
    let daemon = try MeasuredProcess(agrigps, ["run", "--gpsd", gpsd.address.description, "--state-dir", state], output: work + "/cab-run.out")
    let port = Int(try ReplayGPSD.freeLoopbackPort())
    let web = try MeasuredProcess(agrigps, ["web", "--state-dir", state, "--listen", "127.0.0.1:\(port)"], output: work + "/cab-web.out")
    let browser = try await WebDriver(width: 1280, height: 800)
    try await browser.open("http://127.0.0.1:\(port)/")
    _ = try await browser.wait(timeout: 30, for: "return !!(window.cab && cab.map)")
    // Every time the page moves our marker: the fix's receiver time and the browser's clock (the same machine's).
    try await browser.run("""
        window.moves = [];
        const draw = window.drawOwn;
        window.drawOwn = function (own) { draw(own); if (own && own.time) { window.moves.push([own.time, Date.now()]); } };
        """)
    let fixTimes = await seen.value
    let moves = (try await browser.run("return window.moves") as? [[Any]]) ?? []
    await browser.quit()
    let webCost = web.stop()
    let daemonCost = daemon.stop()
    let parser = ISO8601DateFormatter()
    parser.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    var latencies: [Double] = []
    var counted = Set<Double>()
    for move in moves {
        guard let time = (move.first as? String).flatMap(parser.date(from:)), let shown = move.last as? Double else { continue }
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
    print(String(format: "cab view, fix reported by gpsd to the marker moving in Chromium, %d fixes at 1 Hz: p50 %.2f s, p99 %.2f s, max %.2f s   goal p99 1.5 s (ratio %.2f)",
                 latencies.count, p50, p99, latencies.last ?? 0, p99 / 1.5))
    print(String(format: "   agrigps web: CPU %.2f s over %d s, peak RSS %.1f MiB; agrigps run beside it: CPU %.2f s, peak RSS %.1f MiB",
                 webCost.cpu, seconds, webCost.peakMiB, daemonCost.cpu, daemonCost.peakMiB))
}
