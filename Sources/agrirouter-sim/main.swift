// agrirouter-sim: a local agrirouter for tests, demos and trying agrigps without an account.
//
//   agrirouter-sim [--tan TAN=NAME]... [--onboarding-port N] [--gateway-port N] [--ca-file PATH]
//
// Prints the onboarding URL, writes its CA certificate to --ca-file for clients to trust, and serves
// until SIGINT or SIGTERM. Lines on standard input do what a user would do in agrirouter's UI:
//
//   rename ENDPOINT-ID NEW NAME
//   delete ENDPOINT-ID
import AgrirouterSim
import Foundation

var tans: [String: String] = [:]
var onboardingPort = 0
var gatewayPort = 0
var caFile: String?
var arguments = CommandLine.arguments.dropFirst()
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("agrirouter-sim: error: \(message)\n".utf8))
    exit(64)
}
func port(_ text: String, _ flag: String) -> Int {
    guard let number = Int(text), (0...65535).contains(number) else { fail("\(flag): '\(text)' is not a port") }
    return number
}
while let flag = arguments.popFirst() {
    guard let value = arguments.popFirst() else { fail("\(flag) needs a value") }
    switch flag {
    case "--tan":
        let pair = value.split(separator: "=", maxSplits: 1).map(String.init)
        guard pair.count == 2, !pair[0].isEmpty, !pair[1].isEmpty else { fail("--tan takes TAN=NAME, got '\(value)'") }
        tans[pair[0]] = pair[1]
    case "--onboarding-port": onboardingPort = port(value, flag)
    case "--gateway-port": gatewayPort = port(value, flag)
    case "--ca-file": caFile = value
    default: fail("unknown option \(flag)")
    }
}
if tans.isEmpty { fail("give at least one --tan TAN=NAME") }

let simulator = try await AgrirouterSimulator.start(SimConfiguration(tans: tans), onboardingPort: onboardingPort, gatewayPort: gatewayPort)
if let caFile { try simulator.caCertificatePEM.write(toFile: caFile, atomically: true, encoding: .utf8) }
print("agrirouter-sim: onboarding at \(simulator.onboardingURL)")
fflush(nil)
// readLine blocks, so it gets a thread of its own rather than one of Swift concurrency's few.
Thread.detachNewThread {
    while let line = readLine() {
        let done = DispatchSemaphore(value: 0)
        Task {
            print(await control(line))
            fflush(nil)
            done.signal()
        }
        done.wait()
    }
}

func control(_ line: String) async -> String {
    let words = line.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
    switch (words.first, words.count) {
    case ("rename", 3...):
        let name = words.dropFirst(2).joined(separator: " ")
        return await simulator.rename(endpoint: words[1], to: name) ? "renamed \(words[1]) to \(name)" : "no endpoint \(words[1])"
    case ("delete", 2):
        return await simulator.delete(endpoint: words[1]) ? "deleted \(words[1])" : "no endpoint \(words[1])"
    default:
        return "commands: rename ENDPOINT-ID NEW NAME | delete ENDPOINT-ID"
    }
}

// Nothing needs cleaning up, so SIGINT and
// SIGTERM keep their default action and end the process.
while true { try await Task.sleep(for: .seconds(3600)) }
