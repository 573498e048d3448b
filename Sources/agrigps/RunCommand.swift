import AgrirouterLink
import AgrirouterWire
import ArgumentParser
import Bounds
import CANBus
import Clocks
import CommandSupport
import Foundation
import GNSS
import GPSDReplay
import Gateway
import Logging
import Machine
import ServiceLifecycle
import Spool
import StateDirectory
import StateFiles
import Synchronization
import Track

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the gateway: sample gpsd into the spool and, when onboarded, publish to agrirouter.",
        discussion: """
            Every sample is committed to the spool (STATE-DIR/spool.sqlite) before anything else. When the \
            machine is onboarded, it announces its capabilities and subscription, then publishes the spool \
            as gps:info and removes samples only when agrirouter acknowledges them. Requests keep at least \
            10 s apart on QA and 5 s in production. SIGTERM or SIGINT stops it cleanly.

            With --replay LOG it reads a recorded NMEA log through a private gpsd instead, and stops once \
            the log has been sent: a field engineer's way to push a customer's log through the whole chain. \
            Add --retime to feed the log in real time with its times moved to now, so that it stands in \
            for a live receiver: its GNSS time then corrects the clock of every timestamp sent.

            A candump recording of a CAN bus is replayed as 'agrigps replay' does, onto a virtual \
            interface: vcan0, or the one of --source nmea2000://IFACE. Without --source and without \
            vcan0, agrigps reads the recording itself, without gpsd or any interface: the frames go \
            to the bus listener, and the receiver's fixes come from its own PGN 129029 and 129026. \
            Its times stay as recorded.
            """
    )

    @Option(help: ArgumentHelp("gpsd address (default 127.0.0.1:2947).", valueName: "host:port"))
    var gpsd: String?

    @Option(
        help: ArgumentHelp(
            "Where the receiver is: gpsd (its devices), or nmea2000://IFACE[:ADDRESS] for one on a CAN bus, which gpsd reads and agrigps listens to beside it.",
            valueName: "source"))
    var source: String?

    @Option(help: ArgumentHelp("Replay this NMEA log instead of reading gpsd.", valueName: "log"))
    var replay: String?

    @Flag(help: "With --replay: move the log's times to now and feed it in real time, as a live receiver.")
    var retime = false

    /// For tests: the daemon's system clock is shifted by the seconds in this file, which a test may
    /// rewrite to step it (a test machine's own clock cannot be set to 1970).
    @Option(name: .customLong("clock-offset-file"), help: .hidden)
    var clockOffsetFile: String?

    /// For tests: how long the local agrirouter keeps answers in its outbox (agrirouter's is 300 s),
    /// so that a batch whose answer was lost is sent again without a five-minute wait.
    @Option(name: .customLong("outbox-lifetime"), parsing: .unconditional, help: .hidden)
    var outboxLifetime: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Seconds per sample (default 1).", valueName: "seconds"))
    var interval: String?

    @Option(
        name: .customLong("send-interval"), parsing: .unconditional,
        help: ArgumentHelp(
            "Seconds between send cycles without a backlog (5, 10 or 20; default 10, 5 with [publishing] profile = \"live\").",
            valueName: "seconds"))
    var sendInterval: String?

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Least seconds between two requests; defaults to 10 on QA, 5 in production, 0.2 locally.",
            valueName: "seconds"))
    var spacing: String?

    @Option(
        name: .customLong("feed-query-interval"), parsing: .unconditional,
        help: ArgumentHelp(
            "Seconds between safety feed queries, for pushes that expired unread (default 3600).", valueName: "seconds")
    )
    var feedQueryInterval: String?

    @Option(
        name: .customLong("history-hours"), parsing: .unconditional,
        help: ArgumentHelp("Hours of other machines' positions to keep (default 24).", valueName: "hours"))
    var historyHours: String?

    @Option(
        name: .customLong("work-signals"), parsing: .unconditional,
        help: ArgumentHelp(
            "What says an implement is in work, comma-separated: rear-hitch, front-hitch, rear-pto, front-pto, implement-operations, switch (default all).",
            valueName: "signals"))
    var workSignals: String?

    @Option(
        name: .customLong("minimum-work-speed"), parsing: .unconditional,
        help: ArgumentHelp(
            "km/h below which the machine stands and does not work (0.1 to 20, default 1).", valueName: "km/h"))
    var minimumWorkSpeed: String?

    @Option(
        name: .customLong("machine-bus"),
        help: ArgumentHelp(
            "The tractor's CAN interface when the receiver is not on it, such as can1: listened to for the machine, never sent on (default: [machine] bus).",
            valueName: "interface"))
    var machineBus: String?

    @OptionGroup var config: ConfigurationOption
    @OptionGroup var state: StateDirectoryOption

    /// Each flag is checked by the rule of the configuration key it overrides.
    static var keyedFlags: [(flag: String, value: KeyPath<Run, String?>, section: String, name: String)] {
        [
            ("--interval", \.interval, "sampling", "interval"),
            ("--send-interval", \.sendInterval, "sending", "interval"),
            ("--spacing", \.spacing, "sending", "spacing"),
            ("--feed-query-interval", \.feedQueryInterval, "others", "feed_query_interval"),
            ("--history-hours", \.historyHours, "others", "history_hours"),
            ("--minimum-work-speed", \.minimumWorkSpeed, "machine", "minimum_speed"),
        ]
    }

    func validate() throws {
        for keyed in Self.keyedFlags {
            if let text = self[keyPath: keyed.value] {
                _ = try KeyedFlag.value(keyed.flag, text, section: keyed.section, name: keyed.name)
            }
        }
        if let gpsd { _ = try GPSDAddress.parseOption(gpsd) }
        if let workSignals {
            _ = try KeyedFlag.list("--work-signals", workSignals, section: "machine", name: "work_signals")
        }
        if let machineBus { _ = try KeyedFlag.text("--machine-bus", machineBus, section: "machine", name: "bus") }
        if retime && replay == nil {
            throw ValidationError("--retime moves a replayed log's times; give --replay LOG too")
        }
        if retime, let replay, CANReplay.isCandump(replay) {
            throw ValidationError(
                "--retime moves an NMEA log's times; a candump recording is replayed with the times it was recorded with"
            )
        }
        if let source {
            do {
                _ = try ConfigurationFile.checkTextFlag("--source", source, section: "gnss", name: "source")
            } catch {
                throw ValidationError(error.description)
            }
            if let replay, source != "gpsd", !CANReplay.isCandump(replay) {
                throw ValidationError(
                    "--replay of an NMEA log reads it through a gpsd of its own; --source nmea2000://IFACE names the virtual interface a candump recording is replayed onto"
                )
            }
        }
        _ = try lifetime()
    }

    /// A flag's checked value, else the file's, else the default.
    private func keyed(_ flag: String, _ file: ConfigurationFile, fallback: Double) throws -> Double {
        guard let keyed = Self.keyedFlags.first(where: { $0.flag == flag }) else {
            preconditionFailure("no flag \(flag)")
        }
        return try KeyedFlag.value(
            flag, self[keyPath: keyed.value], section: keyed.section, name: keyed.name, file: file, fallback: fallback)
    }

    func run() async throws {
        let file = try config.load()
        let lock: StateDirectoryLock
        do {
            lock = try StateDirectoryLock(directory: state.resolved)
        } catch let held as StateDirectoryLock.Held {
            // EX_TEMPFAIL: try again once the other one stops
            throw CommandFailure(description: held.description, exitCode: 75)
        } catch {
            throw CommandFailure(description: "\(error)", exitCode: 73)
        }
        // A live receiver's GNSS time disciplines every timestamp sent; a replay's is the recording's,
        // unless it was moved to now.
        let clock = TrueTime(
            followsGNSS: replay == nil || retime, wall: clockOffsetFile.map { WallClock.shifted(byFile: $0) } ?? .system
        )
        var spoolConfiguration = spoolConfiguration(file)
        spoolConfiguration.clock = { clock.bestGuess() }  // ages and retries survive a wrong or stepped system clock
        spoolConfiguration.keepsCommitMark = true
        let spool = await Spool.opening(path: state.spoolPath, configuration: spoolConfiguration)
        // EX_CONFIG: what is installed does not fit what the box holds; a restart changes nothing.
        if let refusal = await spool.refusal { throw CommandFailure(description: refusal.description, exitCode: 78) }
        var othersConfiguration = OtherMachinesStore.Configuration()
        othersConfiguration.historyWindow = try keyed("--history-hours", file, fallback: 24) * 3600
        let others = OtherMachinesStore(path: state.othersPath, configuration: othersConfiguration)
        let gpsdAddress = try GPSDAddress.parseOption(gpsd ?? file.text("gpsd", "address") ?? "127.0.0.1:2947")
        let credentials = CredentialStore(directory: state.resolved)
        let bus = try busWatcher(file)
        defer { bus?.stop() }
        let machineBus = try machineBusWatcher(file, beside: bus)
        defer { machineBus?.stop() }
        let runs = Mutex<(summary: GatewayDaemon.Summary, finishReplay: (@Sendable () async -> Void)?)>((.init(), nil))
        // One credential epoch after another: a live daemon picks up an onboarding or a disconnect (by
        // the CLI or the cab view) by itself. The watcher ends the daemon's services, which start
        // again with the new credentials, the spool as it was. A signal shuts the program's group
        // down, and with it the daemon's, nested in it.
        let epochs = CommandJob { [self] in
            var restart = false
            repeat {
                let fingerprint = credentials.fingerprint()
                let link = try self.link(file, clock: clock)
                var configuration = try daemonConfiguration(file, environment: link?.environment)
                configuration.certificateNotAfter = link?.certificateNotAfter
                configuration.clock = clock
                configuration.resumeSharingAtStart = !restart
                var started: StartedReplay?
                if let replay { started = try await startReplay(replay) }
                let receiverBus = bus ?? started?.bus
                if let receiverBus { configuration.receiverBus = { receiverBus.summary } }
                if let machineBus {
                    MachineWiring.attach(machineBus, rules: try workRules(file), ownBus: true, to: &configuration)
                } else if let receiverBus {
                    MachineWiring.attach(receiverBus, rules: try workRules(file), to: &configuration)
                } else {
                    MachineWiring.attachSwitch(rules: try workRules(file), to: &configuration)
                }
                let daemon = GatewayDaemon(
                    spool: spool, connection: link?.connection, setup: link?.setup, others: others,
                    configuration: configuration)
                let watcher =
                    replay == nil
                    ? [
                        ServiceGroupConfiguration.ServiceConfiguration(
                            service: CredentialWatcher(store: credentials, fingerprint: fingerprint),
                            successTerminationBehavior: .gracefullyShutdownGroup)
                    ]
                    : []
                let summary: GatewayDaemon.Summary
                if let started {
                    // A recording's time is not now: no skew check, unless it was moved to now.
                    summary = await daemon.run(events: started.events, skewLimit: retime ? 60 : nil, alongside: watcher)
                } else {
                    var gpsdConfiguration = GPSDSource.Configuration(address: gpsdAddress)
                    if let bus {
                        gpsdConfiguration.adjust = { bus.adjust($0) }
                        gpsdConfiguration.standIn = { bus.standIn() }
                    }
                    summary = await daemon.run(gpsd: GPSDSource(configuration: gpsdConfiguration), alongside: watcher)
                }
                runs.withLock { runs in
                    runs.summary.add(summary)
                    if let started { runs.finishReplay = started.finish }
                }
                // An MQTT connection ends with the daemon's run: a new one comes with the new credentials.
                link?.connection.link.close()
                restart = !Task.isShuttingDownGracefully && credentials.fingerprint() != fingerprint && replay == nil
                if restart {
                    Logger(label: "agrigps.daemon").notice("the credentials changed: starting again with them")
                }
            } while restart
        }
        let signals = try await ServiceGroup.runCommand(epochs, label: "agrigps.run")
        let (summary, finishReplay) = runs.withLock { $0 }
        await finishReplay?()
        let status = await spool.status()
        Output.line(
            "agrigps: \(summary.samples) samples taken, \(summary.published) published, \(summary.acknowledged) acknowledged; "
                + "\(status.waiting) waiting in the spool; "
                + "\(summary.othersStored) message\(summary.othersStored == 1 ? "" : "s") from other machines received"
                + (summary.lostAtShutdown > 0
                    ? "; \(summary.lostAtShutdown) samples held in memory LOST: \(summary.lossReason ?? "the spool could not store them")"
                    : ""))
        _ = consume lock  // held until the daemon has stopped
        // Stopped by a signal: the shell's convention, 128 + its number (143 for SIGTERM, 130 for SIGINT).
        if let code = signals.exitCode { throw ExitCode(code) }
    }

    /// The work state's rules: [machine] in the file, the flags over it.
    private func workRules(_ file: ConfigurationFile) throws -> WorkRules {
        let names =
            try workSignals.map { try KeyedFlag.list("--work-signals", $0, section: "machine", name: "work_signals") }
            ?? file.list("machine", "work_signals") ?? ConfigurationFile.workSignals
        let speed = try keyed("--minimum-work-speed", file, fallback: WorkRules.defaultMinimumSpeed * 3.6)
        return WorkRules(signals: Set(names.compactMap(WorkSignal.init(rawValue:))), minimumSpeed: speed / 3.6)
    }

    /// With the receiver on a CAN bus, the listener beside gpsd, reading already.
    private func busWatcher(_ file: ConfigurationFile) throws -> BusWatcher? {
        let chosen = try source.map { try ReceiverSource(parsing: $0) } ?? file.receiverSource
        guard replay == nil, case .nmea2000(let interface, let address) = chosen else { return nil }
        let watcher = BusWatcher(interface: interface, address: address)
        guard watcher.start() else {
            throw CommandFailure(description: "no thread could be started to read \(interface)", exitCode: 71)
        }
        return watcher
    }

    /// The machine's own bus (`--machine-bus`, else `[machine] bus`), listened to for the machine's
    /// messages alone; nil without one, or when it is the receiver's bus, already listened to. An
    /// interface that is not there yet (an adapter plugged in later) is tried again every few
    /// seconds, and status says why meanwhile.
    private func machineBusWatcher(_ file: ConfigurationFile, beside receiverBus: BusWatcher?) throws -> BusWatcher? {
        guard
            let interface = try machineBus.map({
                try KeyedFlag.text("--machine-bus", $0, section: "machine", name: "bus")
            })
                ?? file.text("machine", "bus"), interface != receiverBus?.interface
        else { return nil }
        let watcher = BusWatcher(interface: interface, address: nil, machineOnly: true)
        guard watcher.start() else {
            throw CommandFailure(description: "no thread could be started to read \(interface)", exitCode: 71)
        }
        return watcher
    }

    /// A replay's events, how to end it, and the bus listener it feeds, if it is a CAN recording.
    struct StartedReplay {
        var events: AsyncStream<SourceEvent>
        var finish: @Sendable () async -> Void
        var bus: BusWatcher?
    }

    /// A private gpsd that replays `path`; or, for a candump recording where the interface to
    /// replay it onto does not exist, agrigps's own reading of it, without gpsd.
    private func startReplay(_ path: String) async throws -> StartedReplay {
        if CANReplay.isCandump(path) {
            var (interface, address, named): (String, UInt8?, Bool) = ("vcan0", nil, false)
            if let source, case .nmea2000(let given, let at)? = try? ReceiverSource(parsing: source) {
                (interface, address, named) = (given, at, true)
            }
            // An interface named but missing is an error that says how to make it; vcan0, the
            // default, missing means the recording is read here.
            guard named || BusReplay.interfaceExists(interface) else {
                let (stream, bus) = try CANReplay.withoutInterface(path, address: address, realTime: false)
                return StartedReplay(events: stream.events, finish: { stream.ending.cancel() }, bus: bus)
            }
            let replay = try await CANReplay.start(path, interface: interface, realTime: false)
            return StartedReplay(events: replay.stream().events, finish: { await replay.finish() }, bus: replay.bus)
        }
        do {
            let log = try NMEALog(contentsOf: path)
            var options = ReplayGPSD.Options()
            options.realTime = retime
            let gpsd = try await ReplayGPSD.start(
                log: retime ? try log.retimed(startingAt: Date().addingTimeInterval(-1)) : log, options: options)
            return StartedReplay(events: gpsd.stream().events, finish: { await gpsd.finish() }, bus: nil)
        } catch {
            throw CommandFailure(error)
        }
    }

    /// True once the stored credentials differ from `fingerprint` and have stayed the same for a
    /// second (both files written); looked at every 2 s until cancelled.
    static func waitForChange(of store: CredentialStore, from fingerprint: [FileStamp]) async -> Bool {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(2))
            var seen = store.fingerprint()
            guard seen != fingerprint else { continue }
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                let now = store.fingerprint()
                if now == seen { return true }
                seen = now
            }
        }
        return false
    }

    /// The outbox's lifetime: agrirouter's, unless a test's local agrirouter keeps answers shorter.
    private func lifetime() throws -> Double {
        guard let outboxLifetime else { return AgrirouterLimits.outboxLifetime }
        guard let seconds = Double(outboxLifetime), seconds >= 10, seconds <= AgrirouterLimits.outboxLifetime else {
            throw ValidationError(
                "--outbox-lifetime: '\(outboxLifetime)' is not a number of seconds from 10 to \(Int(AgrirouterLimits.outboxLifetime))"
            )
        }
        return seconds
    }

    /// A flag wins over the file, the file over the default.
    private func daemonConfiguration(_ file: ConfigurationFile, environment: String?) throws
        -> GatewayDaemon.Configuration
    {
        var configuration = GatewayDaemon.Configuration()
        configuration.samplingInterval = try keyed("--interval", file, fallback: 1)
        configuration.sendInterval = try keyed("--send-interval", file, fallback: file.defaultSendInterval)
        configuration.feed.safetyQueryInterval = try keyed("--feed-query-interval", file, fallback: 3600)
        configuration.outboxLifetime = try lifetime()
        configuration.heartbeatPath = state.heartbeatPath
        configuration.setupRecordPath = state.resolved + "/endpoint-setup.json"
        configuration.notifier = SystemdNotifier.fromEnvironment()
        configuration.environment = environment
        configuration.staleAfter = file.thresholds.staleAfter
        configuration.outputs = file.outputs
        configuration.softwareVersion = Agrigps.configuration.version
        configuration.track = TrackStore(path: state.trackPath, configuration: file.trackConfiguration)
        configuration.fieldsPath = state.fieldsPath
        configuration.trackDatesBySystemClock = replay == nil || retime
        return configuration
    }

    private func spoolConfiguration(_ file: ConfigurationFile) -> SpoolConfiguration {
        var configuration = SpoolConfiguration()
        configuration.wireSize = GPSEntry.wireSize(of:)
        configuration.outputs = file.outputs
        // Checked by the file's ranges (at most 10^8 rows, 10^5 MiB), so these conversions cannot trap.
        if let rows = file.number("spool", "max_samples") {
            configuration.maximumRows = Bounds.whole(rows) ?? configuration.maximumRows
        }
        if let megabytes = file.number("spool", "max_megabytes") {
            configuration.maximumBytes = Bounds.whole(megabytes * 1_048_576) ?? configuration.maximumBytes
        }
        if let days = file.number("spool", "max_age_days") { configuration.maximumAge = days * 86_400 }
        return configuration
    }

    /// The agrirouter connection, when the machine is onboarded.
    private func link(_ file: ConfigurationFile, clock: TrueTime) throws
        -> (connection: AgrirouterConnection, setup: EndpointSetup, environment: String, certificateNotAfter: Date?)?
    {
        let loaded: StoredEndpoint?
        do {
            loaded = try CredentialStore(directory: state.resolved).load()
        } catch {
            throw CommandFailure(error)
        }
        guard let stored = loaded else { return nil }
        let gap = try keyed(
            "--spacing", file,
            fallback: stored.environment == "local" ? 0.2 : AgrirouterConnection.spacing(for: stored.environment))
        let connection: AgrirouterConnection
        do {
            connection = try AgrirouterConnection.open(
                stored, directory: state.resolved, minimumSpacing: gap, clock: clock)
        } catch {
            throw CommandFailure(error)
        }
        let settings = stored.settings ?? OnboardingSettings(applicationID: "", certificationVersionID: "")
        return (
            connection,
            EndpointSetup(
                applicationID: settings.applicationID, certificationVersionID: settings.certificationVersionID,
                outputs: file.outputs),
            stored.environment, try? stored.credentials?.check().notAfter
        )
    }
}

