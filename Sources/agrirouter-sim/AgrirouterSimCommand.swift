// agrirouter-sim: a local agrirouter for tests, demos and trying agrigps without an account.
import AgrirouterSim
import ArgumentParser
import BlockingWork
import CommandSupport
import Foundation
import Logging
import ServiceLifecycle

@main
struct AgrirouterSimCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agrirouter-sim",
        abstract: "A local agrirouter for tests, demos and trying agrigps without an account.",
        discussion: """
            Speaks agrirouter's REST interface over TLS with client certificates. Prints the \
            onboarding URL, writes its CA certificate to --ca-file for clients to trust, and serves \
            until SIGINT or SIGTERM.

            Lines on standard input do what a user would do in agrirouter's UI:
              rename ENDPOINT-ID NEW NAME
              delete ENDPOINT-ID
            """
    )

    @Option(
        name: .customLong("tan"),
        help: ArgumentHelp(
            "A TAN it accepts and the name of the endpoint it onboards (repeatable).",
            valueName: "TAN=NAME"))
    var tans: [String] = []

    @Option(help: ArgumentHelp("Port for onboarding (default: a free one).", valueName: "port"))
    var onboardingPort: Int?

    @Option(help: ArgumentHelp("Port for the endpoints' REST interface (default: a free one).", valueName: "port"))
    var gatewayPort: Int?

    @Option(help: ArgumentHelp("Where to write the CA certificate clients must trust.", valueName: "path"))
    var caFile: String?

    @Option(
        help: ArgumentHelp(
            "The address clients reach it at, when not 127.0.0.1 (a virtual machine's guest reaches the host at 10.0.2.2): put in the URLs it hands out and in its server certificate. It still listens on 127.0.0.1 only.",
            valueName: "address"))
    var advertisedHost: String?

    @Option(
        help: ArgumentHelp(
            "Write one JSON line per gps:info, device description and TimeLog it accepts to this file (started anew): sender, message id, format, and each entry's or Time's time (ms), position status and position, or the description's designator.",
            valueName: "path"))
    var received: String?

    @Option(
        help: ArgumentHelp(
            "With --received, also keep each accepted payload in this directory as raw protobuf, numbered in order (0001-device_description.pb, 0002-time_log.pb, ...), for protoc --decode.",
            valueName: "directory"))
    var payloads: String?

    @Flag(
        help:
            "Also run Debian's mosquitto as an MQTT broker (TLS with client certificates and a per-endpoint ACL), so that endpoints can onboard with --transport mqtt."
    )
    var mqtt = false

    func validate() throws {
        if tans.isEmpty { throw ValidationError("give at least one --tan TAN=NAME") }
        // The value is not echoed: it holds a TAN.
        for tan in tans where Self.pair(tan) == nil {
            throw ValidationError("--tan takes TAN=NAME: the TAN, '=', then the name of the endpoint it onboards")
        }
        for (flag, port) in [("--onboarding-port", onboardingPort), ("--gateway-port", gatewayPort)] {
            if let port, !(0...65535).contains(port) {
                throw ValidationError("\(flag): \(port) is not a port (0 to 65535; 0 picks a free one)")
            }
        }
        if payloads != nil, received == nil { throw ValidationError("--payloads needs --received: give both") }
        if let host = advertisedHost, !Self.isHostName(host) {
            throw ValidationError(
                "--advertised-host: '\(host)' is not an IPv4 address or a host name (letters, digits, '-' and '.')")
        }
    }

    private static func pair(_ text: String) -> (tan: String, name: String)? {
        let pair = text.split(separator: "=", maxSplits: 1).map(String.init)
        guard pair.count == 2, !pair[0].isEmpty, !pair[1].isEmpty else { return nil }
        return (pair[0], pair[1])
    }

    /// A name that can go into a URL and a certificate as it is.
    static func isHostName(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 253 && !text.hasPrefix("-") && !text.hasPrefix(".")
            && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == ".") }
    }

    func run() async throws {
        var configuration = SimConfiguration(tans: Dictionary(tans.compactMap(Self.pair), uniquingKeysWith: { $1 }))
        if let received {
            guard let log = ReceivedLog(path: received, payloadDirectory: payloads) else {
                throw ValidationError(
                    "--received: cannot write \(received)" + (payloads.map { " or the directory \($0)" } ?? "")
                        + "; give paths that can be written")
            }
            configuration.onAcceptedGPSInfo = log.record
            configuration.onAcceptedEFDI = log.recordEFDI
        }
        configuration.mqtt = mqtt
        let simulator = try await AgrirouterSimulator.start(
            configuration, advertisedHost: advertisedHost,
            onboardingPort: onboardingPort ?? 0, gatewayPort: gatewayPort ?? 0)
        if let caFile { try simulator.caCertificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8) }
        print("agrirouter-sim: onboarding at \(simulator.onboardingURL)")
        if let port = simulator.brokerPort { print("agrirouter-sim: MQTT broker on port \(port)") }
        fflush(nil)
        // readLine blocks, so it gets a thread of its own rather than one of Swift concurrency's few.
        let controlled = startThread(named: "sim.control") {
            while let line = readLine() {
                let done = DispatchSemaphore(value: 0)
                Task {
                    print(await control(line, simulator: simulator))
                    fflush(nil)
                    done.signal()
                }
                done.wait()
            }
        }
        guard controlled else {
            await simulator.shutdown()
            FileHandle.standardError.write(
                Data("agrirouter-sim: no thread could be started to read commands from stdin\n".utf8))
            throw ExitCode(71)  // EX_OSERR
        }
        // It serves until SIGINT or SIGTERM; the group then stops the servers and the broker (a
        // child process, whose keys go with it), and the simulator exits with 128 + the signal.
        let signals = SignalWatch()
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: SimulatorService(simulator: simulator)),
                    signals.configuration,
                ],
                logger: Logger(label: "agrirouter-sim")))
        try await group.run()
        if let code = signals.exitCode { throw ExitCode(code) }
    }
}

/// The simulator's servers, stopped at the group's graceful shutdown.
struct SimulatorService: Service {
    let simulator: AgrirouterSimulator

    func run() async {
        try? await gracefulShutdown()
        await simulator.shutdown()
    }
}

func control(_ line: String, simulator: AgrirouterSimulator) async -> String {
    let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
    switch (words.first, words.count) {
    case ("rename", 3...):
        let name = words.dropFirst(2).joined(separator: " ")
        return await simulator.rename(endpoint: words[1], to: name)
            ? "renamed \(words[1]) to \(name)" : "no endpoint \(words[1])"
    case ("delete", 2):
        return await simulator.delete(endpoint: words[1]) ? "deleted \(words[1])" : "no endpoint \(words[1])"
    case ("restart-broker", 1...2):
        guard let seconds = words.count == 2 ? Double(words[1]) : 0, (0...3600).contains(seconds) else {
            return "restart-broker [SECONDS 0-3600]"
        }
        do {
            try await simulator.restartBroker(after: seconds)
            return "broker restarted"
        } catch {
            return "\(error)"
        }
    case ("take-over", 3):
        guard let seconds = Double(words[2]), (0...3600).contains(seconds) else {
            return "take-over CLIENT-ID SECONDS (0-3600)"
        }
        await simulator.takeOverClientID(words[1], for: seconds)
        return "took over \(words[1]) for \(Int(seconds)) s"
    default:
        return
            "commands: rename ENDPOINT-ID NEW NAME | delete ENDPOINT-ID | restart-broker [SECONDS] | take-over CLIENT-ID SECONDS"
    }
}
