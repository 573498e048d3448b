import Foundation
import Machine
import NMEA2000
import TestSupport
import Testing

/// Every value agrigps reads from a tractor frame against cantools's reading of the same frame, with
/// a DBC written from the published layouts (`Peer/tractor.dbc`) and J1939's ranges applied by the
/// peer itself (`Peer/decode.py`). `script/bootstrap` installs cantools.
@Suite struct IndependentDecoderTests {
    typealias F = MachineFrames
    static let peerDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Peer"
    ).path
    static let python = Fixtures.root.appendingPathComponent(".build/test-peers/bin/python").path

    /// The peer's reading of each machine frame in `recording`, by line number.
    static func peer(_ recording: String) async throws -> [Int: (message: String, signals: [String: Any])] {
        try #require(
            FileManager.default.isExecutableFile(atPath: python), "no cantools for the tests: run script/bootstrap")
        let result = try await SystemTool.run(
            python, ["\(peerDirectory)/decode.py", "\(peerDirectory)/tractor.dbc", recording], timeout: 120)
        try #require(result.code == 0, "\(result.output.suffix(2_000))")
        var decoded: [Int: (String, [String: Any])] = [:]
        for line in result.output.split(separator: "\n") where line.hasPrefix("{") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let number = try #require(object["line"] as? Int)
            decoded[number] = (
                try #require(object["message"] as? String), try #require(object["signals"] as? [String: Any])
            )
        }
        return decoded
    }

    /// Compares agrigps's reading of each frame line with the peer's; returns how many were compared.
    static func compare(_ recording: String) async throws -> [String: Int] {
        let peer = try await peer(recording)
        var compared: [String: Int] = [:]
        for (index, line) in try Fixtures.lines(of: recording).enumerated() {
            guard let frame = CandumpLog(text: line).frames.first, let message = MachineMessage(frame) else {
                #expect(
                    peer[index + 1] == nil,
                    "line \(index + 1): the peer read a machine message agrigps did not: \(line)")
                continue
            }
            let theirs = try #require(peer[index + 1], "line \(index + 1): agrigps read \(message), the peer nothing")
            #expect(
                PeerReading(message) == PeerReading(name: theirs.message, theirs.signals), "line \(index + 1): \(line)")
            compared[theirs.message, default: 0] += 1
        }
        return compared
    }

    @Test("the John Deere 5055E recording: every engine, fuel, hours, PTO and ground speed frame reads the same")
    func realTractor() async throws {
        let compared = try await Self.compare(Fixtures.can("jd5055e-engine.log"))
        #expect(compared == ["EEC1": 1_530, "LFE1": 306, "HOURS": 9, "RPTO": 97, "FPTO": 97, "GBSD": 98])
    }

    @Test("built frames of every machine PGN, with every reserved value and random bytes, read the same")
    func builtAndRandomFrames() async throws {
        var generator = SplitMix64(seed: 54)
        var lines: [String] = []
        let specials: [[UInt8]] = [
            Array(repeating: 0xFF, count: 8), Array(repeating: 0, count: 8), Array(repeating: 0xFE, count: 8),
            Array(repeating: 0xFA, count: 8), Array(repeating: 0xFB, count: 8),
            [0xFF, 0xFA, 0xFF, 0xFA, 0xFF, 0xFA, 0xAA, 0x55],
        ]
        for pgn in MachinePGN.all {
            var payloads = specials
            for _ in 0..<200 { payloads.append((0..<8).map { _ in UInt8(truncatingIfNeeded: generator.next()) }) }
            for data in payloads {
                let frame = F.frame(pgn, from: UInt8(truncatingIfNeeded: generator.next() % 0xFD), data)
                lines.append(
                    String(format: "(1700000000.000000) can0 %08X#", frame.identifier)
                        + data.map { String(format: "%02X", $0) }.joined())
            }
        }
        let scratch = TemporaryDirectory("machine")
        let path = scratch.file("machine.log")
        try lines.joined(separator: "\n").appending("\n").write(toFile: path, atomically: true, encoding: .utf8)
        let compared = try await Self.compare(path)
        #expect(compared.count == MachinePGN.all.count && compared.values.allSatisfy { $0 == 206 }, "\(compared)")
    }
}

/// One message as plain values, the shape both readings are put in to be compared.
struct PeerReading: Equatable, CustomStringConvertible {
    var name: String
    var values: [String: String]

    var description: String { "\(name) \(values.sorted { $0.key < $1.key })" }

    init(_ message: MachineMessage) {
        switch message {
        case .wheelBasedSpeed(let speed), .groundBasedSpeed(let speed), .machineSelectedSpeed(let speed):
            switch message {
            case .wheelBasedSpeed: name = "WBSD"
            case .groundBasedSpeed: name = "GBSD"
            default: name = "MSS"
            }
            values = [
                "speed": Self.text(speed.speed), "distance": Self.text(speed.distance),
                "direction": Self.text(speed.direction.map { $0 == .forward }),
            ]
            if let key = speed.keyNotOff { values["key_switch"] = Self.text(key) }
            if let operations = speed.implementOperations { values["implement_operations"] = Self.text(operations) }
            if let source = speed.source {
                let sources: [SpeedSource] = [.wheelBased, .groundBased, .navigationBased, .blended, .simulated]
                values["source"] = Self.text(source.map { Double(sources.firstIndex(of: $0) ?? -1) })
            }
        case .rearHitch(let hitch), .frontHitch(let hitch):
            if case .rearHitch = message { name = "RHS" } else { name = "FHS" }
            values = ["position": Self.text(hitch.position), "in_work": Self.text(hitch.inWork)]
        case .rearPTO(let pto), .frontPTO(let pto):
            if case .rearPTO = message { name = "RPTO" } else { name = "FPTO" }
            values = ["shaft_speed": Self.text(pto.shaftSpeed), "engagement": Self.text(pto.engaged)]
        case .engineSpeed(let value): (name, values) = ("EEC1", ["engine_speed": Self.text(value)])
        case .engineHours(let value): (name, values) = ("HOURS", ["engine_hours": Self.text(value)])
        case .fuelRate(let value): (name, values) = ("LFE1", ["fuel_rate": Self.text(value)])
        case .fuelUsed(let value): (name, values) = ("LFC1", ["total_fuel": Self.text(value)])
        }
    }

    /// The peer's signals; those agrigps does not read (MSS's exit code and limit status) are left out.
    /// MSS's sources 5 and 6 are reserved: agrigps reads them as not available.
    init(name: String, _ signals: [String: Any]) {
        self.name = name
        values = [:]
        for (signal, value) in signals where !["exit_code", "limit_status"].contains(signal) {
            if let number = value as? Double {
                values[signal] = signal == "source" && number >= 5 ? "not available" : Self.number(number)
            } else {
                values[signal] = "\(value)"
            }
        }
    }

    static func text(_ measured: Measured<Double>) -> String {
        switch measured {
        case .value(let value): return number(value)
        case .error: return "error"
        case .notAvailable: return "not available"
        }
    }

    static func text(_ measured: Measured<Bool>) -> String { text(measured.map { $0 ? 1 : 0 }) }

    /// Six significant decimals: both sides scale the same raw integer, by different code.
    static func number(_ value: Double) -> String { String(format: "%.6f", value) }
}
