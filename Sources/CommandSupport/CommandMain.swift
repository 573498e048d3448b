import ArgumentParser
import Bounds
import CMalloc
import Foundation
import Logging

/// What every agrigps program does around its command: the log made safe for a terminal and the
/// journal, one line per error, and sysexits-style exit codes.
public enum CommandMain {
    /// Parses the arguments as `Root`, runs the command, and exits with its code. `verbose` commands
    /// (the daemon, the web page) log what they do; the others speak only when something is wrong.
    /// `AGRIGPS_LOG_LEVEL` (trace, debug, info, notice, warning, error or critical) sets how much the
    /// verbose ones log; info when unset. At debug the daemon logs every sample it commits.
    public static func run<Root: ParsableCommand>(_ root: Root.Type, verbose: Bool) async -> Never {
        let level = verbose ? logLevel(ProcessInfo.processInfo.environment["AGRIGPS_LOG_LEVEL"]) : .warning
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return SafeLogHandler(wrapped: handler)
        }
        // glibc gives each thread that allocates a malloc arena of its own, up to eight per core, and
        // keeps what is freed in it: a burst handled on one thread (a flood of 65 KB pushes) stays
        // resident after it. Two cores, two arenas.
        _ = mallopt(M_ARENA_MAX, 2)
        // Nothing agrigps writes is for other users, whatever umask it was started with (000 in some
        // shells and images): files it makes without an explicit mode come out 0600 at most.
        umask(umask(0) | 0o077)
        do {
            var command = try Root.parseAsRoot(joiningDashValues(Array(CommandLine.arguments.dropFirst())))
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            exit(0)
        } catch let code as ExitCode {
            // Already reported (or an interruption): only the code is left to give.
            exit(code.rawValue)
        } catch let error as CommandFailure {
            Output.error(error.description)
            exit(error.exitCode)
        } catch {
            let code = Root.exitCode(for: error)
            // Help and --version are not errors: let the parser print them in full.
            if code == .success { Root.exit(withError: error) }
            Output.error(Root.message(for: error).replacingOccurrences(of: "\n", with: " "))
            exit(code.rawValue)
        }
    }

    /// Options whose value may start with a dash, which the parser would take for flags ("-1h" for
    /// -1 and -h, so `--since -1h` printed the help): the value is joined to its option with "=",
    /// and the option's own check then refuses it in words.
    static let dashValueOptions: Set<String> = ["--since", "--until"]

    static func joiningDashValues(_ arguments: [String]) -> [String] {
        var joined: [String] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--" { return joined + arguments[index...] }
            if dashValueOptions.contains(argument), index + 1 < arguments.count, arguments[index + 1].hasPrefix("-"),
                arguments[index + 1] != "--", !arguments[index + 1].hasPrefix("--")
            {
                joined.append(argument + "=" + arguments[index + 1])
                index += 2
            } else {
                joined.append(argument)
                index += 1
            }
        }
        return joined
    }
}

/// The level `AGRIGPS_LOG_LEVEL` names, or info (with a warning when it names none).
func logLevel(_ setting: String?) -> Logger.Level {
    guard let setting, !setting.isEmpty else { return .info }
    if let level = Logger.Level(rawValue: setting.lowercased()) { return level }
    let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
    Output.warning(
        "AGRIGPS_LOG_LEVEL: '\(TerminalText.safe(setting, limit: 40))' is not a level (\(levels)); logging at info")
    return .info
}

/// A failure the command line reports as one line, with a sysexits-style exit code.
public struct CommandFailure: Error, CustomStringConvertible {
    public let description: String
    public let exitCode: Int32

    public init(description: String, exitCode: Int32) {
        self.description = description
        self.exitCode = exitCode
    }

    public init(_ error: some Error & CustomStringConvertible & HasExitCode) {
        self.init(description: error.description, exitCode: error.exitCode)
    }
}

/// Errors of the modules below that already say what to do, and which exit code they deserve.
public protocol HasExitCode {
    var exitCode: Int32 { get }
}

/// Line-at-a-time output that reaches a pipe at once (a field engineer may be tailing it).
public enum Output {
    public static func line(_ text: String) {
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    public static func warning(_ text: String) {
        FileHandle.standardError.write(Data("agrigps: warning: \(text)\n".utf8))
    }

    /// One line: an error may quote what the user or another party typed, so it is made safe first.
    public static func error(_ text: String) {
        FileHandle.standardError.write(Data("agrigps: error: \(TerminalText.safe(text, limit: 1000))\n".utf8))
    }
}
