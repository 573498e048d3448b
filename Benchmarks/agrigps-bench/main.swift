import AgrirouterLink
import AgrirouterSim
import AgrirouterWire
// Benchmarks, not tests: each figure is printed beside its baseline, taken in the same run.
//
//   make bench BENCH_ARGS="..."    or, built the same way, .build/release/agrigps-bench [--appends N] [--directory DIR]
//       [--drain-samples N] [--drain-spacing SECONDS] [--cpu-minutes N] [--latency-seconds N] [--storage-minutes N]
//       [--cab-seconds N] [--live-seconds N]
//
// 1. Spool appends: durable appends per second through the Spool (one transaction and one disk sync
//    per sample), against the sqlite3 C API doing the same statements with the same pragmas on the
//    same schema. Rounds alternate between the two so that a noisy disk hurts both alike.
// 2. Backlog drain: a day at 1 Hz buffered, sent to agrirouter-sim at production spacing, against
//    the fewest requests the payload cap allows.
//    The same again with both outputs (gps:info and EFDI TimeLogs), sharing the cap.
// 3. Bytes on the wire per position, against the raw GPSEntry; and what EFDI adds, against the raw Time.
// 4. CPU seconds and peak RSS of `agrigps run` on 10 minutes of 10 Hz data in real time, against
//    `gpspipe -w` on the same gpsd at the same time.
// 5. Latency from a fix to its acknowledgement, p50 and p99, against the send interval plus 2 s.
// 6. Storage written per sample by `agrigps run` at 1 Hz in real time (the kernel's write_bytes in
//    /proc/PID/io), publishing and not onboarded, against the floor of one page of the kernel's
//    cache per durable commit.
// 7. The cab view: from a fix to the marker moving in a real Chromium, p50 and p99 against the goal
//    of 1.5 s, and the page process's peak RSS.
// 8. `agrigps stats` (and a day's `agrigps track`) over a year of records, against the goal of 1 s.
// 9. Live sharing: machine A's fix to A's marker moving on machine B's cab view, in Chromium, over
//    MQTT and over REST at production spacing, p50 and p99 against the goal of 6 s.
import Clocks
import Foundation
import GNSS
import GRDBSQLite
import Gateway
import Spool
import SwiftProtobuf
import TestSupport

struct Options {
    var appends = 2000
    var latencySeconds = 150
    var cpuMinutes = 10
    /// Run one benchmark only: spool, drain, cpu, latency, storage, cab, live, stats, fields or machine.
    var only: String?
    var directory = FileManager.default.temporaryDirectory.path
    var drainSamples = 86_400
    var drainSpacing = 5.0
    var cabSeconds = 120
    var liveSeconds = 150
    var storageMinutes = 5

    init(_ arguments: [String]) {
        var rest = arguments.dropFirst()
        while let flag = rest.popFirst() {
            switch (flag, rest.popFirst()) {
            case ("--appends", let value?) where Int(value).map({ $0 > 0 }) == true: appends = Int(value)!
            case ("--directory", let value?): directory = value
            case ("--drain-samples", let value?) where Int(value).map({ $0 > 0 }) == true: drainSamples = Int(value)!
            case ("--drain-spacing", let value?) where Double(value).map({ $0 >= 0 }) == true:
                drainSpacing = Double(value)!
            case ("--only", let value?)
            where ["spool", "drain", "cpu", "latency", "storage", "cab", "live", "stats", "fields", "machine"].contains(
                value):
                only = value
            case ("--live-seconds", let value?) where Int(value).map({ $0 >= 90 }) == true: liveSeconds = Int(value)!
            case ("--storage-minutes", let value?) where Int(value).map({ $0 >= 2 && $0 <= 1440 }) == true:
                storageMinutes = Int(value)!
            case ("--cab-seconds", let value?) where Int(value).map({ $0 >= 20 }) == true: cabSeconds = Int(value)!
            case ("--cpu-minutes", let value?) where Int(value).map({ $0 > 0 }) == true: cpuMinutes = Int(value)!
            case ("--latency-seconds", let value?) where Int(value).map({ $0 >= 90 }) == true:
                latencySeconds = Int(value)!
            default:
                FileHandle.standardError.write(
                    Data(
                        "usage: agrigps-bench [--appends N] [--directory DIR] [--drain-samples N] [--drain-spacing SECONDS] [--cpu-minutes N] [--latency-seconds N] [--storage-minutes N] [--cab-seconds N] [--live-seconds N] [--only spool|drain|cpu|latency|storage|cab|live|stats|fields|machine]\n"
                            .utf8))
                exit(64)
            }
        }
    }
}

