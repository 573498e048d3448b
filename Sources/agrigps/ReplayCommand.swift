import ArgumentParser
import CANBus
import CommandSupport
import Foundation
import GNSS
import GPSDReplay
import ServiceLifecycle

struct Replay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Replay a recorded NMEA log, or a candump recording of a CAN bus, through a private gpsd and print the samples.",
        discussion: """
            Starts gpsd on a free loopback port (never the system gpsd's 2947), feeds it the log \
            over TCP, prints what agrigps makes of it, and exits 0 at the end of the log.

            A candump recording (candump -l) is written onto a virtual CAN interface (--can, \
            vcan0 by default: sudo ip link add vcan0 type vcan && sudo ip link set vcan0 up), which \
            gpsd reads as nmea2000://vcan0 and agrigps listens to beside it, as for a receiver on \
            the bus: 250 frames a second, or the recorded pace with --real-time. Without --can and \
            without vcan0, agrigps reads the recording itself, without gpsd: the \
            receiver's fixes from its PGN 129029, with 129026's speed and course (1,000 frames a \
            second, or the recorded pace).

            While the receiver has a fix, intervals are measured in receiver time, so a fast \
            replay gives the samples of a real-time drive.
            """
    )

    @Argument(help: ArgumentHelp("The recorded NMEA log, or candump recording.", valueName: "log"))
    var log: String

    @Option(
        name: .customLong("can"), parsing: .unconditional,
        help: ArgumentHelp(
            "The virtual CAN interface a candump recording is replayed onto (default vcan0).", valueName: "interface"))
    var canInterface: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds per sample (default 1).", valueName: "seconds"))
    var interval: String?

    @Flag(name: .customLong("every-report"), help: "Print every gpsd TPV report instead of sampling.")
    var everyReport = false

    @Flag(help: "Print JSON lines instead of text.")
    var json = false

    @Flag(name: .customLong("real-time"), help: "Feed the log at the pace it was recorded.")
    var realTime = false

    func validate() throws {
        if let canInterface, !ReceiverSource.isInterfaceName(canInterface) {
            throw ValidationError("--can: " + ReceiverSource.notAnInterfaceName(canInterface))
        }
        if let interval {
            guard !everyReport else { throw ValidationError("--interval and --every-report exclude each other") }
            _ = try IntervalOption.parse(interval)
        }
    }

    func run() async throws {
        // A signal shuts the group down: the replay's gpsd (or the recording's reader) stops, which
        // ends the stream, and the signal decides the exit code.
        let replaying = CommandJob { [self] in try await replay() }
        let signals = try await ServiceGroup.runCommand(replaying, label: "agrigps.replay")
        if let code = signals.exitCode { throw ExitCode(code) }
    }

    private func replay() async throws {
        let gpsd: ReplayGPSD
        var bus: CANReplay?
        let interface = canInterface ?? "vcan0"
        // vcan0, the default, missing: the recording is read here. An interface named with --can
        // and missing is an error that says how to make it.
        if CANReplay.isCandump(log), canInterface == nil, !BusReplay.interfaceExists(interface) {
            let stream = try CANReplay.withoutInterface(log, realTime: realTime).stream
            _ = try await withGracefulShutdownHandler {
                try await show(stream)
            } onGracefulShutdown: {
                stream.ending.cancel()
            }
            return
        }
        if CANReplay.isCandump(log) {
            let replay = try await CANReplay.start(log, interface: interface, realTime: realTime)
            (gpsd, bus) = (replay.gpsd, replay)
        } else {
            do {
                let nmea = try NMEALog(contentsOf: log)
                if let replaced = nmea.replacedBytes { Output.warning(Self.warning(log: log, replaced: replaced)) }
                var options = ReplayGPSD.Options()
                options.realTime = realTime
                gpsd = try await ReplayGPSD.start(log: nmea, options: options)
            } catch {
                throw CommandFailure(error)
            }
        }
        let ending = try await withGracefulShutdownHandler {
            try await show(bus?.stream() ?? gpsd.stream())
        } onGracefulShutdown: {
            gpsd.stop()
        }
        if let bus { await bus.finish() } else { await gpsd.finish() }
        guard !Task.isShuttingDownGracefully else { return }  // stopped by a signal, not ended early
        if case .failed(let reason) = ending {
            throw CommandFailure(description: "replay of \(log) ended early: \(reason)", exitCode: 70)
        }
        if let failure = bus?.feed.failure {
            throw CommandFailure(description: "replay of \(log) ended early: \(failure)", exitCode: 70)
        }
    }

    /// The replay goes on, but whoever reads its output should know the log is damaged, and where.
    static func warning(log: String, replaced: NMEALog.ReplacedBytes) -> String {
        let what = replaced.count == 1 ? "1 byte that is not" : "\(replaced.count) bytes that are not"
        return "\(log): \(what) NMEA text (first at byte \(replaced.firstOffset)) fed to gpsd as NUL"
    }

    /// Streams the replay to stdout and says whether gpsd reached the end of the log.
    private func show(_ replay: ReplayStream) async throws -> ReplayEnding {
        let json = json
        if everyReport {
            for await report in replay.reports() {
                Output.line(json ? report.jsonLine : report.textLine)
            }
        } else {
            for await sample in replay.samples(interval: try interval.map(IntervalOption.parse) ?? 1) {
                Output.line(json ? sample.jsonLine(includeSampledAt: false) : sample.textLine)
            }
        }
        return await replay.ending.value
    }
}

extension ReplayError: HasExitCode {}
