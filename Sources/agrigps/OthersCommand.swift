import ArgumentParser
import Bounds
import Clocks
import CommandSupport
import Foundation
import GNSS
import JSONText
import StateDirectory
import StateView

struct Others: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the other machines sharing positions: name, distance and bearing, age, fix, state.",
        discussion: """
            Reads what the daemon stored (STATE-DIR/others.sqlite), so it works offline too; the "last \
            update" line says how old that is. Distance and bearing are from this machine's last fix.

            A machine is stale when nothing has arrived from it for --stale-after seconds (by this \
            machine's clock), gone when it has left agrirouter's endpoint list, and silent when it is \
            listed but has sent nothing. Only active machines are listed unless --include-stale is given.
            """
    )

    @Flag(help: "Print JSON for scripts.")
    var json = false

    @Option(
        parsing: .unconditional,
        help: ArgumentHelp(
            "Only machines within this distance: 500m, 2km, 1.5mi (a bare number is metres).", valueName: "distance"))
    var near: String?

    @Option(help: ArgumentHelp("Order of the list.", valueName: "distance|name|age"))
    var sort: OthersListing.Order?

    @Flag(name: .customLong("include-stale"), help: "Also list stale, gone and silent machines.")
    var includeStale = false

    @Option(
        name: .customLong("stale-after"), parsing: .unconditional,
        help: ArgumentHelp(
            "Seconds without data before a machine is stale (default: the configuration file's, else 300).",
            valueName: "seconds"))
    var staleAfter: String?

    @OptionGroup var config: ConfigurationOption
    @OptionGroup var state: StateDirectoryOption

    func validate() throws {
        if let near {
            do {
                _ = try DistanceText.metres(near)
            } catch {
                throw ValidationError("--near: \(error.description)")
            }
        }
        if let staleAfter {
            _ = try KeyedFlag.value("--stale-after", staleAfter, section: "others", name: "stale_after")
        }
    }

    func run() async throws {
        let now = Date()
        let store = OtherMachinesStore(path: state.othersPath)
        let stale =
            try staleAfter.map { try KeyedFlag.value("--stale-after", $0, section: "others", name: "stale_after") }
            ?? config.load().thresholds.staleAfter
        let view: OthersView
        do {
            view = try await store.view(now: now, staleAfter: stale)
        } catch {
            throw CommandFailure(description: error.description, exitCode: 74)
        }
        let ownFix = Heartbeat.read(from: state.heartbeatPath)?.lastFix
        let radius = try near.map { text throws(DistanceText.ParseError) in try DistanceText.metres(text) }
        if radius != nil, ownFix?.coordinate == nil {
            throw CommandFailure(
                description:
                    "--near needs this machine's position, and it has had no fix yet; run without --near to list every machine",
                exitCode: 69)
        }
        let listing = OthersListing(
            view: view, ownPosition: ownFix?.coordinate, now: now, near: radius,
            order: sort ?? (ownFix?.coordinate == nil ? .name : .distance), includeStale: includeStale)
        if json {
            Output.line(try OthersReport.json(listing, view: view, ownFix: ownFix, now: now))
        } else {
            for line in OthersReport.text(listing, view: view, ownFix: ownFix, now: now, storeExists: store.exists) {
                Output.line(line)
            }
        }
    }
}

extension OthersListing.Order: ExpressibleByArgument {}

/// How `agrigps others` prints a listing.
enum OthersReport {
    static func text(
        _ listing: OthersListing, view: OthersView, ownFix: Heartbeat.Sample?, now: Date, storeExists: Bool
    ) -> [String] {
        var lines: [String] = []
        if !storeExists || view.machines.isEmpty {
            lines.append("No other machines seen yet.")
            lines.append(
                storeExists
                    ? "agrirouter has named no other machine sharing gps:info, and none has sent a position."
                    : "Nothing has been received: is this machine onboarded and 'agrigps run' running?")
        } else if listing.entries.isEmpty {
            lines.append("No machine to show.")
        } else {
            let rows = listing.entries.map { entry -> [String] in
                // Names and ids are other people's text: shown escaped and cut, never raw.
                [
                    entry.machine.name.map { TerminalText.safe($0, limit: 40) }
                        ?? "(unnamed) \(TerminalText.safe(entry.machine.endpointID.prefix(8)))",
                    entry.distance.map(DistanceText.format(metres:)) ?? "unknown",
                    entry.bearing.map(BearingText.format(degrees:)) ?? "-",
                    entry.age.map(durationText) ?? "never",
                    entry.machine.lastReport.map {
                        TerminalText.safe(FixWords.words(forCode: $0.statusDescription), limit: 24)
                    } ?? "-",
                    entry.machine.activity.rawValue,
                ]
            }
            lines += table(header: ["NAME", "DISTANCE", "BEARING", "AGE", "FIX", "STATE"], rows: rows)
        }
        if listing.hiddenInactive > 0 {
            lines.append(
                "\(listing.hiddenInactive) stale, gone or silent machine\(listing.hiddenInactive == 1 ? "" : "s") not shown; --include-stale shows them."
            )
        }
        if view.refusedMessages > 0 {
            lines.append(
                "\(view.refusedMessages) message\(view.refusedMessages == 1 ? "" : "s") from other machines refused as unreadable or out of range"
                    + (view.lastRefusal.map { "; the last: \(TerminalText.safe($0, limit: 200))" } ?? ""))
        }
        if listing.hiddenUnlocated > 0 {
            lines.append(
                "\(listing.hiddenUnlocated) machine\(listing.hiddenUnlocated == 1 ? "" : "s") with no known position left out by --near."
            )
        }
        if let fix = ownFix, let coordinate = fix.coordinate {
            lines.append(
                String(
                    format: "Our position: %.6f, %.6f (fix %@ ago)", coordinate.latitude, coordinate.longitude,
                    durationText(now.timeIntervalSince(fix.time))))
        } else if !view.machines.isEmpty {
            lines.append("Our position: unknown (no fix yet), so distances and bearings are unknown.")
        }
        if storeExists {
            let update = [view.lastReceivedAt, view.endpointsListedAt].compactMap { $0 }.max()
            lines.append(
                "Last update: "
                    + (update.map { "\(ISO8601UTC.string(from: $0)) (\(durationText(now.timeIntervalSince($0))) ago)" }
                        ?? "never"))
        }
        return lines
    }

    static func table(header: [String], rows: [[String]]) -> [String] {
        let widths = header.indices.map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
        return ([header] + rows).map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
    }

    /// JSON for scripts (`OthersDocument`); if it does not encode, that is an error, never an empty object.
    static func json(_ listing: OthersListing, view: OthersView, ownFix: Heartbeat.Sample?, now: Date) throws -> String
    {
        do {
            return try JSONWriter.encode(OthersDocument(listing, view: view, ownFix: ownFix, now: now))
        } catch {
            throw CommandFailure(
                description:
                    "the stored data of other machines could not be written as JSON; run 'agrigps others' for the text view",
                exitCode: 70)
        }
    }
}
