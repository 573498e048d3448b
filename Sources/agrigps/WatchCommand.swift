import ArgumentParser
import Bounds
import CommandSupport
import Foundation
import GNSS

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
        var configuration = GPSDSource.Configuration(address: try GPSDAddress.parseOption(gpsd))
        configuration.silenceThreshold = Double(silence) ?? 5
        let (events, relay) = AsyncStream.makeStream(of: SourceEvent.self)
        let source = GPSDSource(configuration: configuration).events()
        // gpsd being down is a state to print; a name that does not resolve is a typo to report.
        let unresolvable = Task { () -> GPSDError? in
            for await event in source {
                if case .unreachable(let error) = event, error.kind == .cannotResolve {
                    relay.finish()
                    return error
                }
                relay.yield(event)
            }
            relay.finish()
            return nil
        }
        let sampler = Sampler(interval: try IntervalOption.parse(interval))
        let json = json
        let work = Task {
            for await sample in sampler.samples(from: events) {
                Output.line(json ? sample.jsonLine(includeSampledAt: true) : sample.textLine)
            }
        }
        let trap = await SignalTrap { _ in
            work.cancel()
            unresolvable.cancel()
        }
        await work.value
        _ = consume trap
        unresolvable.cancel()
        if let error = await unresolvable.value {
            throw CommandFailure(description: "\(error.description); check --gpsd", exitCode: 69)
        }
    }
}
