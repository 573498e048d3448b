import Foundation
import TestSupport
import Testing

@testable import GNSS

/// Lines that make libgps 3.22 hang or spin, from a stand-in gpsd on loopback: the reader must
/// go on, and stay cheap.
@Suite(.serialized, .timeLimit(.minutes(1)))
struct HostileGPSDTests {
    private static let reports = (1...3).map {
        #"{"class":"TPV","device":"/dev/x","mode":3,"time":"2024-05-01T10:00:0\#($0).000Z","lat":48.1,"lon":11.5,"altHAE":500.0}"#
    }

    private static func oneShot(port: UInt16, silence: Double = 5) -> GPSDSource {
        var configuration = GPSDSource.Configuration(address: GPSDAddress(host: "127.0.0.1", port: port))
        configuration.reconnects = false
        configuration.silenceThreshold = silence
        return GPSDSource(configuration: configuration)
    }

    private static func script(_ lines: [String]) -> [UInt8] { Array(lines.map { $0 + "\r\n" }.joined().utf8) }

    // libgps' gps_unpack re-parses a failed line for ever when another "class": follows the failure.
    @Test(
        "a line that makes libgps loop is skipped, and the reports after it arrive",
        arguments: [
            #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/x",5}]}"#,
            #"{"class":"DEVICES",5:{"class":"DEVICE"}}"#,
            #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/x"},5]}"#,
            #"{5,"class":"DEVICES"}"#,
            #"{"class":"TPV",5,"class":"TPV"}"#,
        ])
    func hostileLine(line: String) async throws {
        // In a process of its own: the CPU time read is then this reader's, not other tests'.
        await #expect(processExitsWith: .success) { [line = line as String] in
            let gpsd = try FakeGPSD(script: HostileGPSDTests.script([line] + HostileGPSDTests.reports))
            let cpu = processCPUTime()
            let events = try await ReplayRun.collect(HostileGPSDTests.oneShot(port: gpsd.port).events(), timeout: 5)
            let spent = processCPUTime() - cpu
            let reports = events.compactMap { if case .report(let report) = $0 { report } else { nil } }
            #expect(reports.count == 3)
            #expect(reports.map(\.latitude) == [48.1, 48.1, 48.1])
            #expect(reports.last?.time == Date(timeIntervalSince1970: 1_714_557_603))
            #expect(reports.allSatisfy { $0.device == "/dev/x" && $0.gpsdMode == 3 })
            #expect(
                events.last.map { if case .disconnected = $0 { true } else { false } } == true,
                "ended with \(String(describing: events.last))")
            #expect(
                !events.contains { if case .devices = $0 { true } else { false } },
                "an undecodable DEVICES is no device list")
            #expect(spent < 0.5, "\(spent) s of CPU")
            #expect(gpsd.finish(timeout: 15) == nil)
            #expect(await ThreadCensus.waitUntilGone(["agrigps.gpsd-r", "fake-gpsd"]), "a thread outlived the test")
        }
    }

    @Test("a well-formed DEVICES line still gives the device list")
    func devicesAreDecoded() async throws {
        let gpsd = try FakeGPSD(
            script: HostileGPSDTests.script([
                #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyACM0","activated":"2024-05-01T10:00:00.000Z"}]}"#,
                #"{"class":"DEVICE","path":"/dev/ttyACM0","activated":0}"#,
            ]))
        let events = try await ReplayRun.collect(HostileGPSDTests.oneShot(port: gpsd.port).events(), timeout: 5)
        #expect(events.contains(.devices(["/dev/ttyACM0"])))
        #expect(events.contains(.deviceRemoved("/dev/ttyACM0")))
        #expect(gpsd.finish() == nil)
    }

    @Test("a line cut short, then silence: the receiver is silent, and the reader does not spin")
    func partialLineThenSilence() async throws {
        // In a process of its own: the CPU time read is then this reader's, not other tests'.
        await #expect(processExitsWith: .success) {
            let gpsd = try FakeGPSD(script: Array(#"{"class":"TPV","device":"/dev/x","mode":"#.utf8), holdOpen: true)
            let cpu = processCPUTime()
            let events = Recorder<SourceEvent>()
            await events.start(HostileGPSDTests.oneShot(port: gpsd.port, silence: 1).events())
            let silent = await events.waitFor(timeout: 2.5) { if case .receiverSilent = $0 { true } else { false } }
            let spent = processCPUTime() - cpu
            await events.stop()
            #expect(silent != nil, "no receiverSilent within 2.5 s")
            #expect(spent < 0.3, "\(spent) s of CPU")
            #expect(gpsd.finish(timeout: 15) == nil)
            #expect(await ThreadCensus.waitUntilGone(["agrigps.gpsd-r", "fake-gpsd"]), "a thread outlived the test")
        }
    }

    @Test("a line longer than the limit ends the connection with a message, without hanging")
    func overlongLine() async throws {
        let gpsd = try FakeGPSD(script: [UInt8](repeating: UInt8(ascii: "x"), count: 100_000), holdOpen: true)
        let events = try await ReplayRun.collect(HostileGPSDTests.oneShot(port: gpsd.port).events(), timeout: 5)
        guard case .disconnected(let error) = events.last else {
            Issue.record("ended with \(String(describing: events.last))")
            return
        }
        #expect(error.kind == .connectionLost)
        #expect(error.description.contains("gpsd sent a line longer than 65536 bytes"), "\(error.description)")
        #expect(gpsd.finish() == nil)
    }

    @Test("lines are cut at LF, CR dropped, across reads")
    func lineBuffer() {
        var buffer = LineBuffer()
        let take = { (buffer: inout LineBuffer) in buffer.takeLine { String(decoding: $0, as: UTF8.self) } }
        Array("ab\r\ncd".utf8).withUnsafeBytes { buffer.append($0) }
        #expect(take(&buffer) == "ab")
        #expect(take(&buffer) == nil)
        #expect(buffer.nextLineLength() == 2)
        Array("e\n\nf\n".utf8).withUnsafeBytes { buffer.append($0) }
        #expect(take(&buffer) == "cde")
        #expect(take(&buffer) == "")
        #expect(take(&buffer) == "f")
        let more = buffer.hasLine()
        #expect(!more)
    }

    @Test func pollTimeoutsNeverTrap() {
        #expect(pollMilliseconds(.nan) == 0)
        #expect(pollMilliseconds(-3) == 0)
        #expect(pollMilliseconds(.infinity) == 86_400_000)
        #expect(pollMilliseconds(1e300) == 86_400_000)
        #expect(pollMilliseconds(0.0001) == 1)
        #expect(pollMilliseconds(1.5) == 1_500)
    }
}