func sample(_ seq: Int) -> PositionSample {
    let report = PositionReport(
        time: Date(), gpsdMode: 3, gpsdStatus: 3, latitude: 48.1 + Double(seq) * 1e-6,
        longitude: 11.5, altitudeHAE: 547.2, altitudeMSL: 500.1, speed: 2.5, track: 181.5,
        hdop: 0.8, pdop: 1.4, satellitesUsed: 14, device: "/dev/ttyACM0")
    return PositionSample(sampledAt: Date(), state: report.fixState, report: report)
}

/// The baseline: the same INSERT the spool runs, through sqlite3 directly, on a file the spool made.
final class RawSQLite {
    private var db: OpaquePointer?
    private var insert: OpaquePointer?

    init(path: String) {
        precondition(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil) == SQLITE_OK)
        for pragma in ["PRAGMA journal_mode = WAL", "PRAGMA synchronous = FULL", "PRAGMA busy_timeout = 5000"] {
            precondition(sqlite3_exec(db, pragma, nil, nil, nil) == SQLITE_OK)
        }
        let insertSQL = """
            INSERT INTO sample (sampled_at, receiver_time, state, state_reason, gpsd_mode, gpsd_status,
                latitude, longitude, altitude_hae, altitude_msl, speed, track, hdop, pdop, satellites_used,
                device, clock_skew, detail, wire_size, delivery)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
                CASE (SELECT text FROM spool_state WHERE name = 'sharing') WHEN 'paused' THEN 'withheld' ELSE 'pending' END)
            """
        precondition(sqlite3_prepare_v2(db, insertSQL, -1, &insert, nil) == SQLITE_OK)
    }

    deinit {
        sqlite3_finalize(insert)
        sqlite3_close(db)
    }

    func append(_ samples: [PositionSample]) {
        precondition(sqlite3_exec(db, "BEGIN", nil, nil, nil) == SQLITE_OK)
        for sample in samples {
            let report = sample.report!
            sqlite3_reset(insert)
            sqlite3_bind_double(insert, 1, sample.sampledAt.timeIntervalSince1970)
            sqlite3_bind_double(insert, 2, report.time!.timeIntervalSince1970)
            sqlite3_bind_text(insert, 3, sample.state.name, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            sqlite3_bind_null(insert, 4)
            sqlite3_bind_int64(insert, 5, Int64(report.gpsdMode))
            sqlite3_bind_int64(insert, 6, Int64(report.gpsdStatus))
            for (index, value) in [
                report.latitude, report.longitude, report.altitudeHAE, report.altitudeMSL,
                report.speed, report.track, report.hdop, report.pdop,
            ].enumerated() {
                sqlite3_bind_double(insert, Int32(7 + index), value!)
            }
            sqlite3_bind_int64(insert, 15, Int64(report.satellitesUsed!))
            sqlite3_bind_text(insert, 16, report.device!, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
            sqlite3_bind_null(insert, 17)
            sqlite3_bind_null(insert, 18)
            sqlite3_bind_int64(insert, 19, Int64(SpoolConfiguration.gpsEntryUpperBound))
            precondition(sqlite3_step(insert) == SQLITE_DONE)
        }
        precondition(sqlite3_exec(db, "COMMIT", nil, nil, nil) == SQLITE_OK)
    }
}

func seconds(_ work: () async -> Void) async -> Double {
    let start = uptime()
    await work()
    return uptime() - start
}

func line(_ label: String, spool: Double, baseline: Double) {
    let text = String(
        format: "%-34@ %9.0f /s   baseline %9.0f /s   ratio %.2f", label as NSString, spool, baseline, spool / baseline)
    print(text)
}

let options = Options(CommandLine.arguments)
let workDirectory = options.directory + "/agrigps-bench-\(getpid())"
try FileManager.default.createDirectory(atPath: workDirectory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: workDirectory) }

