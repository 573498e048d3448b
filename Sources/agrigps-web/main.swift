import ArgumentParser
import Bounds
import CabView
import CommandSupport
import Foundation
import GNSS
import Logging
import StateDirectory
import StateView

@main
enum Main {
    static func main() async {
        await CommandMain.run(Web.self, verbose: !CommandLine.arguments.dropFirst().contains("set-password"))
    }
}

/// `agrigps web`: a program of its own, which `agrigps web` runs, so that the daemon's binary carries
/// no web server and stays as small in memory as it was.
struct Web: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agrigps web",
        abstract: "Serve the cab view: a web page with the map, sharing on and off, and onboarding.",
        discussion: """
            A process of its own beside the daemon (systemd unit agrigps-web.service). It reads the state \
            directory and acts through the same paths as the commands: pause and resume, onboard and \
            disconnect. The daemon picks up new or removed credentials by itself.

            By default it listens on 127.0.0.1:8080 only. To serve a tablet on the cab's network, set \
            [web] listen to the box's address (or 0.0.0.0:8080) and a password with \
            'agrigps web set-password'; without a password it refuses to listen beyond this machine.
            """,
        subcommands: [WebServe.self, WebSetPassword.self],
        defaultSubcommand: WebServe.self
    )
}

struct WebServe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "serve", abstract: "Serve the page (the default).")

    @Option(
        help: ArgumentHelp("Address to listen on (default: [web] listen, else 127.0.0.1:8080).", valueName: "host:port")
    )
    var listen: String?

    @OptionGroup var config: ConfigurationOption
    @OptionGroup var state: StateDirectoryOption

    func validate() throws {
        if let listen { _ = try Self.address(listen) }
    }

    /// host:port (port 0: any free one, as tests and the demo use), or a host alone for port 8080.
    static func address(_ text: String) throws -> (host: String, port: Int) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var hostPart = trimmed
        var port = 8080
        if let colon = trimmed.lastIndex(of: ":"), !trimmed.hasSuffix("]"),
            trimmed.first == "[" || trimmed.firstIndex(of: ":") == colon
        {
            let portText = trimmed[trimmed.index(after: colon)...]
            guard let number = Int(portText), (0...65535).contains(number) else {
                throw ValidationError(
                    "--listen: '\(TerminalText.safe(String(portText), limit: 20))' is not a port; use a number from 1 to 65535"
                )
            }
            port = number
            hostPart = String(trimmed[..<colon])
        }
        do {
            return (try GPSDAddress(parsing: hostPart).host, port)
        } catch {
            throw ValidationError("--listen: \(error.description)")
        }
    }

    func run() async throws {
        let file = try config.load()
        var configuration = CabConfiguration(
            paths: StatusSnapshot.Paths(
                stateDirectory: state.resolved, spool: state.spoolPath,
                others: state.othersPath, heartbeat: state.heartbeatPath))
        if let text = listen ?? file.text("web", "listen") {
            (configuration.host, configuration.port) = try Self.address(text)
        }
        if let tiles = file.text("web", "tiles") { configuration.tiles = tiles == "none" ? nil : tiles }
        configuration.basemap = file.text("web", "basemap")
        // Checked by the file's range (0 to 10,000), so the conversion cannot trap.
        if let megabytes = file.number("web", "tile_cache_mb") {
            configuration.tileCacheMegabytes = Int(exactly: megabytes) ?? 0
        }
        configuration.softwareVersion = AgrigpsVersion.current
        if let directory = file.text("web", "leaflet_directory") { configuration.leafletDirectory = directory }
        if let hours = file.number("web", "session_hours") { configuration.sessionLifetime = hours * 3600 }
        if let minutes = file.number("web", "not_moving_minutes") { configuration.notMovingAfter = minutes * 60 }
        if let signals = file.list("machine", "work_signals") {
            configuration.workSwitchCounts = signals.contains("switch")
        }
        configuration.workingWidth = file.number("machine", "working_width")
        configuration.thresholds = file.thresholds
        configuration.trackTimeZone = file.trackTimeZone
        configuration.onboardingSettings = Onboarder.settings(file: file)
        do {
            if let local = try Onboarder.localEnvironment(file: file) { configuration.environments["local"] = local }
        } catch {
            throw CommandFailure(description: error.description, exitCode: 78)
        }
        do {
            try configuration.checkExposure()
        } catch {
            throw CommandFailure(description: error.description, exitCode: 78)  // EX_CONFIG
        }
        let server = CabServer(configuration: configuration)
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        do {
            try await server.run { port in Output.line("agrigps web: serving the cab view at http://\(host):\(port)/") }
        } catch {
            throw CommandFailure(
                description:
                    "the cab view could not be served on \(configuration.host):\(configuration.port): \(error)",
                exitCode: 69)
        }
    }
}

struct WebSetPassword: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set-password",
        abstract: "Set the cab view's password, read from standard input (at least 8 characters).",
        discussion:
            "Only a salted hash is stored, in STATE-DIR/web-password (mode 0600). Sessions already open stay open until they expire."
    )

    @OptionGroup var state: StateDirectoryOption

    func run() async throws {
        if isatty(0) != 0 { FileHandle.standardError.write(Data("New password for the cab view: ".utf8)) }
        let password: String
        if isatty(0) != 0, let typed = getpass("") {
            password = String(cString: typed)
        } else {
            password = readLine(strippingNewline: true) ?? ""
        }
        do {
            try PasswordFile(directory: state.resolved).set(password)
        } catch {
            throw CommandFailure(description: error.description, exitCode: 64)
        }
        Output.line(
            "Password set for the cab view. Restart agrigps-web to listen beyond this machine, if [web] listen says so."
        )
    }
}
