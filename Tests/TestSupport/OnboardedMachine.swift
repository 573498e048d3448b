import AgrirouterSim
import AgrirouterWire
import Foundation

/// What went wrong setting up a machine or reading its expectations. TestSupport is shared with the
/// benchmarks, which are built as shipped (static Swift runtime, no Swift Testing): no `#require` here.
public struct OnboardedMachineError: Error, CustomStringConvertible {
    public let description: String
    public init(description: String) { self.description = description }
}

/// A simulator, and a state directory onboarded to it through `agrigps onboard`.
public struct OnboardedMachine: Sendable {
    public let simulator: AgrirouterSimulator
    /// Kept for the machine's life: the directory goes with it, or at `close`.
    private let scratch: TemporaryDirectory
    public let transport: String
    public var directory: String { scratch.path }
    public var state: String { directory + "/state" }

    /// `gatewayPort` 0 takes a free one.
    /// `outboxLifetime` shortens how long the local agrirouter keeps answers (give the daemon the same).
    /// `otherTANs` are registration codes for other endpoints of the same account, by TAN, with their names.
    public static func make(
        gatewayPort: Int = 0, transport: String = "rest", outboxLifetime: Double? = nil,
        otherTANs: [String: String] = [:]
    ) async throws -> OnboardedMachine {
        var configuration = SimConfiguration(tans: otherTANs.merging(["TANA123456": "Tractor"]) { $1 })
        configuration.mqtt = transport == "mqtt"
        if let outboxLifetime { configuration.outboxLifetime = outboxLifetime }
        let simulator = try await AgrirouterSimulator.start(configuration, gatewayPort: gatewayPort)
        let scratch = TemporaryDirectory("run")
        let directory = scratch.path
        try scratch.write("ca.pem", simulator.caCertificatePEM)
        let machine = OnboardedMachine(simulator: simulator, scratch: scratch, transport: transport)
        let onboarded = try await AgrigpsCommand.run([
            "onboard", "--tan", "TANA123456", "--env", "local", "--onboarding-url", simulator.onboardingURL,
            "--ca-file", directory + "/ca.pem", "--state-dir", machine.state,
            "--application-id", "app", "--certification-version-id", "v", "--transport", transport,
        ])
        guard onboarded.code == 0 else {
            throw OnboardedMachineError(description: "agrigps onboard exited \(onboarded.code): \(onboarded.stderr)")
        }
        return machine
    }

    public func close() async {
        await simulator.shutdown()
        scratch.remove()
    }

    public var endpointID: String {
        get throws {
            let data = try Data(contentsOf: URL(fileURLWithPath: state + "/endpoint.json"))
            let object = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            return ((object?["response"] as? [String: Any])?["deviceAlternateId"] as? String) ?? ""
        }
    }

    /// Every GPSEntry the simulator received from this machine, in order of arrival.
    public func received() async throws -> [GPSEntry] {
        try await simulator.sentMessages(endpoint: try endpointID)
            .filter { $0.envelope.technicalMessageType == TechnicalMessageType.gpsInfo }
            .flatMap { try Agrirouter_Technicalmessagetype_GPSList(serializedBytes: $0.payload).gpsEntries }
    }

    /// Every TimeLog `Time` the simulator received from this machine, in order of arrival.
    public func receivedTimes() async throws -> [Efdi_Time] {
        try await simulator.sentMessages(endpoint: try endpointID)
            .filter { $0.envelope.technicalMessageType == TechnicalMessageType.timeLog }
            .flatMap { try Efdi_TimeLog(serializedBytes: $0.payload).time }
    }
}

/// What `agrigps replay LOG --json` is expected to print, as the statuses and latitudes agrirouter should get.
public func expectedEntries(_ log: String) throws -> [(status: GPSEntry.PositionStatus, latitude: Double)] {
    let lines = try Fixtures.lines(of: Fixtures.nmeaDirectory.appendingPathComponent("\(log).samples.jsonl").path)
    let statuses: [String: GPSEntry.PositionStatus] = [
        "no_fix": .dNoGps, "fix_3d_autonomous": .dGnss, "fix_2d_autonomous": .dGnss, "fix_3d_dgps": .dDgnss,
        "fix_3d_rtk_fixed": .dRtkFinteger, "fix_3d_rtk_float": .dRtkFloat,
    ]
    return try lines.map { line in
        guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw OnboardedMachineError(description: "\(log).samples.jsonl: a line that is not a JSON object: \(line)")
        }
        guard let state = object["state"] as? String else {
            throw OnboardedMachineError(description: "\(log).samples.jsonl: a line without a state: \(line)")
        }
        guard let status = statuses[state] else { throw OnboardedMachineError(description: "state \(state)") }
        return (status, (object["lat"] as? Double) ?? 0)
    }
}
