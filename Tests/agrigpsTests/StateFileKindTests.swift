import Foundation
import Spool
import StateFiles
import TestSupport
import Testing

/// Anything in the state directory may have been replaced: by a FIFO, whose open waits for a writer
/// for ever; by a device; by a symbolic link to a file elsewhere, which a write would go through.
/// Every reader and writer refuses such a file in words, at once.
@Suite("state files that are not regular files", .serialized, .timeLimit(.minutes(5)))
struct StateFileKindTests {
    enum Kind: String, CaseIterable {
        case fifo, linkOut = "link out of the directory", device = "device node"
    }

    /// A state directory in `scratch` with a spool in it, and one of its files replaced by `kind`;
    /// also the file outside that a link points to, which must stay as it was.
    func planted(_ file: String, as kind: Kind, in scratch: TemporaryDirectory) async throws -> (
        state: String, outside: String
    ) {
        let root = scratch.path
        let state = root + "/state"
        try FileManager.default.createDirectory(atPath: state, withIntermediateDirectories: true)
        if file != "spool.sqlite" && !file.hasPrefix("spool.sqlite-") {
            _ = await Spool(path: state + "/spool.sqlite").append(
                Samples.fix(latitude: 52, longitude: 8, quality: .autonomous))
        }
        let outside = root + "/outside.txt"
        try Data("not agrigps's\n".utf8).write(to: URL(fileURLWithPath: outside))
        let path = state + "/" + file
        try? FileManager.default.removeItem(atPath: path)
        let made: Int32
        switch kind {
        case .fifo: made = mkfifo(path, 0o600)
        case .linkOut: made = symlink(outside, path)
        case .device: made = mknod(path, S_IFCHR | 0o600, dev_t((1 << 8) | 3))  // /dev/null: major 1, minor 3
        }
        #expect(made == 0, "cannot make \(kind.rawValue) at \(path): errno \(errno) (these tests run as root)")
        return (state, outside)
    }

