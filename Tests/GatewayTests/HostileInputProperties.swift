import AgrirouterWire
import Bounds
import Clocks
import Foundation
import GNSS
import PropertyBased
import StateDirectory
import SwiftProtobuf
import TestSupport
import Testing

@testable import Gateway
@testable import StateView

/// Doubles near the edges that matter, which random bit patterns rarely hit.
let edgeDoubles: [Double] = [
    0, -0.0, 1, -1, 90, 90.000001, -90, 180, 180.0001, -180, 1e9, 1e15, 9.2e18, 1e300, -1e300,
    .infinity, -.infinity, .nan, .greatestFiniteMagnitude, .leastNonzeroMagnitude,
]
/// Any double: a random bit pattern (NaN, ±inf, subnormals, extremes), an edge, or an ordinary value.
let someDouble = Gen<UInt64>.value().map { bits -> Double in
    switch bits % 4 {
    case 0: return Double(bitPattern: bits)
    case 1: return edgeDoubles[Int((bits >> 2) % UInt64(edgeDoubles.count))]
    default: return Double(Int64(truncatingIfNeeded: bits >> 2) % 2_000_000) / 1000
    }
}
let edgeInt64s: [Int64] = [.min, .max, 0, -1, 1_790_000_000, 7_258_118_401, 315_964_799]
let someInt64 = Gen<UInt64>.value().map { bits -> Int64 in
    bits % 2 == 0 ? Int64(truncatingIfNeeded: bits) : edgeInt64s[Int((bits >> 1) % UInt64(edgeInt64s.count))]
}
let anyBytes = Gen<UInt8>.value(in: 0...255).array(of: 0...300)
/// The pieces a TOML file, or an attack on one, is made of.
let tomlPieces = [
    "[", "]", "[[", "=", "\"", "'", "\\", "\\u", "#", "\n", "\r", "\t", " ", "\u{0}", "\u{1B}",
    "sampling", "interval", "spool", "max_samples", "1", "0x", "1e308", "nan", "inf", "-", "_", ".",
    "true", "{", "}", ",", "é", "\u{202E}", "\"\"\"",
]
/// Configuration text: the pieces in any order, or any bytes at all.
let configurationText = Gen<Int>.value(in: 0...(tomlPieces.count * 2)).array(of: 0...60).map { picks -> String in
    if picks.first.map({ $0 >= tomlPieces.count * 2 - 3 }) == true {
        return String(decoding: picks.map { UInt8(truncatingIfNeeded: $0 &* 37) }, as: UTF8.self)
    }
    return picks.map { tomlPieces[$0 % tomlPieces.count] }.joined()
}

