// Drives a Spool in its own process, for tests that must kill it or run it as another user.
//
//   spool-exerciser crash-loop SPOOL JOURNAL
//       Appends as fast as it can while batches move through in flight and acknowledged, until
//       killed. Writes a journal line only after the step it names has returned:
//       "a SEQ" appended, "k BATCH SEQ,SEQ,..." acknowledged (with its samples), "f BATCH" failed.
//       Acknowledged rows are kept as history, so the checker sees each.
//   spool-exerciser crash-loop-cleared SPOOL JOURNAL
//       The same with both outputs and no history, as the daemon runs: acknowledged rows are
//       cleared a few hundred at a time. Before it acknowledges a cycle's batches it writes
//       "s OUTPUT SEQ,SEQ,..." for each, so the checker knows which rows may be gone; after, it writes
//       "k OUTPUT SEQ,SEQ,...".
//   spool-exerciser sync-steps SPOOL
//       Appends 3 samples, takes them as a batch and acknowledges it, then appends a fourth with a
//       take riding it, printing each step's name first.
//   spool-exerciser hold-then-flush SPOOL GATE
//       Appends samples 1-3, waits for the file GATE, appends 4-5, then prints every spooled
//       sample's sequence number in order.
import Foundation
import GNSS
import Spool

func sample(_ seq: Int) -> PositionSample {
    let report = PositionReport(
        time: Date(), gpsdMode: 3, gpsdStatus: 2, latitude: 48.1 + Double(seq) * 1e-6,
        longitude: 11.5, altitudeMSL: 500, speed: 1.5, track: 90, hdop: 0.9, pdop: 1.6,
        satellitesUsed: 12)
    return PositionSample(sampledAt: Date(), state: report.fixState, report: report, detail: "seq \(seq)")
}

func sequenceNumber(_ sample: PositionSample) -> Int? {
    sample.detail.flatMap { $0.hasPrefix("seq ") ? Int($0.dropFirst(4)) : nil }
}

/// Unbuffered journal: a line is on disk (in the page cache) before the next step starts.
struct Journal {
    let fd: Int32
    init(path: String) { fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0o644) }
    func write(_ line: String) {
        let bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
    }
}

func crashLoop(spoolPath: String, journalPath: String) async throws -> Never {
    var configuration = SpoolConfiguration()
    configuration.acknowledgedHistory = 7 * 24 * 3600  // keep acknowledged rows so the checker sees them
    let spool = Spool(path: spoolPath, configuration: configuration)
    // A restart after a crash: whatever was in flight goes back to pending.
    try await spool.reclaimExpiredBatches(now: Date().addingTimeInterval(configuration.inFlightTimeout + 1))
    // The newest row, not the journal: an append can be committed and its journal line never written.
    var seq = try await spool.newestSample().flatMap { sequenceNumber($0.sample) } ?? 0
    let journal = Journal(path: journalPath)
    var step = 0
    while true {
        seq += 1
        step += 1
        guard case .stored = await spool.append(sample(seq)) else { fatalError("append was not stored") }
        journal.write("a \(seq)")
        if step % 7 == 0, let batch = try await spool.takeBatch(maximumEntries: 10) {
            if step % 35 == 0 {
                try await spool.fail(batch: batch.id, reason: "exercise")
                journal.write("f \(batch.id)")
            } else {
                try await spool.acknowledge(batch: batch.id)
                journal.write(
                    "k \(batch.id) \(batch.samples.compactMap { sequenceNumber($0.sample) }.map(String.init).joined(separator: ","))"
                )
            }
        }
    }
}

