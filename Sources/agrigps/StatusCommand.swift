import ArgumentParser
import Bounds
import Clocks
import CommandSupport
import Foundation
import GNSS
import Machine
import Spool
import StateDirectory
import StateView

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Say whether the gateway is healthy: daemon, agrirouter link, sharing, fix, spool, other machines.",
        discussion: """
            Reads the state directory only (the daemon's heartbeat, the spool and the store of other \
            machines); no daemon needs to answer, and no secret is printed. The first line is a \
            verdict in the form monitoring plugins print, and the exit status is the one Nagios and \
            Icinga read: 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN.

            CRITICAL  the daemon is not running or its heartbeat is older than
                      heartbeat_limit; no receiver, or gpsd unreachable, at the
                      last sample (what the cab view shows red); a state file
                      is not a regular file; no fix for fix_age_critical; the
                      oldest unsent sample waited queue_age_critical; samples
                      were lost; the certificate has expired; agrirouter no
                      longer knows the endpoint; the disk is full
            WARNING   not onboarded, or onboarded but not taken by the running
                      daemon; no fix yet or for fix_age_warning;
                      queue_age_warning; samples parked or dropped; the spool
                      cannot store and holds samples in memory; a damaged spool was
                      moved aside; the system clock is off from GNSS time;
                      agrirouter unreachable, or nothing acknowledged for
                      ack_age_warning, or offline as the cab view says it; the
                      certificate expires within 30 days; little disk space left
            UNKNOWN   the state directory cannot be read

            The thresholds come from the [status] section of the configuration file. No \
            age is longer than the system has been running.
            """
    )

    @Flag(help: "Print JSON for scripts.")
    var json = false

    @Option(
        name: .customLong("heartbeat-limit"), parsing: .unconditional,
        help: ArgumentHelp("Seconds after which a silent daemon counts as stalled (default 120).", valueName: "seconds")
    )
    var heartbeatLimit: String?

    @Option(
        name: .customLong("stale-after"), parsing: .unconditional,
        help: ArgumentHelp("Seconds without data before another machine is stale (default 300).", valueName: "seconds"))
    var staleAfter: String?

    @OptionGroup var config: ConfigurationOption
    @OptionGroup var state: StateDirectoryOption

    func validate() throws {
        if let heartbeatLimit {
            _ = try KeyedFlag.value("--heartbeat-limit", heartbeatLimit, section: "status", name: "heartbeat_limit")
        }
        if let staleAfter {
            _ = try KeyedFlag.value("--stale-after", staleAfter, section: "others", name: "stale_after")
        }
    }

    func run() async throws {
        var thresholds: StatusThresholds
        do {
            thresholds = try config.load().thresholds
        } catch let failure as CommandFailure {
            // A monitoring system must get one of its four codes, whatever goes wrong.
            Output.line("UNKNOWN: \(failure.description)")
            throw ExitCode(Health.unknown.rawValue)
        }
        if let heartbeatLimit {
            thresholds.heartbeatLimit = try KeyedFlag.value(
                "--heartbeat-limit", heartbeatLimit, section: "status", name: "heartbeat_limit")
        }
        if let staleAfter {
            thresholds.staleAfter = try KeyedFlag.value(
                "--stale-after", staleAfter, section: "others", name: "stale_after")
        }
        let paths = StatusSnapshot.Paths(
            stateDirectory: state.resolved, spool: state.spoolPath, others: state.othersPath,
            heartbeat: state.heartbeatPath)
        let snapshot = await StatusSnapshot.gather(
            paths, heartbeatLimit: thresholds.heartbeatLimit, staleAfter: thresholds.staleAfter)
        let verdict = snapshot.verdict(thresholds)
        if json {
            Output.line(StatusReport.json(snapshot, verdict: verdict))
        } else {
            Output.line(StatusReport.headline(verdict))
            for line in StatusReport.text(snapshot) { Output.line(line) }
        }
        if verdict.health != .ok { throw ExitCode(verdict.health.rawValue) }
    }
}

enum StatusReport {
    /// "OK: daemon running", "CRITICAL: daemon not running; not onboarded".
    static func headline(_ verdict: (health: Health, reasons: [String])) -> String {
        "\(verdict.health): " + (verdict.reasons.isEmpty ? "gateway healthy" : verdict.reasons.joined(separator: "; "))
    }