@Suite("Hostile input: properties of every decoder and validator")
struct HostileInputProperties {
    @Test("text made safe for a terminal has no control character and a bounded length")
    func terminalText() async {
        let scalars = Gen<UInt32>.value(in: 0...0x2FFF).array(of: 0...400).map { codes in
            String(String.UnicodeScalarView(codes.compactMap { Unicode.Scalar($0 < 0x300 ? $0 : $0 * 37 % 0x110000) }))
        }
        await propertyCheck(count: 500, input: scalars, Gen.int(in: 1...200)) { text, limit in
            let safe = TerminalText.safe(text, limit: limit)
            #expect(
                !safe.unicodeScalars.contains {
                    $0.value < 0x20 || (0x7F...0x9F).contains($0.value) || (0x202A...0x202E).contains($0.value)
                })
            #expect(safe.unicodeScalars.count <= limit * 10 + 20)
        }
    }

    @Test("a protobuf time is a date in 1980–2200 or none, whatever its seconds and nanoseconds")
    func timestamps() async {
        await propertyCheck(count: 1000, input: someInt64, Gen<Int32>.value()) { seconds, nanos in
            if let date = Bounds.date(seconds: seconds, nanos: nanos) {
                #expect(Bounds.epochSeconds.contains(date.timeIntervalSince1970))
            }
        }
    }

    @Test("a GPSEntry from another machine is refused, or every value read from it is in range")
    func gpsEntries() async {
        await propertyCheck(count: 1000, input: someDouble, someDouble, someInt64, someInt64, someDouble) {
            north, east, up, seconds, dop in
            var entry = GPSEntry()
            entry.positionStatus = .dRtkFinteger
            (entry.positionNorth, entry.positionEast, entry.positionUp, entry.hdop, entry.pdop) = (
                north, east, up, dop, dop
            )
            entry.gpsUtcTimestamp.seconds = seconds
            guard let report = try? ReportedPosition(checking: entry) else { return }
            #expect(report.latitude.map { Bounds.latitude.contains($0) } ?? true)
            #expect(report.longitude.map { Bounds.longitude.contains($0) } ?? true)
            #expect(report.altitude.map { Bounds.altitude.contains($0) } ?? true)
            #expect(report.gnssTime.map { Bounds.epochSeconds.contains($0.timeIntervalSince1970) } ?? true)
            #expect(report.hdop.map { Bounds.dop.contains($0) } ?? true)
        }
    }

    @Test(
        "a TimeLog Time from another machine is refused, or gives no position, or every value read from it is in range")
    func timeLogTimes() async {
        await propertyCheck(
            count: 1000, input: someDouble, someDouble, someInt64, someInt64, someDouble, Gen.int(in: 0...9)
        ) { north, east, up, seconds, dop, status in
            var time = Efdi_Time()
            time.start.seconds = seconds
            var position = Efdi_Position()
            position.positionStatus = Efdi_Position.PositionStatus(rawValue: status) ?? .dNoGps
            (position.positionNorth, position.positionEast, position.positionUp, position.hdop, position.pdop) = (
                north, east, up, dop, dop
            )
            // Either end may hold the position; the stop wins when it has one.
            if seconds % 2 == 0 { time.positionStart = position } else { time.positionStop = position }
            guard let report = (try? ReportedPosition(checking: time)) ?? nil else { return }
            #expect(report.latitude.map { Bounds.latitude.contains($0) } ?? true)
            #expect(report.longitude.map { Bounds.longitude.contains($0) } ?? true)
            #expect(report.altitude.map { Bounds.altitude.contains($0) } ?? true)
            #expect(report.gnssTime.map { Bounds.epochSeconds.contains($0.timeIntervalSince1970) } ?? true)
            #expect(report.hdop.map { Bounds.dop.contains($0) } ?? true)
        }
    }

    @Test("a gpsd report keeps only values in range")
    func positionReports() async {
        await propertyCheck(count: 1000, input: someDouble, someDouble, someDouble, someDouble, Gen.int(in: -5...10)) {
            lat, lon, alt, time, mode in
            let report = PositionReport(
                time: Date(timeIntervalSince1970: time.isFinite ? time : 0), gpsdMode: mode, gpsdStatus: 1,
                latitude: lat, longitude: lon, altitudeHAE: alt, altitudeMSL: alt, speed: alt, track: lat, hdop: lon)
            #expect(report.latitude.map { Bounds.latitude.contains($0) } ?? true)
            #expect(report.longitude.map { Bounds.longitude.contains($0) } ?? true)
            #expect((report.latitude == nil) == (report.longitude == nil))
            #expect(report.altitudeHAE.map { Bounds.altitude.contains($0) } ?? true)
            #expect(report.time.map { Bounds.epochSeconds.contains($0.timeIntervalSince1970) } ?? true)
            // What the sampler does with a report must not trap either.
            var core = SamplerCore(interval: 0.1, start: ClockReading(uptime: 0, wall: Date()))
            _ = core.handle(.report(report), at: ClockReading(uptime: 1, wall: Date()))
        }
    }

    @Test("the configuration parser never traps; a refusal is one line of bounded length with no control character")
    func configuration() async {
        await propertyCheck(count: 1000, input: configurationText) { text in
            do throws(ConfigurationError) {
                _ = try ConfigurationFile.parse(text, path: "agrigps.conf")
            } catch {
                #expect(
                    !error.description.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F },
                    "\(error.description)")
                #expect(error.description.count < 400)
            }
        }
    }

    @Test("outbox items of any bytes decode or fail with an error, and a feed page's messages are stored or refused")
    func outboxItems() async throws {
        let scratch = TemporaryDirectory("props")
        let store = OtherMachinesStore(path: scratch.file("others.sqlite"))
        await propertyCheck(count: 500, input: anyBytes) { bytes in
            if let decoded = try? OutboxDecoder.decode(base64: Data(bytes).base64EncodedString()) {
                _ = try? await store.record(decoded.feedMessages, ownEndpointID: "me", receivedAt: Date())
            }
            // The same bytes as a gps:info's content, from a sender.
            let message = ReceivedFeedMessage(
                messageID: UUID().uuidString, senderID: "peer", technicalMessageType: TechnicalMessageType.gpsInfo,
                sentAt: nil, content: Data(bytes))
            let recorded = try? await store.record([message], ownEndpointID: "me", receivedAt: Date())
            #expect(recorded?.confirmable == [message.messageID])
            // And as a TimeLog's and a device description's: stored or refused, confirmed either way.
            for type in [TechnicalMessageType.timeLog, TechnicalMessageType.deviceDescription] {
                let efdi = ReceivedFeedMessage(
                    messageID: UUID().uuidString, senderID: "peer", technicalMessageType: type, sentAt: nil,
                    content: Data(bytes))
                let stored = try? await store.record([efdi], ownEndpointID: "me", receivedAt: Date())
                #expect(stored?.confirmable == [efdi.messageID])
            }
        }
        let view = try await store.view()
        for machine in view.machines {
            #expect(machine.lastPosition?.latitude.map { Bounds.latitude.contains($0) } ?? true)
        }
    }

    @Test("what others and status print from any number never traps")
    func formatting() async {
        await propertyCheck(count: 1000, input: someDouble) { value in
            _ = durationText(value)
            _ = DistanceText.format(metres: value)
            _ = Coordinate.compassPoint(value)
            _ = Bounds.show(value)
            _ = StatusSnapshot.whole(value)
            _ = Bounds.whole(value)
        }
    }
}
