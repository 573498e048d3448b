import ArgumentParser
import Bounds
import CommandSupport
import Foundation
import GNSS
import ServiceLifecycle

struct Watch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print live samples from gpsd, one line each.",
        discussion: """
            Keeps running when gpsd is down or restarts: those intervals print as gpsd_unreachable. \
            A receiver that is unplugged or silent prints as no_receiver. Stop with Ctrl-C.
            """
    )

    @Option(help: ArgumentHelp("gpsd address.", valueName: "host:port"))
    var gpsd = "127.0.0.1:2947"

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Seconds per sample (1, 5, 10 or 20 are usual).", valueName: "seconds"))
    var interval = "1"

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp("Seconds without a report before the receiver counts as gone.", valueName: "seconds"))
    var silence = "5"

    @Flag(help: "Print JSON lines instead of text.")
    var json = false

    func validate() throws {
        _ = try GPSDAddress.parseOption(gpsd)
        _ = try IntervalOption.parse(interval)
        guard let seconds = Double(silence), Bounds.check(seconds, in: 0.1...3600) != nil else {
            throw ValidationError(
                "--silence must be a number of seconds from 0.1 to 3600, got '\(TerminalText.safe(silence, limit: 40))'"
            )
        }
    }

    func run() async throws {
        // A signal ends the watch as its end: exit 0, as the lines printed are all it is for.
        let watching = CommandJob { [self] in try await watch() }
        _ = try await ServiceGroup.runCommand(watching, label: "agrigps.watch")
    }

    private func watch() async throws {
        var configuration = GPSDSource.Configuration(address: try GPSDAddress.parseOption(gpsd))
        configuration.silenceThreshold = Double(silence) ?? 5
        let (events, relay) = AsyncStream.makeStream(of: SourceEvent.self)
        let source = GPSDSource(configuration: configuration).events()
        let sampler = Sampler(interval: try IntervalOption.parse(interval))
        let json = json
        let unresolvable = await cancelWhenGracefulShutdown {
            await withTaskGroup(of: GPSDError?.self) { group in
                // gpsd being down is a state to print; a name that does not resolve is a typo to report.
                group.addTask {
                    defer { relay.finish() }
                    for await event in source {
                        if case .unreachable(let error) = event, error.kind == .cannotResolve { return error }
                        relay.yield(event)
                    }
                    return nil
                }
                group.addTask {
                    for await sample in sampler.samples(from: events) {
                        Output.line(json ? sample.jsonLine(includeSampledAt: true) : sample.textLine)
                    }
                    return nil
                }
                var found: GPSDError?
                for await error in group where error != nil { found = error }
                return found
            }
        }
        if let unresolvable {
            throw CommandFailure(description: "\(unresolvable.description); check --gpsd", exitCode: 69)
        }
    }
}
