import ChildProcesses
import Foundation
import GPSDReplay
import TestSupport
import Testing

/// `make deb` and `make install`, run on the debug binary the tests already have (BIN=…), so the
/// package's layout is checked without a release build.
@Suite("Packaging", .serialized, .timeLimit(.minutes(6)))
struct PackagingTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// `timeout` bounds a hung command, not its speed: `make deb` strips and compresses two debug
    /// binaries of 50 MB and more, which beside other tests on two cores took over a minute.
    func run(_ executable: String, _ arguments: [String], in directory: String, timeout: Double = 60) async throws -> (
        code: Int32?, output: String
    ) {
        try await SystemTool.run(executable, arguments, timeout: timeout)
    }

    @Test(
        "make deb builds a package with the binary, the units, the udev rule and the configuration, which unpacks and runs"
    )
    func deb() async throws {
        let scratch = TemporaryDirectory("package")
        let work = scratch.path
        let made = try await run(
            "/usr/bin/make", ["-C", Self.root, "deb", "BIN=\(AgrigpsCommand.path)", "DIST=\(work)/dist"], in: work,
            timeout: 300)
        try #require(made.code == 0, "\(made.output)")
        let debs = try FileManager.default.contentsOfDirectory(atPath: work + "/dist").filter { $0.hasSuffix(".deb") }
        #expect(debs.count == 1 && debs.first?.hasPrefix("agrigps_0.2.0_") == true, "\(debs)")
        let deb = work + "/dist/" + (debs.first ?? "")

        let info = try await run("/usr/bin/dpkg-deb", ["--info", deb], in: work).output
        for line in [
            "Package: agrigps", "Version: 0.2.0",
            "Depends: libc6 (>= 2.36), gpsd (>= 3.22-4.1+deb12u1), libgps28, libcurl4, libmosquitto1, libssl3, libsqlite3-0, zlib1g, libjs-leaflet, adduser, init-system-helpers, iproute2",
        ] {
            #expect(info.contains(" \(line)\n"), "\(line)")
        }
        #expect(
            info.contains("postinst") && info.contains("prerm") && info.contains("postrm") && info.contains("conffiles")
        )

        let contents = try await run("/usr/bin/dpkg-deb", ["--contents", deb], in: work).output.split(separator: "\n")
        let files = Dictionary(
            uniqueKeysWithValues: contents.compactMap { line -> (String, String)? in
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard let path = fields.last, !path.hasSuffix("/") else { return nil }
                return (String(path), "\(fields[0]) \(fields[1])")
            })
        #expect(
            files == [
                "./usr/bin/agrigps": "-rwxr-xr-x root/root",
                "./usr/bin/agrigps-web": "-rwxr-xr-x root/root",
                "./lib/systemd/system/agrigps.service": "-rw-r--r-- root/root",
                "./lib/systemd/system/agrigps-web.service": "-rw-r--r-- root/root",
                "./lib/systemd/system/agrigps-can@.service": "-rw-r--r-- root/root",
                "./usr/lib/agrigps/agrigps-can-up": "-rwxr-xr-x root/root",
                "./lib/udev/rules.d/61-agrigps.rules": "-rw-r--r-- root/root",
                "./etc/agrigps/agrigps.conf": "-rw-r--r-- root/root",
            ])

        // Into a temporary root: the files are the repository's, and the binary runs from there.
        let root = work + "/root"
        #expect(try await run("/usr/bin/dpkg-deb", ["-x", deb, root], in: work).code == 0)
        let unit = try String(contentsOfFile: root + "/lib/systemd/system/agrigps.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/agrigps run"))
        let webUnit = try String(contentsOfFile: root + "/lib/systemd/system/agrigps-web.service", encoding: .utf8)
        #expect(webUnit.contains("ExecStart=/usr/bin/agrigps-web\n"))
        #expect(
            FileManager.default.contentsEqual(
                atPath: root + "/etc/agrigps/agrigps.conf", andPath: Self.root + "/config/agrigps.conf"))
        let version = try await run(root + "/usr/bin/agrigps", ["--version"], in: work)
        #expect(version.code == 0 && version.output == "0.2.0\n")
        // `agrigps web` finds the cab view's program beside it.
        let web = try await run(root + "/usr/bin/agrigps", ["web", "--help"], in: work)
        #expect(web.code == 0 && web.output.contains("USAGE: agrigps web"), "\(web.output)")
        let control = root + "/control"
        #expect(try await run("/usr/bin/dpkg-deb", ["-e", deb, control], in: work).code == 0)
        #expect(try String(contentsOfFile: control + "/conffiles", encoding: .utf8) == "/etc/agrigps/agrigps.conf\n")
        for script in ["postinst", "prerm", "postrm"] {
            #expect(try await run("/bin/sh", ["-n", control + "/" + script], in: work).code == 0, "\(script) parses")
        }
        let postinst = try String(contentsOfFile: control + "/postinst", encoding: .utf8)
        #expect(
            postinst.contains("adduser --system --group")
                && postinst.contains("deb-systemd-helper enable agrigps.service")
                && postinst.contains("deb-systemd-helper enable agrigps-web.service"))
    }

    @Test("make install puts the files under DESTDIR, with the unit pointing at PREFIX")
    func install() async throws {
        let scratch = TemporaryDirectory("package")
        let work = scratch.path
        let made = try await run(
            "/usr/bin/make",
            ["-C", Self.root, "install", "BIN=\(AgrigpsCommand.path)", "DESTDIR=\(work)/root", "PREFIX=/opt/agrigps"],
            in: work, timeout: 300)
        try #require(made.code == 0, "\(made.output)")
        #expect(FileManager.default.isExecutableFile(atPath: work + "/root/opt/agrigps/bin/agrigps"))
        #expect(FileManager.default.isExecutableFile(atPath: work + "/root/opt/agrigps/bin/agrigps-web"))
        #expect(FileManager.default.fileExists(atPath: work + "/root/lib/udev/rules.d/61-agrigps.rules"))
        #expect(FileManager.default.fileExists(atPath: work + "/root/etc/agrigps/agrigps.conf"))
        let unit = try String(contentsOfFile: work + "/root/lib/systemd/system/agrigps.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/opt/agrigps/bin/agrigps run"))
        let webUnit = try String(contentsOfFile: work + "/root/lib/systemd/system/agrigps-web.service", encoding: .utf8)
        #expect(webUnit.contains("ExecStart=/opt/agrigps/bin/agrigps-web\n"))
        let canUnit = try String(
            contentsOfFile: work + "/root/lib/systemd/system/agrigps-can@.service", encoding: .utf8)
        #expect(canUnit.contains("ExecStart=/opt/agrigps/lib/agrigps/agrigps-can-up %I\n"))
        #expect(FileManager.default.isExecutableFile(atPath: work + "/root/opt/agrigps/lib/agrigps/agrigps-can-up"))
        let service = try String(contentsOfFile: work + "/root/lib/systemd/system/agrigps.service", encoding: .utf8)
        #expect(
            service.contains("RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_CAN\n"),
            "the daemon may open its CAN socket")
    }
}
