import ArgumentParser
import CANBus
import CommandSupport
import Foundation
import JSONText
import Machine
import NMEA2000

struct Bus: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Listen to a CAN bus (NMEA 2000 / ISOBUS): which sender is the GNSS receiver, and what the machine broadcasts.",
        discussion: """
            Reads the interface for a few seconds, or a recording made with candump -l, and lists \
            every sender of positions (PGN 129029 or 129025) with what it sends, its maker where its \
            address claim names it, and which one agrigps would read. Nothing is sent on the bus.

            Then the machine's own broadcasts (ISO 11783-7, SAE J1939-71): speeds, rear and front \
            hitch, rear and front PTO, engine speed and hours, fuel rate and fuel used, each with \
            its newest value, its sender, how long before the end it came, and who else sent it; \
            the tractor ECU's and the engine controller's addresses where their address claims \
            say so; and the signals not heard. "not available" and "error" are what the sender \
            said, never 0.

            gpsd reads an NMEA 2000 receiver as nmea2000://IFACE:ADDRESS. Without the address it \
            takes the first sender it hears, rarely the receiver on a tractor's bus. A receiver that \
            sends no 129539 has no fix mode in gpsd 3.22, and one that sends no 129029 has no fix \
            quality; both are said.

            A recording is read line by line, of any length; a line longer than 300 characters is \
            skipped and counted. A FIFO or a device is refused, and so is a file with no CAN frame in \
            its first 1000 lines or 1 MiB.

            Exit status: 0 with a receiver found, 1 without, 69 when the interface cannot be read, \
            66 when the recording cannot be read, 65 when it is not one.
            """
    )

    @Argument(help: ArgumentHelp("The CAN interface, such as can0.", valueName: "interface"))
    var interface: String?

    @Option(
        help: ArgumentHelp(
            "Read a candump recording (candump -l, or the older <0xID> [n] form) instead.", valueName: "log"))
    var file: String?

    @Option(
        parsing: .unconditional, help: ArgumentHelp("Seconds to listen (1 to 60, default 5).", valueName: "seconds"))
    var seconds: String?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        guard (interface == nil) != (file == nil) else {
            throw ValidationError("give a CAN interface or --file LOG, one of them")
        }
        if let interface {
            do { try SocketCANReader.checkName(interface) } catch { throw ValidationError(error.description) }
        }
        _ = try listenSeconds()
    }

    private func listenSeconds() throws -> Double {
        guard let seconds else { return 5 }
        guard let value = Double(seconds), value.isFinite, (1...60).contains(value) else {
            throw ValidationError("--seconds must be a number from 1 to 60, got '\(seconds)'")
        }
        return value
    }

    func run() async throws {
        var heard = BusScan.Heard()
        var problem: String?
        if let file {
            // Each frame straight to the finder and the machine's listener, none kept: a day's
            // recording is a gigabyte. Times are the recording's own.
            var count = 0.0
            do {
                let log = try CandumpFile.read(file, keeping: .none) { frame in
                    count += 1
                    heard.add(frame, at: frame.time ?? count)
                }
                problem = CANReplay.problem(in: log, path: file)
            } catch {
                throw CommandFailure(error)
            }
        } else if let interface {
            let seconds = try listenSeconds()
            do throws(CANBusError) {
                heard = try await BusScan.listen(to: interface, for: seconds)
            } catch {
                throw CommandFailure(description: error.description, exitCode: 69)
            }
        } else {
            throw ValidationError("give a CAN interface or --file LOG")
        }
        if let problem { Output.warning(problem) }
        let report = BusReport(heard, interface: interface)
        Output.line(json ? try report.json() : report.text)
        if heard.finder.chosen == nil { throw ExitCode(1) }
    }
}

/// What `agrigps bus` prints: the senders of positions, the chosen one first.
struct BusReport: Encodable {
    struct Receiver: Encodable {
        var address: Int
        var manufacturer: String?
        var manufacturer_code: Int?
        var frames: Int
        var position_data: Int
        var position_rapid: Int
        var dops: Int
        var method: String?
        var latitude: Double?
        var longitude: Double?
        var missing: [String]
    }

    /// The machine's own broadcasts, each signal's newest reading.
    struct Machine: Encodable {
        struct Signal: Encodable {
            var signal: String
            var value: String
            var source: Int
            /// Seconds before the last frame heard.
            var age_seconds: Double
            var also_sent_by: [Int]
        }

        var tractor_ecu: Int?
        var engine: Int?
        var signals: [Signal]
        var not_heard: [String]
    }

