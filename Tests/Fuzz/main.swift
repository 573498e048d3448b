import AgrirouterLink
import AgrirouterSim
// A bounded mutation campaign over the decoders and validators that read what other parties send:
// outbox items and the feed messages in them, onboarding answers, TaskData's chunks, configuration
// files and heartbeat files. A crash ends the process (the case being run is in the reproducer file), a case that runs
// longer than the hang limit aborts it, and a refusal that echoes a secret or a control character
// fails the run. Deterministic for a given seed.
//
//   agrigps-fuzz [--cases N] [--seed S] [--reproducer PATH]
import AgrirouterWire
import Bounds
import Clocks
import Foundation
import GNSS
import Gateway
import StateDirectory
import StateView
import SwiftProtobuf
import Synchronization
import TestSupport

typealias Random = SplitMix64

enum Mutate {
    static let interestingBytes: [UInt8] = [0x00, 0x01, 0x0A, 0x0D, 0x10, 0x1B, 0x22, 0x5C, 0x7F, 0x80, 0xFF]
    /// The varint of Int64.min and of -1: where a length or a time is read, these are the extremes.
    static let extremeVarints: [[UInt8]] = [
        [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01],
        [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
        [0xFF, 0xFF, 0xFF, 0xFF, 0x0F],
    ]

    /// One to four random edits: bit flips, interesting bytes, inserts, deletions, duplications, varints.
    static func bytes(_ input: [UInt8], _ random: inout Random) -> [UInt8] {
        var bytes = input
        for _ in 0...random.below(4) {
            let at = random.below(bytes.count + 1)
            switch random.below(6) {
            case 0 where !bytes.isEmpty: bytes[min(at, bytes.count - 1)] ^= UInt8(1 << random.below(8))
            case 1 where !bytes.isEmpty: bytes[min(at, bytes.count - 1)] = random.pick(interestingBytes)
            case 2:
                bytes.insert(
                    contentsOf: (0..<random.below(8)).map { _ in UInt8(truncatingIfNeeded: random.next()) }, at: at)
            case 3 where !bytes.isEmpty: bytes.removeSubrange(at..<min(bytes.count, at + 1 + random.below(16)))
            case 4 where at < bytes.count:
                bytes.insert(contentsOf: bytes[at..<min(bytes.count, at + random.below(32))], at: at)
            default: bytes.insert(contentsOf: random.pick(extremeVarints), at: at)
            }
        }
        return bytes
    }
}

/// Values no sender should send, and some it may.
enum Hostile {
    static let doubles: [Double] = [
        .nan, .infinity, -.infinity, 1e308, -1e308, 91, -90.5, 180.5, 200, 9.2e15, 0, 52.1, 8.2, 1e-320,
    ]
    static let int64s: [Int64] = [.min, .max, -1, 0, 1_790_000_000, 9_999_999_999, -62_135_596_800]
    static let texts: [String] = [
        "", "\u{1B}[2J\u{1B}[31mred", "line\nforged: OK", String(repeating: "x", count: 100_000), "file:///etc/passwd",
        "http://127.0.0.1/x", "\u{202E}evil", "\u{0}nul", "urn:agrigps:ok", "../../etc/shadow",
    ]

