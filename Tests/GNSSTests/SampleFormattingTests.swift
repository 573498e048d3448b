import Clocks
import Foundation
import Testing

@testable import GNSS

@Suite struct SampleFormattingTests {
    @Test func isoTimeHasMillisecondsLikeGPSD() {
        #expect(ISO8601UTC.string(from: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(ISO8601UTC.string(from: Date(timeIntervalSince1970: 1_584_538_099.9)) == "2020-03-18T13:28:19.900Z")
        #expect(ISO8601UTC.string(from: Date(timeIntervalSince1970: 59.9996)) == "1970-01-01T00:01:00.000Z")
        #expect(ISO8601UTC.string(from: Date(timeIntervalSince1970: -0.5)) == "1969-12-31T23:59:59.500Z")
    }

    @Test func isoTimeReadsBackWithOrWithoutFraction() throws {
        #expect(ISO8601UTC.date(from: "2020-03-18T13:28:19.900Z") == Date(timeIntervalSince1970: 1_584_538_099.9))
        #expect(ISO8601UTC.date(from: "2020-03-18T13:28:19Z") == Date(timeIntervalSince1970: 1_584_538_099))
        #expect(ISO8601UTC.date(from: "1969-12-31T23:59:59.500Z") == Date(timeIntervalSince1970: -0.5))
        #expect(ISO8601UTC.date(from: "2024-02-29T00:00:00.123456Z")?.timeIntervalSince1970 == 1_709_164_800.123456)
        for date in [Date(timeIntervalSince1970: 1_763_884_800.25), Date(timeIntervalSince1970: 0)] {
            #expect(ISO8601UTC.date(from: ISO8601UTC.string(from: date)) == date)
        }
        for bad in [
            "", "2020-03-18 13:28:19Z", "2020-03-18T13:28:19", "2020-03-18T13:28:19+01:00", "2020-13-18T13:28:19Z",
            "2020-03-18T13:28:19.Z", "2020-03-18T13:28:19.1234567890123Z", "2020-03-18T1a:28:19Z",
            "２０２０-03-18T13:28:19Z",
        ] {
            #expect(ISO8601UTC.date(from: bad) == nil, "\(bad)")
        }
    }

    @Test func jsonLineHasTheRequiredKeysInOrder() throws {
        let report = PositionReport(
            time: Date(timeIntervalSince1970: 1_584_538_099), gpsdMode: 3, gpsdStatus: 3,
            latitude: 48.5, longitude: -11.25, altitudeMSL: 500)
        let line = report.jsonLine
        #expect(
            line.hasPrefix(
                #"{"time":"2020-03-18T13:28:19.000Z","mode":3,"status":3,"lat":48.5,"lon":-11.25,"state":"fix_3d_rtk_fixed""#
            ))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["alt_msl"] as? Double == 500)
        #expect(object["hdop"] is NSNull)
    }

    @Test func reportValuesOutsideTheirRangesAreUnknown() {
        // A time before GNSS time began, a latitude off the globe, an altitude no tractor reaches:
        // none of it travels on, and half a position is none.
        let report = PositionReport(
            time: Date(timeIntervalSince1970: 0), gpsdMode: 3, gpsdStatus: 1, latitude: 91, longitude: 8,
            altitudeHAE: 1e9, altitudeMSL: 1e308, speed: .infinity, track: 400, hdop: 1e6, pdop: -1,
            satellitesUsed: 100_000)
        #expect(report.time == nil && report.latitude == nil && report.longitude == nil)
        #expect(report.altitudeHAE == nil && report.altitudeMSL == nil && report.speed == nil && report.track == nil)
        #expect(report.hdop == nil && report.pdop == nil && report.satellitesUsed == nil)
        #expect(report.fixState == .noFix)
        let edge = PositionReport(
            time: Date(timeIntervalSince1970: 1_584_538_099), gpsdMode: 3, latitude: -90, longitude: 180,
            altitudeHAE: -1000, altitudeMSL: 100_000)
        #expect(
            edge.latitude == -90 && edge.longitude == 180 && edge.altitudeHAE == -1000 && edge.altitudeMSL == 100_000)
        #expect(PositionReport(gpsdMode: 7).gpsdMode == 0)
    }

    @Test func explicitStateSampleHasNullPositionAndEscapedDetail() throws {
        let sample = PositionSample(
            sampledAt: Date(timeIntervalSince1970: 10), state: .gpsdUnreachable,
            detail: "gpsd \"x\"\nrefused")
        let line = sample.jsonLine(includeSampledAt: true)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["state"] as? String == "gpsd_unreachable")
        #expect(object["time"] is NSNull && object["lat"] is NSNull && object["lon"] is NSNull)
        #expect(object["mode"] as? Int == 0)
        #expect(object["detail"] as? String == "gpsd \"x\"\nrefused")
        #expect(object["sampled_at"] as? String == "1970-01-01T00:00:10.000Z")
        #expect(!sample.jsonLine(includeSampledAt: false).contains("sampled_at"))
        #expect(!line.contains("\n"))
    }

    @Test func textLineNamesTheState() {
        let sample = PositionSample(sampledAt: Date(), state: .noReceiver(.removed), detail: "removed")
        #expect(sample.textLine == "- no_receiver (removed)")
    }
}
