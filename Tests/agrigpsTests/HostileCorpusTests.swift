import Foundation
import TestSupport
import Testing

/// Every reproducer in Fixtures/hostile, through the command that reads it: a clear error or a
/// clean run, within its time, and never a raw control character on the terminal.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct HostileCorpusTests {
    static let corpus = Fixtures.nmeaDirectory.deletingLastPathComponent().appendingPathComponent("hostile")

    static func files(_ folder: String) -> [String] {
        let directory = corpus.appendingPathComponent(folder)
        return ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).sorted().map {
            directory.appendingPathComponent($0).path
        }
    }

    func expectClean(_ result: (code: Int32?, stdout: [String], stderr: [String]), _ label: String) {
        let output = (result.stdout + result.stderr).joined(separator: "\n")
        #expect(
            !output.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" } && !output.contains("Fatal error"),
            "\(label): \(output)")
    }

    @Test("each configuration file is refused in one line naming the problem: status says UNKNOWN (3), others exits 78")
    func configurations() async throws {
        let files = Self.files("config")
        #expect(files.count >= 7)
        let scratch = TemporaryDirectory("corpus")
        let state = scratch.file("state")
        for file in files {
            let status = try await AgrigpsCommand.run(["status", "--config", file, "--state-dir", state], timeout: 20)
            #expect(
                status.code == 3 && status.stdout.count == 1 && status.stdout.first?.hasPrefix("UNKNOWN: ") == true,
                "\(file): \(status)")
            let others = try await AgrigpsCommand.run(["others", "--config", file, "--state-dir", state], timeout: 20)
            #expect(others.code == 78 && others.stderr.count == 1, "\(file): \(others)")
            expectClean(status, file)
            expectClean(others, file)
        }
    }

    @Test(
        "each log replays to its end, or ends early with exit 70, in bounded time; no altitude out of range comes out")
    func logs() async throws {
        let files = Self.files("logs")
        #expect(files.count >= 4)
        for file in files {
            let started = Date()
            let result = try await AgrigpsCommand.run(["replay", file, "--every-report", "--json"], timeout: 30)
            #expect(
                result.code == 0 || result.code == 70,
                "\(file): exit \(String(describing: result.code)), \(result.stderr)")
            #expect(Date().timeIntervalSince(started) < 20, "\(file) took \(Date().timeIntervalSince(started)) s")
            expectClean(result, file)
            for line in result.stdout {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                for key in ["alt_hae", "alt_msl"] {
                    if let altitude = object?[key] as? Double {
                        #expect(altitude < 100_000, "\(file): \(key) \(altitude)")
                    }
                }
            }
        }
    }

    @Test("each heartbeat file gives a status with a Nagios code, its numbers out of range shown as unknown")
    func heartbeats() async throws {
        #expect(!Self.files("heartbeat").isEmpty)
        for file in Self.files("heartbeat") {
            let scratch = TemporaryDirectory("corpus")
            let state = scratch.path
            try FileManager.default.copyItem(atPath: file, toPath: state + "/heartbeat.json")
            for arguments in [["status"], ["status", "--json"], ["others"]] {
                let result = try await AgrigpsCommand.run(arguments + ["--state-dir", state], timeout: 20)
                #expect(result.code.map { (0...3).contains($0) } == true, "\(file) \(arguments): \(result)")
                expectClean(result, file)
            }
        }
    }
}
