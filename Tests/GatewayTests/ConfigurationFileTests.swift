import Foundation
import Testing
@testable import Gateway

@Suite("Configuration file")
struct ConfigurationFileTests {
    @Test("a full file: every value read, thresholds merged over the defaults")
    func fullFile() throws {
        let file = try ConfigurationFile.parse("""
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

    @Test("an empty file, or none, is all defaults")
    func defaults() throws {
        #expect(try ConfigurationFile.parse("", path: "x").values.isEmpty)
        #expect(try ConfigurationFile.load(path: "/nonexistent/agrigps.conf", required: false).thresholds == StatusThresholds())
        #expect(throws: ConfigurationError(path: "/nonexistent/agrigps.conf", key: "", problem: "no such file")) {
            try ConfigurationFile.load(path: "/nonexistent/agrigps.conf", required: true)
        }
    }

    @Test("each kind of mistake names the key and what is allowed", arguments: [
        ("[sampling\ninterval = 1", "", "not valid TOML at line 1"),
        ("[tractor]\nname = \"x\"", "[tractor]", "unknown section; the sections are [agrirouter], [gpsd], [others], [sampling], [sending], [spool], [status]"),
        ("sampling = 1", "sampling", "must be a section, [sampling]"),
        ("[sampling]\nrate = 1", "[sampling] rate", "unknown key; [sampling] takes interval"),
        ("[sampling]\ninterval = \"fast\"", "[sampling] interval", "must be a number of seconds from 0.1 to 3600, got \"fast\""),
        ("[sampling]\ninterval = 0", "[sampling] interval", "must be a number of seconds from 0.1 to 3600, got 0"),
        ("[spool]\nmax_samples = 1.5", "[spool] max_samples", "must be a whole number from 1000 to 100000000, got 1.5"),
        ("[agrirouter]\nenvironment = \"staging\"", "[agrirouter] environment", "must be \"qa\" or \"production\", got \"staging\""),
        ("[agrirouter]\napplication_id = \"  \"", "[agrirouter] application_id", "must be a non-empty string, got \"  \""),
        ("[gpsd]\naddress = 2947", "[gpsd] address", "must be a string \"host:port\", got 2947"),
        ("[gpsd]\naddress = \"localhost:0\"", "[gpsd] address", "'0' is not a valid port; use a number from 1 to 65535"),
        ("[status]\nqueue_age_warning = 5000", "[status] queue_age_warning", "must be less than [status] queue_age_critical (3600), got 5000"),
    ])
    func mistakes(text: String, key: String, problem: String) {
        #expect(throws: ConfigurationError.self) { try ConfigurationFile.parse(text, path: "agrigps.conf") }
        do {
            _ = try ConfigurationFile.parse(text, path: "agrigps.conf")
        } catch {
            #expect(error.key == key)
            #expect(error.problem.hasPrefix(problem), "\(error.problem)")
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