func spoolAppends() async {
    let spool = Spool(path: workDirectory + "/spool.sqlite")
    do {
        // The baseline gets the spool's own schema, so both write the same row into the same table.
        _ = Spool(path: workDirectory + "/baseline.sqlite")
    }
    let raw = RawSQLite(path: workDirectory + "/baseline.sqlite")
    print("agrigps-bench: spool appends, \(options.appends) per figure, in \(options.directory)")

    for groupSize in [1, 10, 100] {
        let rounds = 4
        let groups = max(1, options.appends / groupSize / rounds)
        var spoolTime = 0.0
        var baselineTime = 0.0
        var seq = 0
        for _ in 0..<rounds {
            spoolTime += await seconds {
                for _ in 0..<groups {
                    let batch = (0..<groupSize).map { _ in
                        seq += 1
                        return sample(seq)
                    }
                    if groupSize == 1 { await spool.append(batch[0]) } else { await spool.append(batch) }
                }
            }
            baselineTime += await seconds {
                for _ in 0..<groups {
                    raw.append(
                        (0..<groupSize).map { _ in
                            seq += 1
                            return sample(seq)
                        })
                }
            }
        }
        let appended = Double(groups * rounds * groupSize)
        let label = groupSize == 1 ? "durable appends (1 per commit)" : "grouped appends (\(groupSize) per commit)"
        line(label, spool: appended / spoolTime, baseline: appended / baselineTime)
    }
    let status = await spool.status()
    precondition(status.storageFault == nil && status.pending > 0, "the spool did not take the appends")

}

// Backlog drain: a day at 1 Hz buffered, then sent to agrirouter-sim over mutual TLS at production
// spacing. Baseline: the fewest requests the payload cap allows (one per full GPSList), and the
// raw GPSEntry size for the bytes on the wire.
var simulatorConfiguration = SimConfiguration(tans: [
    "BENCH00001": "Bench", "BENCH00002": "Bench CPU",
    "BENCH00003": "Bench latency REST", "BENCH00004": "Bench latency MQTT",
    "BENCH00005": "Bench storage", "BENCH00006": "Bench A REST", "BENCH00007": "Bench B REST",
    "BENCH00008": "Bench A MQTT", "BENCH00009": "Bench B MQTT",
])
simulatorConfiguration.mqtt = true
let simulator = try await AgrirouterSimulator.start(simulatorConfiguration)
let environment = AgrirouterEnvironment.local(
    onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM)
let endpoint = try await OnboardingClient(
    environment: environment, settings: OnboardingSettings(applicationID: "bench", certificationVersionID: "bench")
)
.onboard(tan: "BENCH00001", externalID: "urn:agrigps:bench")

/// A day at 1 Hz drained through `outputs`; returns the body bytes per position, so that the run
/// with both outputs can say what EFDI adds to gps:info alone.
@discardableResult
func backlogDrain(outputs: [SpoolOutput], gpsInfoAlone: Double? = nil) async throws -> Double {
    let label = outputs.map(\.name).joined(separator: " + ")
    var drainConfiguration = SpoolConfiguration()
    drainConfiguration.wireSize = GPSEntry.wireSize(of:)
    drainConfiguration.outputs = outputs
    let backlog = Spool(path: workDirectory + "/backlog-\(outputs.count).sqlite", configuration: drainConfiguration)
    let start = Date().addingTimeInterval(-Double(options.drainSamples))
    let day = (0..<options.drainSamples).map { index -> PositionSample in
        let report = PositionReport(
            time: start.addingTimeInterval(Double(index)), gpsdMode: 3, gpsdStatus: 3,
            latitude: 48.1 + Double(index) * 1e-7, longitude: 11.5 + Double(index) * 1e-7, altitudeHAE: 547.25,
            speed: 2.5, hdop: 0.7, pdop: 1.3, satellitesUsed: 17)
        return PositionSample(
            sampledAt: start.addingTimeInterval(Double(index)), state: report.fixState, report: report)
    }
    for chunk in stride(from: 0, to: day.count, by: 10_000) {
        await backlog.append(Array(day[chunk..<min(chunk + 10_000, day.count)]))
    }
    let drainConnection = try AgrirouterConnection(
        endpoint: endpoint, trustedCAPEM: simulator.caCertificatePEM, minimumSpacing: 0.01)
    try await EndpointSetup(applicationID: "bench", certificationVersionID: "bench", outputs: outputs).run(
        on: drainConnection)
    let spaced = try AgrirouterConnection(
        endpoint: endpoint, trustedCAPEM: simulator.caCertificatePEM, minimumSpacing: options.drainSpacing)
    let efdi = Publisher.EFDI(
        description: DeviceDescription(endpointID: endpoint.deviceAlternateId, softwareVersion: "bench"))
    let publisher = Publisher(spool: backlog, connection: spaced, outputs: outputs, efdi: efdi)
    let drainStart = uptime()
    var positions = 0
    while true {
        // The daemon's order: publish, then one poll whose answers settle the batches.
        let report = await publisher.cycle()
        positions += report.published
        if report.error == nil, (try? await spaced.poll()) != nil {
            await publisher.absorb(await spaced.answers(for: .publisher))
        }
        let status = await backlog.status()
        if status.pending + status.inFlight == 0, await publisher.awaitingAnswers == 0 { break }
    }
    let drainSeconds = uptime() - drainStart
    let requests = await spaced.requestCount
    let bodyBytes = Double(await spaced.bodyBytesSent) / Double(max(1, positions))
    // The fewest sends: every output's bytes of the day (each sized by its own bound, as batches
    // are) through one payload cap per request.
    let perSample = outputs.map { $0 == .efdi ? Efdi_Time.upperBound : GPSEntry.wireSize(of: day[0]) }.reduce(0, +)
    // In Double: the sample count comes from a flag, and the product of two Ints could overflow.
    let fewest = Int(
        (Double(options.drainSamples) * Double(perSample) / Double(AgrirouterLimits.payloadBytes)).rounded(.up))
    print(
        String(
            format:
                "backlog drain (%@): %d samples in %d requests (%d sends), %.0f s at %.0f s spacing; fewest sends the payload cap allows: %d",
            label, options.drainSamples, requests, (requests + 1) / 2, drainSeconds, options.drainSpacing, fewest))
    let rawEntry = Double((try GPSEntry(day[0]).serializedBytes() as Data).count)
    let rawTime = Double((try Efdi_Time(day[0])?.serializedBytes() as Data?)?.count ?? 0)
    if let gpsInfoAlone {
        print(
            String(
                format:
                    "bytes on the wire per position (%@): %.1f, of which EFDI %.1f   raw GPSEntry %.0f bytes, raw Time %.0f bytes",
                label, bodyBytes, bodyBytes - gpsInfoAlone, rawEntry, rawTime))
    } else {
        print(
            String(
                format: "bytes on the wire per position (%@): %.1f   raw GPSEntry %.0f bytes   ratio %.2f",
                label, bodyBytes, rawEntry, bodyBytes / rawEntry))
    }
    return bodyBytes
}