/// Ends when the stored credentials have changed (an onboarding or a disconnect by the CLI or the
/// cab view), or at a graceful shutdown.
struct CredentialWatcher: Service {
    var store: CredentialStore
    var fingerprint: [FileStamp]

    func run() async {
        _ = await cancelWhenGracefulShutdown { [store, fingerprint] in
            await Run.waitForChange(of: store, from: fingerprint)
        }
    }
}

struct Pause: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Stop sharing positions. Samples taken while paused stay on this machine and are never sent.")

    @OptionGroup var state: StateDirectoryOption

    func run() async throws {
        try await setSharing(paused: true, state: state)
        Output.line(
            "Sharing paused: positions taken from now on stay on this machine and are never sent. 'agrigps resume' turns it back on."
        )
    }
}

struct Resume: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Share positions again.")

    @OptionGroup var state: StateDirectoryOption

    func run() async throws {
        try await setSharing(paused: false, state: state)
        Output.line("Sharing resumed.")
    }
}

struct WorkSwitchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "work",
        abstract: "Turn the driver's work switch on or off: the work state of a machine whose bus does not tell it.",
        discussion: """
            The cab view's Working / Not working switch, from the shell. On, the machine counts as working while it \
            moves at least [machine] minimum_speed, as a lowered hitch would make it; off, as not working, but only on \
            a machine whose bus never said anything (a silent bus is not the driver's word). It is kept across \
            restarts, in the spool beside the sharing switch, and a running daemon takes it at its next sample. \
            Until it is first used, a machine without a bus sends no work state at all.
            """)

    enum Position: String, ExpressibleByArgument, CaseIterable {
        case on, off
    }

    @Argument(help: "on or off.")
    var position: Position

    @OptionGroup var state: StateDirectoryOption

    func run() async throws {
        do {
            try await Spool.opening(path: state.spoolPath).setWorkSwitch(on: position == .on)
        } catch {
            throw CommandFailure(description: error.description, exitCode: 73)
        }
        Output.line(
            position == .on ? "Work switch on: the machine counts as working while it moves." : "Work switch off.")
    }
}

/// Pause and resume reach a running daemon through the spool's database.
private func setSharing(paused: Bool, state: StateDirectoryOption) async throws {
    let spool = await Spool.opening(path: state.spoolPath)
    do {
        try await spool.setSharing(paused: paused)
    } catch {
        throw CommandFailure(description: error.description, exitCode: 73)
    }
}
