import AgrirouterSim
import Foundation
import Synchronization
import TestSupport
import Testing

/// Which rewrite the simulator applies to its next onboarding answers; none at first.
private final class AnswerRewrite: Sendable {
    private let current = Mutex<(@Sendable ([String: Any]) -> Any)?>(nil)

    func set(_ rewrite: (@Sendable ([String: Any]) -> Any)?) { current.withLock { $0 = rewrite } }

    func apply(_ body: Data) -> Data {
        guard let rewrite = current.withLock({ $0 }),
            let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any]
        else { return body }
        let changed = rewrite(object)
        if let raw = changed as? Data { return raw }
        return (try? JSONSerialization.data(withJSONObject: changed)) ?? body
    }
}

@Suite(.serialized, .timeLimit(.minutes(3)))
struct HostileOnboardingTests {
    /// Each answer is refused with a one-line reason, and the working credential stays as it was.
    static let cases: [(name: String, expected: String, rewrite: @Sendable ([String: Any]) -> Any)] = [
        (
            "a secret that does not open the key", "the secret does not open the private key",
            { answer in
                answer.editing("authentication") { $0["secret"] = "NotTheSecret1234" }
            }
        ),
        (
            "a garbage certificate after a valid key block", "not a readable X.509 certificate",
            { answer in
                answer.editing("authentication") { auth in
                    let pem = auth["certificate"] as? String ?? ""
                    let key = pem.components(separatedBy: "-----BEGIN CERTIFICATE-----")[0]
                    auth["certificate"] = key + "-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n"
                }
            }
        ),
        (
            "a file:// measures URL", "is not a plain https URL",
            { answer in
                answer.editing("connectionCriteria") { $0["measures"] = "file:///etc/passwd" }
            }
        ),
        (
            "an http:// commands URL", "is not a plain https URL",
            { answer in
                answer.editing("connectionCriteria") {
                    $0["commands"] = ($0["commands"] as? String ?? "").replacingOccurrences(of: "https:", with: "http:")
                }
            }
        ),
        (
            "an empty measures URL", "is not a plain https URL",
            { answer in
                answer.editing("connectionCriteria") { $0["measures"] = "" }
            }
        ),
        (
            "a commands URL on another host", "is not on the local agrirouter's host",
            { answer in
                answer.editing("connectionCriteria") { criteria in
                    let id = (criteria["commands"] as? String ?? "").split(separator: "/").last.map(String.init) ?? ""
                    criteria["commands"] = "https://attacker.example/iot/gateway/rest/commands/\(id)"
                }
            }
        ),
        (
            "a device id with ESC and a newline", "deviceAlternateId",
            { answer in
                var changed = answer
                changed["deviceAlternateId"] = "evil\u{1B}[2J\nid"
                return changed
            }
        ),
        (
            "MQTT's gateway id", "answered for MQTT, not the REST asked for",
            { answer in
                answer.editing("connectionCriteria") { $0["gatewayId"] = "2" }
            }
        ),
        (
            "an answer of 2 MiB", "larger than 1 MiB",
            { _ in
                Data(("{\"pad\":\"" + String(repeating: "x", count: 2 * 1_048_576) + "\"}").utf8)
            }
        ),
    ]

    @Test("hostile onboarding answers are refused in one line, and the working credential stays untouched")
    func refusals() async throws {
        let rewrite = AnswerRewrite()
        var tans = ["TANOK00000": "Tractor"]
        for index in Self.cases.indices { tans["TANBAD\(String(format: "%04d", index))"] = "Tractor" }
        var configuration = SimConfiguration(tans: tans)
        configuration.rewriteOnboardingAnswer = { rewrite.apply($0) }
        let simulator = try await AgrirouterSimulator.start(configuration)
        try await tearingDown({ await simulator.shutdown() }) {
            let onboarding = try LocalOnboarding(simulator, name: "hostile-onboard")
            defer { onboarding.remove() }
            let (state, local) = (onboarding.state, onboarding.local)

            let first = try await AgrigpsCommand.run(["onboard", "--tan", "TANOK00000"] + local)
            #expect(first.code == 0, "\(first.stderr)")
            let stored = try ["endpoint.json", "endpoint.secret"].map {
                try Data(contentsOf: URL(fileURLWithPath: state + "/" + $0))
            }

            for (index, hostile) in Self.cases.enumerated() {
                rewrite.set(hostile.rewrite)
                let result = try await AgrigpsCommand.run(
                    ["onboard", "--tan", "TANBAD\(String(format: "%04d", index))"] + local)
                #expect(result.code == 69, "\(hostile.name): exit \(String(describing: result.code))")
                #expect(
                    result.stderr.count == 1 && result.stderr.first?.contains(hostile.expected) == true,
                    "\(hostile.name): \(result.stderr)")
                #expect(
                    !(result.stdout + result.stderr).joined().unicodeScalars.contains { $0.value == 0x1B },
                    "\(hostile.name)")
                let now = try ["endpoint.json", "endpoint.secret"].map {
                    try Data(contentsOf: URL(fileURLWithPath: state + "/" + $0))
                }
                #expect(now == stored, "\(hostile.name) replaced the working credential")
            }
        }
    }
}

private extension Dictionary where Key == String, Value == Any {
    /// A copy with the nested object at `key` changed by `change`.
    func editing(_ key: String, _ change: (inout [String: Any]) -> Void) -> [String: Any] {
        var copy = self
        var inner = self[key] as? [String: Any] ?? [:]
        change(&inner)
        copy[key] = inner
        return copy
    }
}
