import Foundation
import PropertyBased
import StateDirectory
import StateView
import TestSupport
import Testing

@testable import CabView

@Suite("the model's JSON, written straight out")
struct CabModelJSONTests {
    @Test("for any model, the text is JSONEncoder's, byte for byte")
    func sameAsJSONEncoder() async {
        await propertyCheck(count: 500, input: Gen.int(in: 0...Int(Int32.max))) { seed in
            var random = SplitMix64(seed: UInt64(seed))
            let model = Self.model(&random)
            let written = model.json
            #expect(written == CabServer.encode(model), "seed \(seed)")
            #expect(written != "null")
        }
    }

    @Test("escapes: quotes, backslashes, control characters and a CR LF; slashes and the rest as they are")
    func escapes() throws {
        var random = SplitMix64(seed: 1)
        var model = Self.model(&random)
        model.health = "a\"b\\c/d\r\n\u{1}\u{7f}é\u{2028}😀"
        let written = model.json
        #expect(written.contains(#""health":"a\"b\\c/d\r\n\u0001\#u{7f}é\#u{2028}😀""#), "\(written)")
        #expect(written == CabServer.encode(model))
        let decoded = try JSONDecoder().decode(CabModel.self, from: Data(written.utf8))
        #expect(decoded == model)
    }

    @Test("a number JSON cannot hold is null in its field, where JSONEncoder gave up on the whole model")
    func nonFinite() throws {
        var random = SplitMix64(seed: 2)
        var model = Self.model(&random)
        model.staleAfterSeconds = .infinity
        let written = model.json
        #expect(written.contains(#""staleAfterSeconds":null"#))
        #expect(try JSONSerialization.jsonObject(with: Data(written.utf8)) is [String: Any])
    }

    // MARK: - Models

    static let pieces = [
        "", "a", "Nordacker", "\"", "\\", "/", "\n", "\r\n", "\t", "\u{0}", "\u{1f}", "\u{7f}", "é", "e\u{301}",
        "\u{2028}", "😀", "Ölmühle", " ", "{}", "null", "\u{8}\u{c}",
    ]

    static func text(_ random: inout SplitMix64) -> String {
        (0..<random.below(5)).map { _ in random.pick(pieces) }.joined()
    }

    static func number(_ random: inout SplitMix64) -> Double {
        let special: [Double] = [
            0, -0.0, 1, 92, 3600, 0.1, 1e-5, 1e16, 1e15, 1e21, 5e-324, .greatestFiniteMagnitude, -93.750558641,
            41.574970205,
        ]
        if random.chance(50) { return random.pick(special) }
        let bits = Double(bitPattern: random.next())
        return bits.isFinite ? bits : Double(random.below(1_000_000)) / 1000
    }

    static func optionalText(_ random: inout SplitMix64) -> String? { random.chance(30) ? nil : text(&random) }
    static func optionalNumber(_ random: inout SplitMix64) -> Double? { random.chance(30) ? nil : number(&random) }
    static func integer(_ random: inout SplitMix64) -> Int {
        random.chance(20) ? random.pick([Int.min, Int.max, 0, -1]) : random.below(100_000)
    }

    static func model(_ random: inout SplitMix64) -> CabModel {
        var sharing = try! JSONDecoder().decode(
            SharingIndicator.self, from: Data(#"{"state":"sharing","waiting":0,"text":""}"#.utf8))
        sharing.state = random.pick(SharingIndicator.State.allCases)
        sharing.waiting = integer(&random)
        sharing.text = text(&random)
        sharing.pausedSince = optionalText(&random)
        sharing.kept = random.chance(50) ? nil : integer(&random)
        sharing.since = optionalText(&random)
        let own =
            random.chance(20)
            ? nil
            : CabModel.Own(
                latitude: number(&random), longitude: number(&random), fix: text(&random), fixText: text(&random),
                old: random.chance(50),
                time: optionalText(&random), speed: optionalNumber(&random),
                satellites: random.chance(50) ? nil : integer(&random),
                hdop: optionalNumber(&random), heading: optionalNumber(&random))
        let others = (0..<random.below(4)).map { _ in
            CabModel.Other(
                id: text(&random), name: text(&random), latitude: optionalNumber(&random),
                longitude: optionalNumber(&random),
                positionTime: optionalText(&random), state: text(&random), fix: optionalText(&random),
                fixText: optionalText(&random),
                ageSeconds: optionalNumber(&random), age: text(&random), distance: optionalText(&random),
                distanceMetres: optionalNumber(&random), field: optionalText(&random), bearing: optionalNumber(&random),
                direction: optionalText(&random))
        }
        let settings = CabModel.Settings(
            onboarded: random.chance(50), environment: optionalText(&random), endpointName: optionalText(&random),
            certificateValidUntil: optionalText(&random),
            environments: (0..<random.below(3)).map { _ in text(&random) })
        return CabModel(
            takenAt: text(&random), health: text(&random), reasons: (0..<random.below(3)).map { _ in text(&random) },
            sharing: sharing, own: own, others: others, lastUpdate: optionalText(&random), settings: settings,
            staleAfterSeconds: number(&random), field: optionalText(&random), fieldsKnown: random.chance(50),
            fieldsVersion: integer(&random),
            work: CabModel.Work(
                state: optionalText(&random), switchOn: random.chance(30) ? nil : random.chance(50),
                switchCounts: random.chance(50), bus: random.chance(30) ? nil : bus(&random)))
    }

    static func bus(_ random: inout SplitMix64) -> Heartbeat.MachineStatus {
        Heartbeat.MachineStatus(
            work: text(&random), tractorECU: random.chance(30) ? nil : integer(&random),
            engine: random.chance(30) ? nil : integer(&random),
            signals: (0..<random.below(3)).map { _ in
                .init(
                    signal: text(&random), value: text(&random), source: integer(&random), ageSeconds: number(&random))
            },
            notHeard: (0..<random.below(3)).map { _ in text(&random) }, busProblem: optionalText(&random))
    }
}

@Suite("the guard's small parts")
struct GuardPartsTests {
    @Test("the session cookie among others, with spaces and tabs around pairs, and none when absent")
    func sessionCookie() {
        #expect(Guard.cookie(inHeaders: ["theme=dark; agrigps_session=abc=def;\tother=1"]) == "abc=def")
        #expect(Guard.cookie(inHeaders: ["a=1", " \tagrigps_session=xyz \t"]) == "xyz")
        #expect(Guard.cookie(inHeaders: ["agrigps_sessionx=1; xagrigps_session=2"]) == nil)
        #expect(Guard.cookie(inHeaders: ["agrigps_session"]) == nil)
        #expect(Guard.cookie(inHeaders: []) == nil)
    }

    @Test("a refusal's body is JSONEncoder's {\"error\": …}, escapes and all")
    func problemBody() {
        for message in ["log in first", "log in \"first\"\n/now", "", "é\u{1}\\"] {
            #expect(Guard.problemText(message) == CabServer.encode(["error": message]))
        }
    }
}