if options.only == nil || options.only == "spool" { await spoolAppends() }
if options.only == nil || options.only == "machine" { try machineBusCPU() }
if options.only == nil || options.only == "drain" {
    let alone = try await backlogDrain(outputs: [.gpsInfo])
    try await backlogDrain(outputs: [.gpsInfo, .efdi], gpsInfoAlone: alone)
}

// The daemon itself, as a process: it is built beside this benchmark (swift build -c release).
let agrigps = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
    "agrigps"
).path
guard FileManager.default.isExecutableFile(atPath: agrigps) else {
    FileHandle.standardError.write(
        Data("agrigps-bench: no agrigps beside this benchmark; run 'make bench', which builds both\n".utf8))
    exit(69)
}
let fixture = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()
    .appendingPathComponent("Fixtures/nmea/nmea-rtk.log").path
if options.only == nil || options.only == "cpu" {
    try await cpuAndMemory(
        agrigps: agrigps, fixture: fixture, work: workDirectory, simulator: simulator, minutes: options.cpuMinutes)
}
if options.only == nil || options.only == "latency" {
    try await latency(
        agrigps: agrigps, fixture: fixture, work: workDirectory, simulator: simulator,
        seconds: options.latencySeconds, sendInterval: 10, spacing: 5)
}
if options.only == nil || options.only == "storage" {
    try await storageWrites(
        agrigps: agrigps, fixture: fixture, work: workDirectory, simulator: simulator, minutes: options.storageMinutes)
}
if options.only == nil || options.only == "cab" {
    try await cabView(agrigps: agrigps, fixture: fixture, work: workDirectory, seconds: options.cabSeconds)
}
if options.only == nil || options.only == "live" {
    for (transport, tans) in [(Transport.mqtt, ("BENCH00008", "BENCH00009")), (.rest, ("BENCH00006", "BENCH00007"))] {
        try await liveSharing(
            agrigps: agrigps, fixture: fixture, work: workDirectory, simulator: simulator, transport: transport,
            tans: tans, seconds: options.liveSeconds)
    }
}
if options.only == nil || options.only == "stats" {
    try await statsOverAYear(agrigps: agrigps, work: workDirectory)
}
if options.only == nil || options.only == "fields" {
    try await fieldBenchmarks(agrigps: agrigps, work: workDirectory)
}
await simulator.shutdown()
