import ChildProcesses
import Clocks
import Foundation
import GNSS
import Track

/// 8. `agrigps stats` over a year of records, against the goal of one second.
///
/// The file is what a year of work leaves: 365 days of figures and, as the store keeps them, the last
/// 90 days of points (8 working hours a day at 1 Hz, 2.6 million points); older days were recorded at
/// one point every 10 s, which their figures do not tell apart. It is written through `TrackStore`
/// as the daemon writes it, a day per commit, with its pruning.
func statsOverAYear(agrigps: String, work: String) async throws {
    let state = work + "/stats-state"
    try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
    var configuration = TrackStore.Configuration()
    configuration.calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? .current
    let store = TrackStore(path: state + "/track.sqlite", configuration: configuration)
    let first = Date(timeIntervalSince1970: 1_735_714_800)  // 2025-01-01T07:00:00Z
    let qualities: [FixQuality] = [.rtkFixed, .rtkFloat, .dgps, .autonomous]
    var recorded = 0
    let writing = uptime()
    for day in 0..<365 {
        let step = day >= 365 - 90 ? 1 : 10
        let start = first.addingTimeInterval(Double(day) * 86_400)
        for second in stride(from: 0, to: 8 * 3600, by: step) {
            let time = start.addingTimeInterval(Double(second))
            let point = TrackPoint(
                time: time, state: .fix(.threeD, qualities[(second / 3600) % 4]),
                coordinate: Coordinate(latitude: 52 + Double(second) * 1e-6, longitude: 10 + Double(day) * 1e-3),
                altitude: 80, speed: 2)
            try await store.record(point, now: time)
            recorded += 1
        }
        try await store.flush(now: start.addingTimeInterval(8 * 3600))
    }
    let writeSeconds = uptime() - writing
    let bytes =
        ((try? FileManager.default.attributesOfItem(atPath: state + "/track.sqlite"))?[.size] as? NSNumber)?.doubleValue
        ?? 0
    print(
        String(
            format:
                "track file for a year: %d points recorded in %.1f s (%.0f a second), %.1f MiB kept (the last 90 days of points and 365 days of figures)",
            recorded, writeSeconds, Double(recorded) / max(writeSeconds, 0.001), bytes / 1_048_576))

    let range = ["--since", "2025-01-01", "--until", "2025-12-31", "--time-zone", "UTC", "--state-dir", state]
    for (label, arguments, lines) in [
        ("stats --by month", ["stats", "--by", "month"] + range, 13),
        ("stats --by day", ["stats", "--by", "day"] + range, 366),
        (
            "track --format gpx, the last day (28,800 points)",
            [
                "track", "--format", "gpx", "--since", "2025-12-31", "--until", "2025-12-31", "--time-zone", "UTC",
                "--state-dir", state,
            ], 28_800 + 8
        ),
    ] {
        var seconds: [Double] = []
        for run in 0..<5 {
            let output = work + "/stats-\(run).out"
            let started = uptime()
            let process = try ChildProcess(
                executable: agrigps, arguments: arguments, environment: ["PATH": "/usr/bin:/bin"],
                outputPath: output, errorPath: work + "/stats.err")
            let code = await process.wait(timeout: 120)
            seconds.append(uptime() - started)
            let printed = ((try? String(contentsOfFile: output, encoding: .utf8)) ?? "").split(separator: "\n").count
            guard code == 0, printed == lines else {
                print(
                    "\(label): exit \(code.map(String.init) ?? "none"), \(printed) lines instead of \(lines); no figure"
                )
                return
            }
        }
        seconds.sort()
        print(
            String(
                format: "agrigps %@ over a year: median %.3f s, slowest %.3f s of 5 runs   goal 1 s (ratio %.2f)",
                label, seconds[2], seconds[4], seconds[2]))
    }
}
