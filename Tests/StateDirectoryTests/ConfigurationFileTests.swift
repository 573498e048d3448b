import Foundation
import Spool
import Testing
import Track

@testable import StateDirectory

@Suite("Configuration file")
struct ConfigurationFileTests {
    @Test("a full file: every value read, thresholds merged over the defaults")
    func fullFile() throws {
        let file = try ConfigurationFile.parse(
            """
            [gpsd]
            address = "192.0.2.1:2947"
            [sampling]
            interval = 5
            [sending]
            interval = 20
            spacing = 5.5
            [agrirouter]
            environment = "production"
            application_id = "app"
            certification_version_id = "version"
            [spool]
            max_samples = 100000
            max_megabytes = 32
            max_age_days = 7
            [others]
            stale_after = 120
            feed_query_interval = 1800
            history_hours = 48
            [status]
            heartbeat_limit = 90
            fix_age_warning = 30
            queue_age_critical = 7200
            """, path: "agrigps.conf")
        #expect(file.text("gpsd", "address") == "192.0.2.1:2947")
        #expect(file.number("sampling", "interval") == 5 && file.number("sending", "spacing") == 5.5)
        #expect(file.text("agrirouter", "environment") == "production")
        #expect(file.number("spool", "max_samples") == 100_000 && file.number("others", "history_hours") == 48)
        var expected = StatusThresholds()
        expected.heartbeatLimit = 90
        expected.fixAgeWarning = 30
        expected.queueAgeCritical = 7200
        expected.staleAfter = 120
        #expect(file.thresholds == expected)
    }

