import ArgumentParser
import Bounds
import Foundation
import Logging

struct Agrigps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agrigps",
        abstract: "GNSS gateway: reads the receiver through gpsd and shares positions through agrirouter.",
        discussion: """
            Every sample says what the receiver knows, including when it knows nothing: \
            gpsd_unreachable, no_receiver, no_fix, or fix_<2d|3d>_<quality> where quality is \
            autonomous, dgps, rtk_fixed, rtk_float, dead_reckoning, simulated or manual.
            """,
        version: "0.1.0",
        subcommands: [Run.self, Watch.self, Replay.self, Onboard.self, Disconnect.self, Pause.self, Resume.self, Status.self, Others.self, Web.self]
    )
}

/// A failure the command line reports as one line, with a sysexits-style exit code.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    let exitCode: Int32

    init(description: String, exitCode: Int32) {
        self.description = description
        self.exitCode = exitCode
    }

    init(_ error: some Error & CustomStringConvertible & HasExitCode) {
        self.init(description: error.description, exitCode: error.exitCode)
    }
}

/// Errors of the modules below that already say what to do, and which exit code they deserve.
protocol HasExitCode {
    var exitCode: Int32 { get }
}

@main
enum Main {
    static func main() async {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            // The daemon tells what it does; the other commands speak only when something is wrong.
            handler.logLevel = ["run", "web"].contains(CommandLine.arguments.dropFirst().first ?? "") ? .info : .warning
            return SafeLogHandler(wrapped: handler)
        }
        do {
            var command = try Agrigps.parseAsRoot()
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch let code as ExitCode {
            // Already reported (or an interruption): only the code is left to give.
            exit(code.rawValue)
        } catch let error as CommandFailure {
            Output.error(error.description)
            exit(error.exitCode)
        } catch {
            let code = Agrigps.exitCode(for: error)
            // Help and --version are not errors: let the parser print them in full.
            if code == .success { Agrigps.exit(withError: error) }
            Output.error(Agrigps.message(for: error).replacingOccurrences(of: "\n", with: " "))
            exit(code.rawValue)
        }
    }
}

/// Line-at-a-time output that reaches a pipe at once (a field engineer may be tailing it).
enum Output {
    static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    static func warning(_ text: String) {
        FileHandle.standardError.write(Data("agrigps: warning: \(text)\n".utf8))
    }

    /// One line: an error may quote what the user or another party typed, so it is made safe first.
    static func error(_ text: String) {
        FileHandle.standardError.write(Data("agrigps: error: \(TerminalText.safe(text, limit: 1000))\n".utf8))
    }
}
