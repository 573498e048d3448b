import ArgumentParser
import CommandSupport
import Foundation

/// `agrigps web` hands over to `agrigps-web`, installed beside this binary: the web server lives in
/// a program of its own, so the daemon's binary (this one) stays as lean in memory as it was.
struct Web: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the cab view: a web page with the map, sharing on and off, and onboarding.",
        discussion: """
            Runs agrigps-web, installed beside agrigps, with the same arguments: 'agrigps web \
            set-password' sets the page's password, and 'agrigps web --help' is its manual. It \
            listens on 127.0.0.1:8080 unless [web] listen says otherwise, and beyond this machine \
            only with a password.
            """
    )

    @Argument(parsing: .captureForPassthrough, help: ArgumentHelp("Arguments for agrigps-web.", valueName: "arguments"))
    var arguments: [String] = []

    func run() throws {
        let own =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        let program = URL(fileURLWithPath: own).deletingLastPathComponent().appendingPathComponent("agrigps-web").path
        guard FileManager.default.isExecutableFile(atPath: program) else {
            throw CommandFailure(
                description: "\(program) is missing: the cab view is a program of its own, installed with agrigps",
                exitCode: 69)
        }
        let argv = ([program] + arguments).map { strdup($0) } + [nil]
        execv(program, argv)
        throw CommandFailure(description: "cannot start \(program): \(String(cString: strerror(errno)))", exitCode: 71)
    }
}