    @Test("a file saved with a UTF-8 byte-order mark (as Windows editors do) is read as without it")
    func byteOrderMark() throws {
        let file = try ConfigurationFile.parse("\u{FEFF}[sending]\ninterval = 20\n", path: "bom.conf")
        #expect(file.values.count == 1, "\(file.values)")
        let inside = #expect(throws: ConfigurationError.self) {
            try ConfigurationFile.parse("[sending]\n\u{FEFF}interval = 20\n", path: "x")
        }
        #expect(
            inside?.description.contains("\u{FEFF}") == false,
            "an invisible character printed raw: \(String(describing: inside))")
    }

    @Test("an empty file, or none, is all defaults")
    func defaults() throws {
        #expect(try ConfigurationFile.parse("", path: "x").values.isEmpty)
        #expect(
            try ConfigurationFile.load(path: "/nonexistent/agrigps.conf", required: false).thresholds
                == StatusThresholds())
        #expect(throws: ConfigurationError(path: "/nonexistent/agrigps.conf", key: "", problem: "no such file")) {
            try ConfigurationFile.load(path: "/nonexistent/agrigps.conf", required: true)
        }
    }

    @Test("[publishing] formats takes a list: both by default, or either alone")
    func formats() throws {
        #expect(try ConfigurationFile.parse("", path: "a").outputs == [.gpsInfo, .efdi])
        #expect(try ConfigurationFile.parse("[publishing]\nformats = [\"efdi\"]", path: "a").outputs == [.efdi])
        #expect(
            try ConfigurationFile.parse("[publishing]\nformats = ['gps_info',] # gps:info only", path: "a").outputs == [
                .gpsInfo
            ])
        #expect(
            try ConfigurationFile.parse("[publishing]\nformats = [ \"efdi\" , \"gps_info\" ]", path: "a").outputs == [
                .gpsInfo, .efdi,
            ])
    }

    @Test(
        "[publishing] profile = \"live\" sends every 5 s unless [sending] interval says otherwise; anything else is refused"
    )
    func liveProfile() throws {
        #expect(try ConfigurationFile.parse("", path: "a").defaultSendInterval == 10)
        #expect(
            try ConfigurationFile.parse("[publishing]\nprofile = \"standard\"", path: "a").defaultSendInterval == 10)
        #expect(try ConfigurationFile.parse("[publishing]\nprofile = \"live\"", path: "a").defaultSendInterval == 5)
        #expect(
            throws: ConfigurationError(
                path: "a", key: "[publishing] profile", problem: "must be \"standard\" or \"live\", got \"fast\"")
        ) {
            try ConfigurationFile.parse("[publishing]\nprofile = \"fast\"", path: "a")
        }
    }

    @Test(
        "[gnss] source: gpsd by default, a CAN interface with or without the receiver's address; anything else refused")
    func receiverSource() throws {
        #expect(try ConfigurationFile.parse("", path: "a").receiverSource == .gpsd)
        #expect(
            try ConfigurationFile.parse("[gnss]\nsource = \"nmea2000://can0\"", path: "a").receiverSource
                == .nmea2000(interface: "can0", address: nil))
        #expect(
            try ConfigurationFile.parse("[gnss]\nsource = \"nmea2000://can1:28\"", path: "a").receiverSource
                == .nmea2000(interface: "can1", address: 28))
        for (text, problem) in [
            (
                "usb",
                #"must be "gpsd", or "nmea2000://IFACE" or "nmea2000://IFACE:ADDRESS" with a CAN interface such as can0 and an address from 0 to 253, got "usb""#
            ),
            (
                "nmea2000://can0:254",
                #"the receiver's address must be a number from 0 to 253, got "nmea2000://can0:254""#
            ),
            ("nmea2000://can0:-1", #"the receiver's address must be a number from 0 to 253, got "nmea2000://can0:-1""#),
            (
                "nmea2000://",
                #"'' is not a network interface name (1 to 15 letters, digits, '-', '_' or '.'), got "nmea2000://""#
            ),
            (
                "nmea2000://can0/x",
                #"'can0/x' is not a network interface name (1 to 15 letters, digits, '-', '_' or '.'), got "nmea2000://can0/x""#
            ),
        ] {
            #expect(throws: ConfigurationError(path: "a", key: "[gnss] source", problem: problem)) {
                try ConfigurationFile.parse("[gnss]\nsource = \"\(text)\"", path: "a")
            }
        }
        #expect(
            throws: FlagError(
                description:
                    #"--source the receiver's address must be a number from 0 to 253, got 'nmea2000://can0:300'"#)
        ) {
            try ConfigurationFile.checkTextFlag("--source", "nmea2000://can0:300", section: "gnss", name: "source")
        }
    }

    @Test("[machine]: the work signals and the minimum speed, each by its rule, and their flags by the same")
    func machine() throws {
        let file = try ConfigurationFile.parse(
            "[machine]\nwork_signals = [\"rear-hitch\", \"switch\"]\nminimum_speed = 2.5", path: "a")
        #expect(
            file.list("machine", "work_signals") == ["rear-hitch", "switch"]
                && file.number("machine", "minimum_speed") == 2.5)
        let allowed =
            #"must be a list of one or more of "rear-hitch", "front-hitch", "rear-pto", "front-pto", "implement-operations", "switch", each once"#
        for (text, problem) in [
            ("work_signals = [\"plough\"]", allowed + #", got ["plough"]"#),
            ("work_signals = [\"switch\", \"switch\"]", allowed + #", got ["switch", "switch"]"#),
            ("minimum_speed = 0", "must be a number of km/h from 0.1 to 20, got 0"),
            ("minimum_speed = 50", "must be a number of km/h from 0.1 to 20, got 50"),
        ] {
            let key = text.hasPrefix("work") ? "[machine] work_signals" : "[machine] minimum_speed"
            #expect(throws: ConfigurationError(path: "a", key: key, problem: problem)) {
                try ConfigurationFile.parse("[machine]\n" + text, path: "a")
            }
        }
        #expect(
            try ConfigurationFile.checkListFlag(
                "--work-signals", " rear-pto , switch", section: "machine", name: "work_signals") == [
                    "rear-pto", "switch",
                ])
        #expect(throws: FlagError(description: "--work-signals " + allowed + ", got 'rear-pto,,switch'")) {
            try ConfigurationFile.checkListFlag(
                "--work-signals", "rear-pto,,switch", section: "machine", name: "work_signals")
        }
        #expect(
            throws: FlagError(description: "--minimum-work-speed must be a number of km/h from 0.1 to 20, got '30'")
        ) {
            try ConfigurationFile.checkFlag("--minimum-work-speed", "30", section: "machine", name: "minimum_speed")
        }
    }

    @Test(
        "each kind of mistake names the key and what is allowed",
        arguments: [
            ("[sampling\ninterval = 1", "", "line 1: a section header is [name]"),
            (
                "[tractor]\nname = \"x\"", "[tractor]",
                "unknown section; the sections are [agrirouter], [gnss], [gpsd], [machine], [others], [publishing], [sampling], [sending], [spool], [status]"
            ),
            ("sampling = 1", "", "line 1: sampling is outside any section"),
            ("[[[", "", "line 1: arrays of tables ([[...]]) are not used here"),
            ("[sampling]\ninterval = 1\u{0}\n[bogus]", "", "line 2: a NUL byte: the file is damaged or not text"),
            ("[sampling]\ninterval = 1\ninterval = 2", "", "line 3: [sampling] interval is set twice"),
            ("[sampling]\ninterval = [1, 2]", "", "line 2: an array here is text in quotes on one line"),
            ("[publishing]\nformats = [\"efdi\"", "", "line 2: expected , or ] after \"efdi\" in the array"),
            (
                "[publishing]\nformats = []", "[publishing] formats",
                "must be a list of one or more of \"gps_info\", \"efdi\", each once, got []"
            ),
            (
                "[publishing]\nformats = [\"gps_info\", \"gps_info\"]", "[publishing] formats",
                "must be a list of one or more of"
            ),
            (
                "[publishing]\nformats = [\"kml\"]", "[publishing] formats",
                "must be a list of one or more of \"gps_info\", \"efdi\", each once, got [\"kml\"]"
            ),
            ("[publishing]\nformats = \"efdi\"", "[publishing] formats", "must be a list of one or more of"),
            (
                "[sampling]\ninterval = [\"1\"]", "[sampling] interval",
                "must be a number of seconds from 0.1 to 3600, got [\"1\"]"
            ),
            ("[sampling]\ninterval = { a = 1 }", "", "line 2: inline tables are not used here"),
            ("[sampling]\nsampling.interval = 1", "", "line 2: dotted keys are not used here"),
            ("[sampling]\ninterval = 1979-05-27", "", "line 2: 1979-05-27 is not a value"),
            ("[sampling]\ninterval = \"\"\"1\"\"\"", "", "line 2: multi-line strings are not used here"),
            ("[sampling]\ninterval = \"1", "", "line 2: the string has no closing \""),
            ("[sampling]\ninterval = 99999999999999999999", "", "line 2: 99999999999999999999 is not a value"),
            (
                "[sampling]\ninterval = 1e-10", "[sampling] interval",
                "must be a number of seconds from 0.1 to 3600, got 1e-10"
            ),
            ("[sampling]\ninterval = 1.", "", "line 2: 1. is not a value"),
            ("[spool]\nmax_samples = 0x-5", "", "line 2: 0x-5 is not a value"),
            ("[gpsd]\naddress = \"127.0.0.1\\u0000:2947\"", "", "line 2: a \\u escape of a control character"),
            ("[gpsd]\naddress = \"\\u+123\"", "", "line 2: a \\u escape needs hexadecimal digits"),
            (
                "[sampling]\ninterval = inf", "[sampling] interval",
                "must be a number of seconds from 0.1 to 3600, got inf"
            ),
            (
                "[sampling]\ninterval = nan", "[sampling] interval",
                "must be a number of seconds from 0.1 to 3600, got nan"
            ),
            (
                "[sending]\nspacing = 1e300", "[sending] spacing",
                "must be a number of seconds from 0 to 600, got 1e+300"
            ),
            ("[agrirouter]\napplication_id = \"a\\u001b[2Jb\\nc\"", "", "line 2: a \\u escape of a control character"),
            (
                "[agrirouter]\napplication_id = \"a\\tb\\nc\"", "[agrirouter] application_id",
                "must be at most 200 characters with no control characters, got \"a\\tb\\nc\""
            ),
            (
                "[spool]\nmax_samples = 0x7fffffffffffffff", "[spool] max_samples",
                "must be a whole number from 1000 to 100000000, got 9223372036854775807"
            ),
            ("[sampling]\nrate = 1", "[sampling] rate", "unknown key; [sampling] takes interval"),
            (
                "[sampling]\ninterval = \"fast\"", "[sampling] interval",
                "must be a number of seconds from 0.1 to 3600, got \"fast\""
            ),
            ("[sampling]\ninterval = 0", "[sampling] interval", "must be a number of seconds from 0.1 to 3600, got 0"),
            (
                "[spool]\nmax_samples = 1.5", "[spool] max_samples",
                "must be a whole number from 1000 to 100000000, got 1.5"
            ),
            (
                "[agrirouter]\nenvironment = \"staging\"", "[agrirouter] environment",
                "must be \"qa\" or \"production\", got \"staging\""
            ),
            (
                "[agrirouter]\napplication_id = \"  \"", "[agrirouter] application_id",
                "must be a non-empty string, got \"  \""
            ),
            ("[gpsd]\naddress = 2947", "[gpsd] address", "must be a string \"host:port\", got 2947"),
            (
                "[gpsd]\naddress = \"localhost:0\"", "[gpsd] address",
                "'0' is not a valid port; use a number from 1 to 65535"
            ),
            (
                "[status]\nqueue_age_warning = 5000", "[status] queue_age_warning",
                "must be less than [status] queue_age_critical (3600), got 5000"
            ),
        ])
    func mistakes(text: String, key: String, problem: String) {
        #expect(throws: ConfigurationError.self) { try ConfigurationFile.parse(text, path: "agrigps.conf") }
        do {
            _ = try ConfigurationFile.parse(text, path: "agrigps.conf")
        } catch {
            #expect(error.key == key)
            #expect(error.problem.hasPrefix(problem), "\(error.problem)")
            #expect(!error.description.contains("\n") && !error.description.contains("\u{1B}"), "\(error.description)")
        }
    }

    @Test("a value of a million characters is refused in a line of bounded length")
    func hugeValue() {
        let text = "[agrirouter]\napplication_id = \"" + String(repeating: "x", count: 1_000_000) + "\""
        do {
            _ = try ConfigurationFile.parse(text, path: "agrigps.conf")
            Issue.record("a 1 MB file was accepted")
        } catch {
            #expect(error.description.count < 300, "\(error.description.count) characters")
        }
        let long = "[agrirouter]\napplication_id = \"" + String(repeating: "y", count: 5_000) + "\""
        do {
            _ = try ConfigurationFile.parse(long, path: "agrigps.conf")
            Issue.record("a 5000-character id was accepted")
        } catch {
            #expect(error.description.count < 300 && error.description.contains("more)"), "\(error.description)")
        }
    }

    @Test("a file saved with Windows line ends reads as the same file, comments first or not")
    func windowsLineEnds() throws {
        let example = try String(contentsOfFile: ExampleConfigurationTests.path, encoding: .utf8)
        let crlf = example.replacingOccurrences(of: "\n", with: "\r\n")
        #expect(try ConfigurationFile.parse(crlf, path: "x") == ConfigurationFile.parse(example, path: "x"))
        let file = try ConfigurationFile.parse("[sampling]\r\ninterval = 5\r\n# done\r\n", path: "x")
        #expect(file.number("sampling", "interval") == 5)
        #expect(throws: ConfigurationError.self) {
            try ConfigurationFile.parse("# x\r\n[sampling]\r\ninterval = 1e-10\r\n", path: "x")
        }
    }

    @Test("TOML's own spellings of numbers and strings are read as TOML reads them")
    func spellings() throws {
        let file = try ConfigurationFile.parse(
            """
            # a comment
            [sampling]   # another
            interval = 1_0.5
            [spool]
            max_samples = 0x1_86A0
            max_megabytes = +64
            [agrirouter]
            application_id = 'lit\\eral'
            certification_version_id = "t\\u00e9st\\"q"
            """, path: "x")
        #expect(file.number("sampling", "interval") == 10.5)
        #expect(file.number("spool", "max_samples") == 100_000 && file.number("spool", "max_megabytes") == 64)
        #expect(file.text("agrirouter", "application_id") == "lit\\eral")
        #expect(file.text("agrirouter", "certification_version_id") == "tést\"q")
    }

    @Test("a flag is checked by its key's rule, with the flag's name in the message")
    func flags() throws {
        #expect(try ConfigurationFile.checkFlag("--interval", "5", section: "sampling", name: "interval") == 5)
        for (flag, text, section, name, message) in [
            (
                "--interval", "1e-10", "sampling", "interval",
                "--interval must be a number of seconds from 0.1 to 3600, got '1e-10'"
            ),
            (
                "--spacing", "inf", "sending", "spacing",
                "--spacing must be a number of seconds from 0 to 600, got 'inf'"
            ),
            (
                "--spacing", "1e300", "sending", "spacing",
                "--spacing must be a number of seconds from 0 to 600, got '1e300'"
            ),
            (
                "--history-hours", "nan", "others", "history_hours",
                "--history-hours must be a number of hours from 1 to 720, got 'nan'"
            ),
            (
                "--interval", "\u{1B}[2J", "sampling", "interval",
                "--interval must be a number of seconds from 0.1 to 3600, got '\\x1b[2J'"
            ),
        ] {
            #expect(throws: FlagError(description: message)) {
                try ConfigurationFile.checkFlag(flag, text, section: section, name: name)
            }
        }
    }

    @Test(
        "the own track's time zone, retention and cap; a zone is a name from the tz database, for the key and its flag alike"
    )
    func track() throws {
        let file = try ConfigurationFile.parse(
            """
            [track]
            time_zone = "America/Chicago"
            retention_days = 30
            max_points = 2000000
            """, path: "x")
        let track = file.trackConfiguration
        #expect(track.calendar.timeZone.identifier == "America/Chicago")
        #expect(track.retention == 30 * 86_400 && track.maximumPoints == 2_000_000)
        #expect(
            ConfigurationFile(path: "none").trackConfiguration == TrackStore.Configuration(), "no file: the defaults")
        #expect(
            throws: ConfigurationError(
                path: "x", key: "[track] time_zone",
                problem:
                    #"must be a time zone name from the tz database, such as "Europe/Berlin" or "UTC", got "Mars/Olympus""#
            )
        ) {
            try ConfigurationFile.parse("[track]\ntime_zone = \"Mars/Olympus\"", path: "x")
        }
        #expect(throws: ConfigurationError.self) { try ConfigurationFile.parse("[track]\ntime_zone = 2", path: "x") }
        #expect(throws: ConfigurationError.self) {
            try ConfigurationFile.parse("[track]\nretention_days = 0", path: "x")
        }
        #expect(throws: ConfigurationError.self) {
            try ConfigurationFile.parse("[track]\nmax_points = 10.5", path: "x")
        }
        #expect(
            try ConfigurationFile.checkTextFlag("--time-zone", "Asia/Kolkata", section: "track", name: "time_zone")
                == "Asia/Kolkata")
        #expect(
            throws: FlagError(
                description:
                    #"--time-zone must be a time zone name from the tz database, such as "Europe/Berlin" or "UTC", got 'Berlin'"#
            )
        ) {
            try ConfigurationFile.checkTextFlag("--time-zone", "Berlin", section: "track", name: "time_zone")
        }
    }
}

@Suite("The example configuration")
struct ExampleConfigurationTests {
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("config/agrigps.conf").path

    @Test("it parses, gives every default, and mentions every key")
    func example() throws {
        let file = try ConfigurationFile.load(path: Self.path, required: true)
        #expect(file.thresholds == StatusThresholds())
        #expect(file.number("sampling", "interval") == 1 && file.number("sending", "interval") == 10)
        #expect(file.number("spool", "max_samples") == 500_000 && file.number("others", "history_hours") == 24)
        let text = try String(contentsOfFile: Self.path, encoding: .utf8)
        for key in ConfigurationFile.keys {
            #expect(text.contains("[\(key.section)]") && text.contains("\(key.name) = "), "\(key.section).\(key.name)")
        }
    }
}
