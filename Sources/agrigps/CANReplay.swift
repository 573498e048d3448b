import CANBus
import CommandSupport
import Foundation
import GPSDReplay
import NMEA2000

/// A candump recording replayed as a receiver on a CAN bus: written onto a virtual interface that a
/// private gpsd reads, with the bus listener beside it, as the daemon has for `nmea2000://` sources.
struct CANReplay {
    let gpsd: ReplayGPSD
    let bus: BusWatcher
    let feed: CANReplayFeed

    /// Whether the file starts as a candump recording (`-l`'s form or the older `<0x…>` one). Only
    /// a regular file is looked into: a FIFO's open would wait for a writer for ever.
    static func isCandump(_ path: String) -> Bool {
        CandumpFile.startsAsCandump(path)
    }

    /// The most frames a replay takes: over an hour at 250 a second, about 80 MB kept. Beyond it
    /// a recording is refused with how to cut it, instead of being held whole.
    static let mostFrames = 1_000_000

    static func start(_ path: String, interface: String, realTime: Bool) async throws -> CANReplay {
        let (log, problem) = try readRecording(path)
        if let problem { Output.warning(problem) }
        let feed: CANReplayFeed
        let gpsd: ReplayGPSD
        do {
            feed = try CANReplayFeed(log: log, interface: interface, realTime: realTime)
            gpsd = try await ReplayGPSD.start(feed: { feed })
        } catch {
            throw CommandFailure(description: Self.explain(error, interface: interface), exitCode: error.exitCode)
        }
        let bus = BusWatcher(interface: interface, address: nil)
        guard bus.start() else {
            await gpsd.finish()
            throw CommandFailure(description: "no thread could be started to listen to \(interface)", exitCode: 71)
        }
        return CANReplay(gpsd: gpsd, bus: bus, feed: feed)
    }

    /// The stream of the replay, with the bus's word on each report.
    func stream() -> ReplayStream {
        gpsd.stream(adjust: { [bus] in bus.adjust($0) }, standIn: { [bus] in bus.standIn() })
    }

    func finish() async {
        bus.stop()
        await gpsd.finish()
    }

    /// A candump recording read by agrigps itself, with no interface and no gpsd (`BusReplay`): its
    /// events, and the bus listener they go through.
    static func withoutInterface(_ path: String, address: UInt8? = nil, realTime: Bool) throws(CommandFailure) -> (
        stream: ReplayStream, bus: BusWatcher
    ) {
        let (log, problem) = try readRecording(path)
        if let problem { Output.warning(problem) }
        let bus = BusWatcher(interface: "recording", address: address, withoutGPSD: true)
        return (BusReplay.stream(log, into: bus, realTime: realTime), bus)
    }

    /// A candump recording read for a replay, its frames kept, and a line on the lines in it that
    /// are no frames, if any.
    static func readRecording(_ path: String) throws(CommandFailure) -> (CandumpLog, problem: String?) {
        do {
            let log = try CandumpFile.read(path, keeping: .atMost(mostFrames))
            return (log, problem(in: log, path: path))
        } catch {
            throw CommandFailure(error)
        }
    }

    /// "N lines not read (line 3: why)", or nil when every line was read.
    static func problem(in log: CandumpLog, path: String) -> String? {
        guard log.unreadableLines > 0 else { return nil }
        return
            "\(path): \(log.unreadableLines) line\(log.unreadableLines == 1 ? "" : "s") not read (\(log.firstProblem ?? ""))"
    }

    /// A missing virtual interface gets the commands that make one.
    static func explain(_ error: ReplayError, interface: String) -> String {
        guard case .bus(let reason) = error else { return error.description }
        if reason == CANBusError.noInterface(interface).description {
            return "there is no interface \(interface) to replay a candump recording onto; make a virtual one: "
                + "sudo modprobe vcan && sudo ip link add \(interface) type vcan && sudo ip link set \(interface) up"
        }
        if reason == CANBusError.noSocketCAN.description {
            return "this kernel offers no SocketCAN, so a candump recording cannot be replayed here (an NMEA log can); "
                + "replay it on a Linux with the can and vcan modules"
        }
        return reason
    }
}

extension CandumpFileError: HasExitCode {}