    static func text(_ snapshot: StatusSnapshot) -> [String] {
        let now = snapshot.takenAt
        let ago = { (time: Date) in Self.ago(time, now: now, sinceBoot: snapshot.sinceBoot) }
        var lines: [String] = []
        switch snapshot.daemon {
        case .running(let pid, let age):
            lines.append("Daemon: running (pid \(pid), heartbeat \(durationText(age)) ago)")
        case .stalled(let pid, let age):
            let since = snapshot.heartbeat.map { ago($0.updatedAt) } ?? "\(durationText(age)) ago"
            lines.append("Daemon: STALLED (pid \(pid), last heartbeat \(since))")
        case .notRunning(let last):
            lines.append(
                "Daemon: NOT RUNNING" + (last.map { " (last heartbeat \(ago($0)))" } ?? " (no heartbeat found)"))
        }
        if let problem = snapshot.credentialsProblem {
            lines.append("agrirouter: credentials unreadable: \(problem)")
        } else if let environment = snapshot.environment {
            let link =
                snapshot.heartbeat.flatMap { heartbeat in
                    heartbeat.transport.map {
                        "; \($0 == "mqtt" ? "MQTT" : "REST")" + (heartbeat.connection.map { ", \($0)" } ?? "")
                    }
                } ?? ""
            lines.append(
                "agrirouter: onboarded (\(environment))"
                    + (snapshot.othersCounts.ownName.map { ", endpoint \"\(TerminalText.safe($0, limit: 80))\"" } ?? "")
                    + (snapshot.certificateNotAfter.map {
                        "; certificate valid until \(ISO8601UTC.string(from: $0).prefix(10))"
                    } ?? "")
                    + link)
        } else {
            lines.append("agrirouter: not onboarded; 'agrigps onboard --tan TAN' connects this machine")
        }
        if let spool = snapshot.spool {
            lines.append(
                "Sharing: "
                    + (spool.sharingPaused ? pausedLine(spool, now: now, sinceBoot: snapshot.sinceBoot) : "active"))
        }
        if let sample = snapshot.heartbeat?.lastSample {
            var fix = "Fix: \(sample.state), \(ago(sample.time))"
            if let last = snapshot.heartbeat?.lastFix?.coordinate {
                fix += String(format: "; last position %.6f, %.6f", last.latitude, last.longitude)
            }
            if let skew = sample.clockSkew { fix += String(format: "; system clock off by %.0f s", skew) }
            lines.append(fix)
        }
        if let bus = snapshot.heartbeat?.receiverBus { lines.append("CAN bus: \(bus)") }
        let workSwitch = snapshot.spool?.workSwitch
        if let machine = snapshot.heartbeat?.machine {
            lines.append(Self.machineLine(machine, workSwitch: workSwitch))
        } else if let workSwitch {
            lines.append("Machine: work switch \(workSwitch ? "on" : "off")")
        }
        if let spool = snapshot.spool {
            var queue = "Spool: \(spool.pending) pending"
            if let age = spool.oldestPendingAge { queue += " (oldest \(durationText(age)))" }
            queue +=
                ", \(spool.inFlight) in flight, \(spool.parked) parked, \(spool.droppedTotal) dropped, \(spool.withheld) withheld while paused"
            if spool.heldInMemory > 0 { queue += ", \(spool.heldInMemory) held in memory" }
            lines.append(queue)
            if let outputs = Self.outputsLine(spool.byOutput) { lines.append(outputs) }
        } else if let problem = snapshot.spoolProblem {
            lines.append("Spool: \(problem)")
        }
        if let efdi = snapshot.heartbeat?.efdi {
            let state =
                efdi.refusal.map { "refused (\($0.joined(separator: ", ")))" }
                ?? efdi.acceptedAt.map { "taken \(ago($0))" } ?? "not yet taken"
            lines.append(
                "EFDI device description: \(state); team set \(TerminalText.safe(efdi.teamSetContextID, limit: 64))")
        }
        if let heartbeat = snapshot.heartbeat {
            lines.append("Last acknowledged: " + (heartbeat.lastAcknowledgedAt.map { ago($0) } ?? "never"))
            if let error = heartbeat.lastError, let at = heartbeat.lastErrorAt {
                lines.append("Last error: \(TerminalText.safe(error, limit: 300)) (\(ago(at)))")
            }
            if let next = heartbeat.nextAttemptAt, next > now {
                lines.append(
                    "Backing off: next attempt in \(durationText(next.timeIntervalSince(now)))"
                        + (heartbeat.transportFailures.map {
                            " after \($0) failed request\($0 == 1 ? "" : "s") in a row"
                        } ?? ""))
            }
            if let dropped = heartbeat.droppedInbound, dropped > 0 {
                lines.append(
                    "Dropped unread from agrirouter: \(dropped) message\(dropped == 1 ? "" : "s") "
                        + "when more waited at once than the daemon keeps, the largest or the oldest first (a flood of pushes?)"
                )
            }
        }
        let others = snapshot.othersCounts
        lines.append(
            "Other machines: \(others.active) active, \(others.stale) stale, \(others.gone) gone"
                + (snapshot.othersProblem.map { " (\($0))" } ?? ""))
        if let taskData = snapshot.heartbeat?.taskData {
            let given = [
                (taskData.refused, "refused"), (taskData.expired, "given up incomplete"),
                (taskData.older, "older than the fields held"),
            ]
            .filter { $0.0 > 0 }.map { "\($0.0) \($0.1)" }
            lines.append(
                "TaskData from farm software since the daemon started: \(taskData.imported) imported"
                    + given.map { ", " + $0 }.joined()
                    + (taskData.lastProblem.map { "; the last problem: \(TerminalText.safe($0, limit: 300))" } ?? ""))
        }
        if let refused = others.refused, refused > 0 {
            lines.append(
                "Refused from other machines: \(refused) message\(refused == 1 ? "" : "s") unreadable or out of range, confirmed and skipped"
                    + (others.lastRefusal.map { "; the last: \(TerminalText.safe($0, limit: 200))" } ?? ""))
        }
        return lines
    }

