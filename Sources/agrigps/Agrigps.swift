import ArgumentParser
import Bounds
import CommandSupport
import Foundation

struct Agrigps: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "agrigps",
        abstract: "GNSS gateway: reads the receiver through gpsd and shares positions through agrirouter.",
        discussion: """
            Every sample says what the receiver knows, including when it knows nothing: \
            gpsd_unreachable, no_receiver, no_fix, or fix_<2d|3d>_<quality> where quality is \
            autonomous, dgps, rtk_fixed, rtk_float, dead_reckoning, simulated or manual.
            """,
        version: AgrigpsVersion.current,
        subcommands: [
            Run.self, Watch.self, Replay.self, Onboard.self, Disconnect.self, Pause.self, Resume.self,
            WorkSwitchCommand.self, Status.self, Others.self, Bus.self, FieldsCommand.self, TrackExportCommand.self,
            StatsCommand.self, Web.self,
        ]
    )
}

@main
enum Main {
    static func main() async {
        await CommandMain.run(Agrigps.self, verbose: CommandLine.arguments.dropFirst().first == "run")
    }
}