    @Test(
        "status, track and stats end at once and name the file when one is a FIFO, a link out of the directory or a device"
    )
    func readers() async throws {
        for file in [
            "spool.sqlite", "spool.sqlite-wal", "spool.sqlite-mark", "others.sqlite", "track.sqlite", "heartbeat.json",
            "endpoint.json",
        ] {
            for kind in Kind.allCases {
                let scratch = TemporaryDirectory("kinds")
                let (state, outside) = try await planted(file, as: kind, in: scratch)
                let commands: [[String]] =
                    file == "track.sqlite"
                    ? [["track", "--format", "csv"], ["stats"]] : [["status"], ["status", "--json"]]
                for command in commands {
                    let result = try await AgrigpsCommand.run(command + ["--state-dir", state], timeout: 20)
                    let said = (result.stdout + result.stderr).joined(separator: "\n")
                    #expect(
                        result.code != nil && result.code != 0,
                        "\(command) with \(file) a \(kind.rawValue): exit \(String(describing: result.code))")
                    let named =
                        said.contains(file + " is not a regular file") || said.contains(file + " is a symbolic link")
                    #expect(named, "\(command) with \(file) a \(kind.rawValue) did not say so: \(said.prefix(600))")
                }
                #expect(
                    try String(contentsOfFile: outside, encoding: .utf8) == "not agrigps's\n",
                    "\(file) as a link: the file outside was changed")
            }
        }
    }

    /// The daemon run over the long-enough replay with `file` planted as `kind` in `scratch`: its
    /// exit, what it said, and the state directory.
    func daemon(with file: String, as kind: Kind, in scratch: TemporaryDirectory, timeout: Double) async throws -> (
        code: Int32?, said: String, state: String, outside: String
    ) {
        let (state, outside) = try await planted(file, as: kind, in: scratch)
        let run = try await AgrigpsCommand.run(
            ["run", "--replay", Fixtures.log("ublox-8"), "--state-dir", state], timeout: timeout)
        return (run.code, (run.stdout + run.stderr).joined(separator: "\n"), state, outside)
    }

    @Test(
        "the daemon writes no heartbeat or commit mark into a FIFO, a device or a link; it says so, samples on, and ends on its own"
    )
    func daemonSideFiles() async throws {
        for file in ["heartbeat.json", "spool.sqlite-mark"] {
            for kind in Kind.allCases {
                let scratch = TemporaryDirectory("kinds")
                let run = try await daemon(with: file, as: kind, in: scratch, timeout: 60)
                #expect(
                    run.code == 0,
                    "\(file) a \(kind.rawValue): exit \(String(describing: run.code)): \(run.said.suffix(600))")
                #expect(
                    run.said.contains("\(file) is not a regular file")
                        || run.said.contains("\(file) is a symbolic link"),
                    "\(file) a \(kind.rawValue): nothing said about it: \(run.said.suffix(600))")
                let samples = try await Spool(path: run.state + "/spool.sqlite").allSamples()
                #expect(samples.count > 2, "\(file) a \(kind.rawValue): only \(samples.count) samples")
                #expect(try String(contentsOfFile: run.outside, encoding: .utf8) == "not agrigps's\n")
            }
        }
    }

    @Test("a lock file that is not a regular file stops the daemon at start with a message naming it")
    func daemonLock() async throws {
        for kind in Kind.allCases {
            let scratch = TemporaryDirectory("kinds")
            let run = try await daemon(with: "agrigps.lock", as: kind, in: scratch, timeout: 30)
            #expect(run.code != nil && run.code != 0, "lock a \(kind.rawValue): exit \(String(describing: run.code))")
            #expect(run.said.contains("agrigps.lock"), "lock a \(kind.rawValue): \(run.said.suffix(400))")
            #expect(try String(contentsOfFile: run.outside, encoding: .utf8) == "not agrigps's\n")
        }
    }

    @Test(
        "a temporary file a killed writer left beside a state file goes with the next write of that file, once a minute old; a backup made by hand stays"
    )
    func leftoversGo() throws {
        let temporary = TemporaryDirectory("leftovers")
        let state = temporary.path
        let old = Date().addingTimeInterval(-120)
        let kept: Set = [
            "endpoint.json.agrigps-new-Young1", "endpoint.json.agrigps-new-toolong7", "others.json.agrigps-new-Xy34Zw",
            "endpoint.json.backup", "endpoint.json.Ab12Cd",
        ]
        for name in kept.union(["endpoint.json.agrigps-new-Ab12Cd"]) {
            try Data("{".utf8).write(to: URL(fileURLWithPath: state + "/" + name))
            if !name.hasSuffix("Young1") {
                try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: state + "/" + name)
            }
        }
        try StateFile.replace(state + "/endpoint.json", with: Array("{}".utf8))
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: state))
        #expect(left == kept.union(["endpoint.json"]), "\(left)")
    }

    @Test("under umask 000, every file the daemon and set-password make is private: 0600, the heartbeat 0640")
    func privateWhateverTheUmask() async throws {
        let scratch = TemporaryDirectory("umask")
        let state = scratch.file("state")
        let run = try await SystemTool.run(
            "/bin/sh",
            [
                "-c", "umask 000; exec \"$0\" run --replay \"$1\" --state-dir \"$2\"",
                AgrigpsCommand.path, Fixtures.log("ublox-8"), state,
            ], timeout: 60)
        #expect(run.code == 0, "\(run.output.suffix(600))")
        let password = try await SystemTool.run(
            "/bin/sh",
            [
                "-c", "umask 000; echo tractor-cab-2026 | exec \"$0\" web set-password --state-dir \"$1\"",
                AgrigpsCommand.path, state,
            ], timeout: 30)
        #expect(password.code == 0, "\(password.output)")
        let files = try FileManager.default.contentsOfDirectory(atPath: state)
        #expect(
            files.contains("spool.sqlite") && files.contains("heartbeat.json") && files.contains("web-password"),
            "\(files)")
        for file in files {
            let mode = try #require(
                try FileManager.default.attributesOfItem(atPath: state + "/" + file)[.posixPermissions] as? Int)
            #expect(mode == (file == "heartbeat.json" ? 0o640 : 0o600), "\(file) is \(String(mode, radix: 8))")
        }
    }
}