    /// "12 s ago", or what can honestly be said when either clock reading is not a true time: a box
    /// without a real-time clock stamps at 1970 until NTP or a fix sets it, and a clock set back
    /// leaves stamps in its future.
    /// Where each output stands with the samples still in the spool: one that is behind shows here.
    /// "Machine: working (tractor ECU at 240); rear hitch in work, 20 % up (240, 0.1 s); …; not heard: …"
    static func machineLine(_ machine: Heartbeat.MachineStatus, workSwitch: Bool? = nil) -> String {
        let controllers = [
            machine.tractorECU.map { "tractor ECU at \($0)" }, machine.engine.map { "engine controller at \($0)" },
            workSwitch.map { "work switch \($0 ? "on" : "off")" },
        ].compactMap { $0 }
        var line = "Machine: \(machine.work.replacingOccurrences(of: "-", with: " "))"
        if !controllers.isEmpty { line += " (" + controllers.joined(separator: ", ") + ")" }
        for signal in machine.signals {
            let label = MachineSignal(rawValue: signal.signal)?.label ?? signal.signal
            line +=
                "; \(label) \(signal.value) (from \(signal.source), " + String(format: "%.1f s ago)", signal.ageSeconds)
        }
        if !machine.notHeard.isEmpty {
            line +=
                "; not heard: "
                + machine.notHeard.map { MachineSignal(rawValue: $0)?.label ?? $0 }.joined(separator: ", ")
        }
        if let problem = machine.busProblem { line += "; its bus \(problem)" }
        return line
    }

    static func outputsLine(_ byOutput: [String: [String: Int]]) -> String? {
        guard !byOutput.isEmpty else { return nil }
        let order = ["pending", "in_flight", "failed", "parked", "withheld"]
        let parts = byOutput.keys.sorted { ($0 == "gps_info" ? 0 : 1, $0) < ($1 == "gps_info" ? 0 : 1, $1) }.map {
            output in
            let states = byOutput[output] ?? [:]
            let waiting = order.compactMap { state in
                states[state].flatMap { $0 > 0 ? "\($0) \(state.replacingOccurrences(of: "_", with: " "))" : nil }
            }
            return "\(TerminalText.safe(output, limit: 20)) "
                + (waiting.isEmpty ? "has sent all of them" : waiting.joined(separator: ", "))
        }
        return "By output: " + parts.joined(separator: "; ")
    }

    /// "PAUSED since 2026-11-27T14:05:00Z (12 min ago), 58 positions kept here and never sent; …":
    /// what a pause holds back, as the cab view's label says it.
    static func pausedLine(_ spool: SpoolStatus, now: Date, sinceBoot: Double? = nil) -> String {
        let since =
            spool.pausedSince.map {
                " since \(ISO8601UTC.string(from: $0)) (\(ago($0, now: now, sinceBoot: sinceBoot)))"
            } ?? ""
        let kept = spool.keptWhilePaused
        return
            "PAUSED\(since), \(kept) position\(kept == 1 ? "" : "s") kept here and never sent ('agrigps resume' turns it back on)"
    }

    /// No age longer than the system has run (`sinceBoot`, see `StatusSnapshot.age(since:)`): a time
    /// before the boot by this clock is said to be that, with no number larger than the boot's age.
    /// (A stamp from 1970 is caught first; a plausible one that old is most often from before a
    /// restart, when "14 h ago" cut to the boot would be a wrong time, where "before the system
    /// started" is a true one.)
    static func ago(_ time: Date, now: Date, sinceBoot: Double? = nil) -> String {
        if time < TrueTime.plausibleFrom || now < TrueTime.plausibleFrom {
            return "at a time the clock did not know yet"
        }
        let age = now.timeIntervalSince(time)
        if age < -60 { return "later than this clock says it is now: the clock was set back" }
        if let sinceBoot, age > sinceBoot { return "before the system started \(durationText(sinceBoot)) ago" }
        return "\(durationText(age)) ago"
    }

    static func json(_ snapshot: StatusSnapshot, verdict: (health: Health, reasons: [String])) -> String {
        StatusDocument(snapshot, verdict: verdict).json()
    }
}