    var interface: String?
    var frames: Int
    var senders: [Int]
    var receivers: [Receiver]
    var chosen: Int?
    var source: String?
    var summary: String
    var machine: Machine

    init(_ heard: BusScan.Heard, interface: String?) {
        let finder = heard.finder
        let snapshot = heard.machine.snapshot(at: heard.lastTime ?? 0, ignoringAge: true)
        machine = Machine(
            tractor_ecu: snapshot.tractorECU.map(Int.init), engine: snapshot.engine.map(Int.init),
            signals: snapshot.heard.map { signal, seen in
                Machine.Signal(
                    signal: signal.rawValue, value: seen.message.text, source: Int(seen.source),
                    age_seconds: (seen.age * 10).rounded() / 10, also_sent_by: seen.alsoSentBy.map(Int.init))
            },
            not_heard: snapshot.notHeard.map(\.rawValue))
        self.interface = interface
        frames = finder.frames
        senders = finder.senders.keys.sorted().map(Int.init)
        receivers = finder.receivers.map { sender in
            Receiver(
                address: Int(sender.address), manufacturer: sender.name?.manufacturer,
                manufacturer_code: sender.name?.manufacturerCode,
                frames: sender.frames, position_data: sender.positionData, position_rapid: sender.positionRapid,
                dops: sender.dops,
                method: sender.lastPositionData.map { Self.words($0.method) }, latitude: sender.lastPosition?.latitude,
                longitude: sender.lastPosition?.longitude, missing: sender.missing)
        }
        chosen = finder.chosen.map { Int($0.address) }
        if let interface, let chosen { source = "nmea2000://\(interface):\(chosen)" }
        summary = finder.summary
    }

    static func words(_ method: GNSSPositionData.Method) -> String {
        switch method {
        case .noGNSS: return "no GNSS"
        case .gnss: return "GNSS fix"
        case .dgnss: return "DGNSS fix"
        case .preciseGNSS: return "precise GNSS"
        case .rtkFixed: return "RTK fixed"
        case .rtkFloat: return "RTK float"
        case .deadReckoning: return "dead reckoning"
        case .manual: return "manual input"
        case .simulated: return "simulated"
        case .error: return "error"
        case .notAvailable: return "not available"
        }
    }

    var text: String {
        var lines = [
            "\(interface.map { "Bus \($0)" } ?? "Recording"): \(frames) frame\(frames == 1 ? "" : "s") from \(senders.count) sender\(senders.count == 1 ? "" : "s")."
        ]
        lines.append(summary + ".")
        for receiver in receivers {
            var line = "  \(receiver.address)" + (receiver.manufacturer.map { " (\($0))" } ?? "") + ": "
            line += "129029 ×\(receiver.position_data), 129025 ×\(receiver.position_rapid), 129539 ×\(receiver.dops)"
            if let method = receiver.method { line += "; last fix: \(method)" }
            if let latitude = receiver.latitude, let longitude = receiver.longitude {
                line += String(format: " at %.5f, %.5f", latitude, longitude)
            }
            lines.append(line + (receiver.address == chosen ? "  <- read" : ""))
        }
        if let source { lines.append("For agrigps and gpsd: \(source)") }
        return (lines + machineLines).joined(separator: "\n")
    }

    private var machineLines: [String] {
        guard !machine.signals.isEmpty else {
            return ["Machine: none of its broadcasts heard (speeds, hitches, PTOs, engine, fuel)."]
        }
        let controllers = [
            machine.tractor_ecu.map { "tractor ECU at address \($0)" } ?? "no tractor ECU claimed an address",
            machine.engine.map { "engine controller at \($0)" },
        ].compactMap { $0 }
        var lines = ["Machine: " + controllers.joined(separator: ", ") + "."]
        for seen in machine.signals {
            let label = MachineSignal(rawValue: seen.signal)?.label ?? seen.signal
            var line = "  \(label): \(seen.value) (from \(seen.source)"
            if seen.age_seconds > 0 { line += String(format: ", %.1f s before the end", seen.age_seconds) }
            if !seen.also_sent_by.isEmpty {
                line += "; also sent by " + seen.also_sent_by.map(String.init).joined(separator: ", ")
            }
            lines.append(line + ")")
        }
        let missing = machine.not_heard.compactMap { MachineSignal(rawValue: $0)?.label }
        if !missing.isEmpty { lines.append("  not heard: " + missing.joined(separator: ", ")) }
        return lines
    }

    func json() throws -> String {
        try JSONWriter.encode(self)
    }
}
