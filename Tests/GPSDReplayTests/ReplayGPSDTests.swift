import Foundation
import GNSS
import TestSupport
import Testing

@testable import GPSDReplay

@Suite(.serialized, .timeLimit(.minutes(1)))
struct ReplayGPSDTests {
    private func log(_ name: String) throws -> NMEALog { try NMEALog(contentsOf: Fixtures.log(name)) }

    @Test func privateGPSDNeverUsesTheSystemPort() async throws {
        let gpsd = try await ReplayGPSD.start(log: try log("bu353s4"))
        defer { gpsd.stop() }
        #expect(gpsd.address.port != GPSDAddress.defaultPort)
        #expect(gpsd.address.host == "127.0.0.1")
    }

    @Test func stopEndsEveryProcessAndIsIdempotent() async throws {
        var options = ReplayGPSD.Options()
        options.endWithEOF = false
        let gpsd = try await ReplayGPSD.start(log: try log("bu353s4"), options: options)
        #expect(gpsd.processIDs.count == 1)
        #expect(gpsd.processIDs.allSatisfy { !Processes.isGone($0) })
        gpsd.stop()
        gpsd.stop()
        #expect(gpsd.processIDs.allSatisfy(Processes.isGone))
    }

    @Test func droppingTheHarnessStopsGPSD() async throws {
        var pids: [pid_t] = []
        do {
            let gpsd = try await ReplayGPSD.start(log: try log("bu353s4"))
            pids = gpsd.processIDs
        }
        #expect(pids.count == 1)
        #expect(pids.allSatisfy(Processes.isGone))
    }

    @Test func concurrentReplaysDoNotMeet() async throws {
        async let first = ReplayRun.reports(log: "ublox-lea-4h")
        async let second = ReplayRun.reports(log: "bu353s4")
        let (a, b) = try await (first, second)
        #expect(a.reports.count == 18)
        #expect(b.reports.count == 27)
    }

    @Test("a replay gpsd never finishes is stopped endGrace after the whole log was fed")
    func watchdogEndsAReplayGPSDNeverFinishes() async throws {
        // Fed raw, DLE ',' opens a TSIP frame in gpsd that swallows our # EOF: gpsd never closes the device.
        let scratch = TemporaryDirectory("dle")
        let path = scratch.file("dle.log")
        try Data(Array("$GPGGA,1".utf8) + [0x10] + Array(",2\n".utf8)).write(to: URL(fileURLWithPath: path))
        let gpsd = try await ReplayGPSD.start(log: try NMEALog(contentsOf: path, replacingNonText: false))
        defer { gpsd.stop() }
        let started = Date()
        let stream = gpsd.stream(endGrace: 3)
        _ = try await ReplayRun.collect(stream.events, timeout: 3 + 5)
        let ending = await stream.ending.value
        #expect(
            ending
                == .failed(
                    "gpsd had not closed the device 3 s after reading the whole log "
                        + "(part of the log may have been taken for binary data)"))
        #expect(Date().timeIntervalSince(started) < 3 + 5)
        // The watchdog's stop is still reaping gpsd when the stream ends.
        let reaped = Date().addingTimeInterval(3)
        while Date() < reaped && !gpsd.processIDs.allSatisfy(Processes.isGone) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(gpsd.processIDs.allSatisfy(Processes.isGone), "the watchdog did not stop gpsd")
    }

    @Test func missingGPSDIsReported() throws {
        var options = ReplayGPSD.Options()
        options.gpsdExecutable = "/nonexistent/gpsd"
        #expect(throws: ReplayError.gpsdMissing("/nonexistent/gpsd")) {
            try ReplayGPSD(log: try log("bu353s4"), options: options)
        }
    }

    @Test func gpsdThatCannotListenIsReported() throws {
        // Hold a port so gpsd cannot bind it.
        let holder = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(holder) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(holder, pointer, length) == 0 && getsockname(holder, pointer, &length) == 0
            }
        }
        // Bound but not listening: connecting is refused, so gpsd must fail to bind and say so.
        var options = ReplayGPSD.Options()
        options.port = UInt16(bigEndian: address.sin_port)
        options.startTimeout = 2
        #expect {
            try ReplayGPSD(log: try log("bu353s4"), options: options)
        } throws: { error in
            guard case .gpsdFailedToStart = error as? ReplayError else { return false }
            return true
        }
    }
}
