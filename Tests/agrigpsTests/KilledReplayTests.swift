import Foundation
import TestSupport
import Testing

/// What a replay killed outright leaves behind: no handler runs, so only what was arranged at
/// start-up counts.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct KilledReplayTests {
    @Test("SIGKILLed replays leave no shared-memory segment and no work directory behind")
    func killedReplaysLeaveNothing() async throws {
        let before = SharedMemorySegment.all()
        var gpsds: [pid_t] = []
        var keys: [Int32] = []
        var directories: [String] = []
        for _ in 1...5 {
            let replay = try AgrigpsCommand(["replay", "--real-time", Fixtures.log("telit-he910")])
            defer { replay.cleanUp() }
            try await Task.sleep(for: .seconds(1))
            let started = replay.descendants()
            #expect(started.count == 1, "expected gpsd alone, found \(started)")
            // The instance's key and directory, from what the kernel knows of its gpsd.
            keys += started.compactMap(Self.sharedMemoryKey(of:))
            directories += started.compactMap(Self.workDirectory(of:))
            gpsds += started
            kill(replay.process.pid, SIGKILL)
            #expect(await replay.process.wait(timeout: 10) == 128 + SIGKILL)
            #expect(
                await eventually(within: 5) { started.allSatisfy(Processes.isDead) }, "gpsd outlived a killed agrigps")
        }
        #expect(
            keys.count == 5 && directories.count == 5,
            "could not tell the instances' keys \(keys) or directories \(directories)")
        // Other replays may come and go meanwhile (a concurrent test run): judge ours alone.
        let leaked = SharedMemorySegment.all().filter { segment in
            !before.contains(segment) && (keys.contains(segment.key) || gpsds.contains(segment.creator))
        }
        #expect(leaked.isEmpty, "left behind: \(leaked)")
        #expect(
            directories.allSatisfy { !FileManager.default.fileExists(atPath: $0) },
            "left behind: \(directories.filter { FileManager.default.fileExists(atPath: $0) })")
    }

    /// ReplayGPSD gives each gpsd the key 0x4770_0000 | its port (its `-S` argument).
    private static func sharedMemoryKey(of gpsd: pid_t) -> Int32? {
        guard let raw = try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(gpsd)/cmdline")) else { return nil }
        let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        guard let flag = arguments.firstIndex(of: "-S"), flag + 1 < arguments.count,
            let port = UInt16(arguments[flag + 1])
        else { return nil }
        return Int32(0x4770_0000) | Int32(port)
    }

    /// gpsd's output goes to `gpsd.log` in the replay's work directory; the link says " (deleted)" once it is gone.
    private static func workDirectory(of gpsd: pid_t) -> String? {
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(gpsd)/fd/1"),
            target.hasPrefix("/tmp/agrigps-replay.")
        else { return nil }
        let file = target.hasSuffix(" (deleted)") ? String(target.dropLast(" (deleted)".count)) : target
        return URL(fileURLWithPath: file).deletingLastPathComponent().path
    }
}

/// One line of /proc/sysvipc/shm.
private struct SharedMemorySegment: Equatable, CustomStringConvertible {
    var key: Int32
    var id: Int32
    var creator: pid_t

    var description: String { "key 0x\(String(UInt32(bitPattern: key), radix: 16)) id \(id) creator \(creator)" }

    static func all() -> [SharedMemorySegment] {
        // Whole: with many segments the list is longer than the first page.
        let text = procText("/proc/sysvipc/shm")
        // key shmid perms size cpid lpid nattch ...
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count > 4, let key = Int32(fields[0]), let id = Int32(fields[1]),
                let creator = pid_t(fields[4])
            else { return nil }
            return SharedMemorySegment(key: key, id: id, creator: creator)
        }
    }
}