    static func entry(_ random: inout Random) -> GPSEntry {
        var entry = GPSEntry()
        entry.positionStatus = GPSEntry.PositionStatus(rawValue: random.below(14) - 1) ?? .dGnss
        entry.positionNorth = random.chance(50) ? random.pick(doubles) : Double(random.below(180_000)) / 1000 - 90
        entry.positionEast = random.chance(50) ? random.pick(doubles) : Double(random.below(360_000)) / 1000 - 180
        entry.positionUp = random.chance(50) ? random.pick(int64s) : Int64(random.below(2_000_000))
        entry.hdop = random.pick(doubles)
        entry.pdop = random.pick(doubles)
        entry.numberOfSatellites = UInt32(truncatingIfNeeded: random.next())
        if random.chance(80) {
            entry.gpsUtcTimestamp.seconds =
                random.chance(50) ? random.pick(int64s) : Int64(truncatingIfNeeded: random.next())
            entry.gpsUtcTimestamp.nanos = Int32(truncatingIfNeeded: random.next())
        }
        return entry
    }
}

extension Hostile {
    /// A feed message's type and content: gps:info, or EFDI (a TimeLog, or a device description).
    static func content(_ random: inout Random) -> (String, Data) {
        switch random.below(10) {
        case 0..<6:
            var list = Agrirouter_Technicalmessagetype_GPSList()
            list.gpsEntries = (0..<(1 + random.below(4))).map { _ in entry(&random) }
            return (TechnicalMessageType.gpsInfo, (try? list.serializedBytes()) ?? Data())
        case 6..<9:
            var log = Efdi_TimeLog()
            log.time = (0..<(1 + random.below(4))).map { _ in
                var time = Efdi_Time()
                time.start.seconds = random.pick(int64s)
                time.start.nanos = Int32(truncatingIfNeeded: random.next())
                let position = Efdi_Position(entry(&random))
                if random.chance(50) { time.positionStart = position } else { time.positionStop = position }
                time.dataLogValue = (0..<random.below(40)).map { _ in
                    var value = Efdi_DataLogValue()
                    value.processDataDdi = UInt32(truncatingIfNeeded: random.next())
                    value.processDataValue = random.pick(int64s)
                    return value
                }
                return time
            }
            return (TechnicalMessageType.timeLog, (try? log.serializedBytes()) ?? Data())
        default:
            var device = Efdi_Device()
            device.deviceDesignator = random.pick(texts)
            var taskData = Efdi_ISO11783_TaskData()
            taskData.device = random.chance(90) ? [device] : []
            return (TechnicalMessageType.deviceDescription, (try? taskData.serializedBytes()) ?? Data())
        }
    }
}

/// The case being run, written before it runs: after a crash, the file holds the reproducer.
struct Reproducer {
    let path: String
    func record(_ kind: String, _ bytes: [UInt8]) {
        try? Data((kind + "\n").utf8 + bytes).write(to: URL(fileURLWithPath: path))
    }
}

/// Aborts the process if one case runs longer than `limit` seconds: a hang is a failure too.
final class HangGuard: Sendable {
    private let started = Mutex<(Double, String)?>(nil)
    private let limit: Double

    init(limit: Double) {
        self.limit = limit
        Thread { [self] in watch() }.start()
    }

    private func watch() {
        while true {
            Thread.sleep(forTimeInterval: 0.5)
            if let (at, kind) = started.withLock({ $0 }), uptime() - at > limit {
                FileHandle.standardError.write(
                    Data("agrigps-fuzz: HANG: a \(kind) case ran longer than \(limit) s\n".utf8))
                exit(3)
            }
        }
    }

    func begin(_ kind: String) { started.withLock { $0 = (uptime(), kind) } }
    func end() { started.withLock { $0 = nil } }
}

struct Campaign {
    var random: Random
    let reproducer: Reproducer
    let hangs = HangGuard(limit: 10)
    let directory: String
    var counts: [String: Int] = [:]
    var failures: [String] = []

    /// One finding: a refusal message that is not fit to print.
    mutating func checkPrintable(_ text: String, kind: String, secret: String? = nil) {
        if text.unicodeScalars.contains(where: { ($0.value < 0x20 && $0 != "\t") || (0x7F...0x9F).contains($0.value) })
        {
            failures.append("\(kind): a control character in \(TerminalText.safe(text, limit: 200))")
        }
        if let secret, !secret.isEmpty, text.contains(secret) {
            failures.append("\(kind): the secret in \(TerminalText.safe(text, limit: 200))")
        }
        if text.count > 2000 { failures.append("\(kind): a message of \(text.count) characters") }
    }

    mutating func outboxItem(store: OtherMachinesStore) async {
        var push = Agrirouter_Feed_Push_Notification_PushNotification()
        for index in 0..<(1 + random.below(3)) {
            var message = Agrirouter_Feed_Push_Notification_PushNotification.FeedMessage()
            message.header.messageID = random.chance(90) ? "m\(random.next())" : random.pick(Hostile.texts)
            message.header.senderID = random.chance(90) ? "peer-\(index)" : random.pick(Hostile.texts)
            message.header.sentTimestamp.seconds = random.pick(Hostile.int64s)
            (message.header.technicalMessageType, message.content.value) = Hostile.content(&random)
            push.messages.append(message)
        }
        var envelope = Agrirouter_Response_ResponseEnvelope()
        envelope.type = .pushNotification
        var wrapper = Agrirouter_Response_ResponsePayloadWrapper()
        wrapper.details.value = (try? push.serializedBytes()) ?? Data()
        var bytes = [UInt8](
            DelimitedFrames.join([
                (try? envelope.serializedBytes()) ?? Data(), (try? wrapper.serializedBytes()) ?? Data(),
            ]))
        if random.chance(60) { bytes = Mutate.bytes(bytes, &random) }
        reproducer.record("outbox", bytes)
        hangs.begin("outbox")
        defer { hangs.end() }
        counts["outbox items", default: 0] += 1
        guard let decoded = try? OutboxDecoder.decode(base64: Data(bytes).base64EncodedString()) else { return }
        do {
            let recorded = try await store.record(decoded.feedMessages, ownEndpointID: "me", receivedAt: Date())
            for reason in recorded.refused.values {
                checkPrintable(TerminalText.safe(reason, limit: 300), kind: "refusal")
            }
            let view = try await store.view()
            let listing = OthersListing(
                view: view, ownPosition: Coordinate(latitude: 52, longitude: 8), now: Date(), includeStale: true)
            for entry in listing.entries {
                _ = entry.distance.map(DistanceText.format(metres:))
                _ = entry.age.map(durationText)
                if let latitude = entry.machine.lastPosition?.latitude, !Bounds.latitude.contains(latitude) {
                    failures.append("outbox: stored latitude \(latitude)")
                }
            }
        } catch {
            failures.append("outbox: the store failed: \(error)")
        }
    }