func crashLoopCleared(spoolPath: String, journalPath: String) async throws -> Never {
    var configuration = SpoolConfiguration()
    configuration.outputs = [.gpsInfo, .efdi]
    let spool = Spool(path: spoolPath, configuration: configuration)
    try await spool.reclaimExpiredBatches(now: Date().addingTimeInterval(configuration.inFlightTimeout + 1))
    var seq = try await spool.newestSample().flatMap { sequenceNumber($0.sample) } ?? 0
    let journal = Journal(path: journalPath)
    var step = 0
    func line(_ tag: String, _ batch: SpoolBatch) -> String {
        "\(tag) \(batch.output.name) \(batch.samples.compactMap { sequenceNumber($0.sample) }.map(String.init).joined(separator: ","))"
    }
    while true {
        seq += 1
        step += 1
        guard case .stored = await spool.append(sample(seq)) else { fatalError("append was not stored") }
        journal.write("a \(seq)")
        guard step % 7 == 0 else { continue }
        // Up to 10 rows for gps:info and 5 for EFDI, so the outputs' batches cover different rows
        // and EFDI falls behind: rows acknowledged by one output wait for the other. Taken as the
        // daemon takes them, in the next append's commit.
        seq += 1
        async let riding = spool.takeBatches(
            [.init(output: .gpsInfo, entryCost: 1), .init(output: .efdi, entryCost: 2)], byteBudget: 20,
            ridingNextAppendWithin: 5)
        while !(await spool.takeWaitsForAppend) { await Task.yield() }
        guard case .stored = await spool.append(sample(seq)) else { fatalError("append was not stored") }
        journal.write("a \(seq)")
        let batches = try await riding
        if step % 35 == 0, let failed = batches.first {
            try await spool.fail(batch: failed.id, reason: "exercise")
            for batch in batches.dropFirst() { try await spool.release(batch: batch.id) }
        } else if !batches.isEmpty {
            for batch in batches { journal.write(line("s", batch)) }
            try await spool.acknowledge(batches: batches.map(\.id))
            for batch in batches { journal.write(line("k", batch)) }
        }
    }
}

/// Unbuffered, so the test sees each line while this process waits for it.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func holdThenFlush(spoolPath: String, gate: String) async throws {
    var configuration = SpoolConfiguration()
    configuration.reopenInterval = 0.05
    let spool = Spool(path: spoolPath, configuration: configuration)
    func append(_ seq: Int) async {
        switch await spool.append(sample(seq)) {
        case .stored: say("stored \(seq)")
        case .heldInMemory(let error): say("held \(seq) \(error.kind.rawValue)")
        }
    }
    for seq in 1...3 { await append(seq) }
    let fault = await spool.status().storageFault
    say("fault \(fault?.kind.rawValue ?? "none") held \(await spool.status().heldInMemory)")
    while !FileManager.default.fileExists(atPath: gate) { try await Task.sleep(for: .milliseconds(20)) }
    try await Task.sleep(for: .milliseconds(100))
    for seq in 4...5 { await append(seq) }
    let order = try await spool.allSamples().compactMap { sequenceNumber($0.0.sample) }
    say("order \(order.map(String.init).joined(separator: " "))")
}

/// Appends, takes a batch and acknowledges it, saying each step's name before it starts, so that a
/// tracer of the process's system calls can tell which step synced the disk.
func syncSteps(spoolPath: String) async throws {
    let spool = Spool(path: spoolPath, configuration: SpoolConfiguration())
    say("append")
    for seq in 1...3 { _ = await spool.append(sample(seq)) }
    say("take")
    guard let batch = try await spool.takeBatch(id: "traced") else { throw CocoaError(.coderValueNotFound) }
    say("acknowledge")
    _ = try await spool.acknowledge(batch: batch.id)
    // A take that rides the next append: both in one commit, one sync.
    async let riding = spool.takeBatches([.init(output: .gpsInfo)], byteBudget: .max, ridingNextAppendWithin: 60)
    while !(await spool.takeWaitsForAppend) { await Task.yield() }
    say("ride")
    _ = await spool.append(sample(4))
    let rode = try await riding
    say("done")
    say("rode \(rode.flatMap(\.samples).compactMap { sequenceNumber($0.sample) })")
}

let arguments = CommandLine.arguments
switch arguments.dropFirst().first {
case "sync-steps" where arguments.count == 3:
    try await syncSteps(spoolPath: arguments[2])
case "crash-loop" where arguments.count == 4:
    try await crashLoop(spoolPath: arguments[2], journalPath: arguments[3])
case "crash-loop-cleared" where arguments.count == 4:
    try await crashLoopCleared(spoolPath: arguments[2], journalPath: arguments[3])
case "hold-then-flush" where arguments.count == 4:
    try await holdThenFlush(spoolPath: arguments[2], gate: arguments[3])
default:
    FileHandle.standardError.write(
        Data(
            "usage: spool-exerciser crash-loop[-cleared] SPOOL JOURNAL | hold-then-flush SPOOL GATE | sync-steps SPOOL\n"
                .utf8))
    exit(64)
}