    /// A TaskData's chunks in any order, twice, cut short, among chunks of hostile contexts whose
    /// numbers lie (counts, sizes, positions at the extremes). The joiner must never hold more
    /// contexts than its cap, never complete a join larger than it allows, and give the genuine
    /// TaskData back byte for byte unless it was given up for room, and never with a chunk missing.
    mutating func chunks() {
        var limits = ChunkJoiner.Limits()
        (limits.maximumChunkBytes, limits.maximumChunks, limits.maximumTotalBytes) = (64, 16, 1024)
        (limits.maximumContexts, limits.maximumHeldBytes) = (3, 2048)
        var joiner = ChunkJoiner(limits: limits)
        let original = Data((0..<(1 + random.below(1000))).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        let size = 1 + random.below(64)
        let count = (original.count + size - 1) / size
        var genuine = (0..<count).map { index in
            ChunkJoiner.Chunk(
                messageID: "g\(index)", senderID: "farm",
                position: ChunkPosition(
                    contextID: "genuine", current: Int64(index),
                    total: Int64(count), totalSize: Int64(original.count)),
                sentAt: nil, bytes: original.subdata(in: (index * size)..<min(original.count, (index + 1) * size)))
        }
        var deliveries = genuine + (random.chance(30) ? genuine.filter { _ in random.chance(30) } : [])
        let complete =
            count <= limits.maximumChunks && size <= limits.maximumChunkBytes
            && original.count <= limits.maximumTotalBytes
        let cutShort = random.chance(20) && !genuine.isEmpty
        if cutShort {
            genuine.remove(at: random.below(genuine.count))
            deliveries = genuine
        }
        for index in 0..<random.below(12) {
            var position = ChunkPosition(
                contextID: random.chance(80) ? "hostile\(random.below(5))" : random.pick(Hostile.texts),
                current: random.chance(50) ? Int64(random.below(17)) : random.pick(Hostile.int64s),
                total: random.chance(50) ? Int64(1 + random.below(16)) : random.pick(Hostile.int64s),
                totalSize: random.chance(50) ? Int64(random.below(1100)) : random.pick(Hostile.int64s))
            if random.chance(5) { position.contextID = "genuine" }  // a second sender reusing the context id
            let bytes = Data((0..<random.below(80)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
            deliveries.append(
                ChunkJoiner.Chunk(
                    messageID: "h\(index)", senderID: random.chance(90) ? "other" : "farm", position: position,
                    sentAt: nil, bytes: bytes))
        }
        for index in deliveries.indices.reversed() { deliveries.swapAt(index, random.below(index + 1)) }
        reproducer.record("chunks", Array(original))
        hangs.begin("chunks")
        defer { hangs.end() }
        counts["chunk sequences", default: 0] += 1
        var joined: [Data] = []
        var genuineTouched = false
        var now = Date(timeIntervalSince1970: 1_790_000_000)
        for chunk in deliveries {
            if chunk.senderID == "farm" && chunk.position.contextID == "genuine" && chunk.messageID.hasPrefix("h") {
                genuineTouched = true
            }
            now += Double(random.below(120))
            switch joiner.add(chunk, now: now) {
            case .complete(let whole):
                if whole.bytes.count > limits.maximumTotalBytes {
                    failures.append("chunks: a join of \(whole.bytes.count) bytes")
                }
                if whole.senderID == "farm" && whole.contextID == "genuine" { joined.append(whole.bytes) }
            case .refused(let dropped):
                checkPrintable(TerminalText.safe(dropped.reason, limit: 300), kind: "chunk refusal")
                if dropped.senderID == "farm" && dropped.contextID == "genuine" { genuineTouched = true }
            case .waiting, .duplicate: break
            }
            if joiner.takeEvicted().contains(where: { $0.senderID == "farm" && $0.contextID == "genuine" }) {
                genuineTouched = true
            }
            if joiner.pendingContexts > limits.maximumContexts {
                failures.append("chunks: \(joiner.pendingContexts) contexts held")
            }
        }
        guard complete, !genuineTouched, now.timeIntervalSince1970 - 1_790_000_000 < limits.lifetime else { return }
        if cutShort {
            if !joined.isEmpty { failures.append("chunks: a TaskData with a chunk missing was joined") }
        } else if joined.isEmpty || joined.contains(where: { $0 != original }) {
            // A chunk sent again after its TaskData was joined starts a new join here; the feed
            // reader knows the joined contexts and confirms such a chunk as a duplicate.
            failures.append(
                "chunks: the genuine TaskData of \(original.count) bytes in \(count) chunks was joined \(joined.count) times, not as sent"
            )
        }
    }

    mutating func onboardingAnswer(_ valid: [String: Any], secret: String) {
        var answer = valid
        let paths: [[String]] = [
            ["deviceAlternateId"], ["capabilityAlternateId"], ["sensorAlternateId"],
            ["connectionCriteria", "gatewayId"],
            ["connectionCriteria", "measures"], ["connectionCriteria", "commands"], ["authentication", "type"],
            ["authentication", "secret"], ["authentication", "certificate"],
        ]
        for _ in 0...random.below(2) {
            let path = random.pick(paths)
            let value: Any
            switch random.below(4) {
            case 0: value = random.pick(Hostile.texts)
            case 1: value = random.pick(Hostile.texts) + secret
            case 2: value = Int.random(in: -5...5)
            default:
                let current =
                    path.count == 1
                    ? answer[path[0]] as? String : (answer[path[0]] as? [String: Any])?[path[1]] as? String
                value = String(decoding: Mutate.bytes(Array((current ?? "").utf8), &random), as: UTF8.self)
            }
            if path.count == 1 {
                answer[path[0]] = value
            } else {
                var inner = answer[path[0]] as? [String: Any] ?? [:]
                inner[path[1]] = value
                answer[path[0]] = inner
            }
        }
        // The secret the refusal must not repeat is the one the answer carries (a mutation may have changed it).
        let carried = (answer["authentication"] as? [String: Any])?["secret"] as? String ?? ""
        let guarded = carried.count >= 8 ? carried : nil
        let body = (try? JSONSerialization.data(withJSONObject: answer)) ?? Data()
        reproducer.record("onboarding", Array(body))
        hangs.begin("onboarding")
        defer { hangs.end() }
        counts["onboarding answers", default: 0] += 1
        guard let decoded = try? JSONDecoder().decode(OnboardingResponse.self, from: body) else { return }
        do {
            _ = try decoded.check(
                for: .local(onboardingURL: "https://127.0.0.1:1/api/v1.0/registration/onboard", caCertificatePEM: ""))
        } catch {
            checkPrintable(error.description, kind: "onboarding", secret: guarded)
        }
    }

    mutating func configuration(_ example: [UInt8]) {
        let pieces = [
            "[[[", "\u{0}", "\u{1B}[2J", "\n", "=", "\"", "'''", "1e-10", "inf", "nan", "0x7fffffffffffffff",
            "[sampling]", "interval",
        ]
        var bytes = Mutate.bytes(example, &random)
        if random.chance(50) {
            bytes.insert(contentsOf: Array(random.pick(pieces).utf8), at: random.below(bytes.count + 1))
        }
        reproducer.record("configuration", bytes)
        hangs.begin("configuration")
        defer { hangs.end() }
        counts["configuration files", default: 0] += 1
        do {
            _ = try ConfigurationFile.parse(String(decoding: bytes, as: UTF8.self), path: "agrigps.conf")
        } catch {
            checkPrintable(error.description, kind: "configuration")
        }
    }

    mutating func heartbeat(_ example: [UInt8]) async {
        let numbers = ["1e300", "-1e300", "1e308", "NaN", "-0", "99999999999999999999", "\"x\"", "null", "[]"]
        var text = String(decoding: example, as: UTF8.self)
        if random.chance(60) {
            // Swap a number in the file for an extreme one.
            let digits = text.indices.filter { text[$0].isNumber }
            if let at = digits.isEmpty ? nil : digits[random.below(digits.count)] {
                text.replaceSubrange(at...at, with: random.pick(numbers))
            }
        }
        var bytes = Array(text.utf8)
        if random.chance(40) { bytes = Mutate.bytes(bytes, &random) }
        // Mostly sealed again with a digest that fits, as the daemon would write it, so that the
        // decoder sees the changed JSON rather than the digest check turning it away.
        if random.chance(75) { bytes = Heartbeat.sealed(Data(bytes.prefix { $0 != UInt8(ascii: "\n") })) }
        reproducer.record("heartbeat", bytes)
        hangs.begin("heartbeat")
        defer { hangs.end() }
        counts["heartbeat files", default: 0] += 1
        let path = directory + "/heartbeat.json"
        try? Data(bytes).write(to: URL(fileURLWithPath: path))
        let paths = StatusSnapshot.Paths(
            stateDirectory: directory, spool: directory + "/none.sqlite", others: directory + "/others.sqlite",
            heartbeat: path)
        let snapshot = await StatusSnapshot.gather(paths)
        for reason in snapshot.verdict(StatusThresholds()).reasons { checkPrintable(reason, kind: "status") }
    }
}

@main
struct Fuzz {
    static func main() async throws {
        var cases = 2000
        var seed = UInt64(UInt32(truncatingIfNeeded: Date().timeIntervalSince1970.bitPattern))
        var reproducerPath = FileManager.default.temporaryDirectory.appendingPathComponent("agrigps-fuzz-case").path
        var arguments = CommandLine.arguments.dropFirst().makeIterator()
        while let argument = arguments.next() {
            switch argument {
            case "--cases": cases = arguments.next().flatMap(Int.init).map { max(1, min($0, 10_000_000)) } ?? cases
            case "--seed": seed = arguments.next().flatMap { UInt64($0) } ?? seed
            case "--reproducer": reproducerPath = arguments.next() ?? reproducerPath
            default:
                FileHandle.standardError.write(
                    Data("usage: agrigps-fuzz [--cases N] [--seed S] [--reproducer PATH]\n".utf8))
                exit(64)
            }
        }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let example = Array((try? Data(contentsOf: root.appendingPathComponent("config/agrigps.conf"))) ?? Data())
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "agrigps-fuzz-\(UUID().uuidString)"
        ).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }

        // One real onboarding answer from the local agrirouter, to mutate.
        let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: ["FUZZ000001": "Fuzz"]))
        let client = OnboardingClient(
            environment: .local(onboardingURL: simulator.onboardingURL, caCertificatePEM: simulator.caCertificatePEM),
            settings: OnboardingSettings(applicationID: "app", certificationVersionID: "v"))
        let valid = try await client.onboard(tan: "FUZZ000001", externalID: "urn:agrigps:fuzz")
        await simulator.shutdown()
        var answer = try JSONSerialization.jsonObject(with: JSONEncoder().encode(valid)) as? [String: Any] ?? [:]
        // The local host stands in for agrirouter's in the URLs, so that the valid answer passes.
        answer["connectionCriteria"] = [
            "gatewayId": "3", "measures": "https://127.0.0.1:1/m/\(valid.deviceAlternateId)",
            "commands": "https://127.0.0.1:1/c/\(valid.deviceAlternateId)",
        ]
        var heartbeat = Heartbeat(pid: 1, onboarded: true)
        heartbeat.lastSample = Heartbeat.Sample(
            PositionSample(
                sampledAt: Date(), state: .fix(.threeD, .autonomous),
                report: PositionReport(time: Date(), gpsdMode: 3, gpsdStatus: 1, latitude: 52, longitude: 8),
                clockSkew: 120))
        heartbeat.lastError = "connection refused"
        heartbeat.lastErrorAt = Date()
        try heartbeat.write(to: directory + "/example-heartbeat.json")
        let heartbeatExample = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/example-heartbeat.json")))

        var campaign = Campaign(
            random: Random(seed: seed), reproducer: Reproducer(path: reproducerPath), directory: directory)
        let store = OtherMachinesStore(path: directory + "/others.sqlite")
        let started = Date()
        for index in 0..<cases {
            switch index % 5 {
            case 0: await campaign.outboxItem(store: store)
            case 1: campaign.onboardingAnswer(answer, secret: valid.authentication.secret)
            case 2: campaign.configuration(example)
            case 3: campaign.chunks()
            default: await campaign.heartbeat(heartbeatExample)
            }
        }
        let seconds = Date().timeIntervalSince(started)
        let summary = campaign.counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        print(
            String(
                format: "agrigps-fuzz: seed %llu, %d cases in %.1f s (%@): 0 crashes, 0 hangs, %d findings",
                seed, cases, seconds, summary, campaign.failures.count))
        for failure in campaign.failures.prefix(20) { print("  finding: \(failure)") }
        try? FileManager.default.removeItem(atPath: reproducerPath)
        exit(campaign.failures.isEmpty ? 0 : 1)
    }
}
