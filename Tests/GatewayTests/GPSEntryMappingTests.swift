import AgrirouterWire
import Foundation
import GNSS
import SwiftProtobuf
import Testing

@testable import Gateway

/// Our fix states and samples as gps:info's GPSEntry.
@Suite struct GPSEntryMappingTests {
    @Test(
        "position_status for each fix state",
        arguments: [
            (FixState.noFix, GPSEntry.PositionStatus.dNoGps),
            (.noReceiver(.removed), .dNotAvailable),
            (.gpsdUnreachable, .dError),
            (.fix(.threeD, .rtkFixed), .dRtkFinteger),
            (.fix(.threeD, .rtkFloat), .dRtkFloat),
            (.fix(.twoD, .dgps), .dDgnss),
            (.fix(.threeD, .autonomous), .dGnss),
            (.fix(.threeD, .deadReckoning), .dEstDrMode),
            (.fix(.threeD, .simulated), .dSimulateMode),
            (.fix(.threeD, .manual), .dManualInput),
        ])
    func status(state: FixState, expected: GPSEntry.PositionStatus) {
        #expect(GPSEntry.PositionStatus(state) == expected)
    }

    @Test func fixEntryCarriesMillimetresAndQuality() throws {
        let time = Date(timeIntervalSince1970: 1_790_000_000.5)
        let report = PositionReport(
            time: time, gpsdMode: 3, gpsdStatus: 4, latitude: 48.1, longitude: 11.5,
            altitudeHAE: 547.2345, altitudeMSL: 500, hdop: 0.9, pdop: 1.5, satellitesUsed: 12)
        let entry = GPSEntry(PositionSample(sampledAt: Date(), state: report.fixState, report: report))
        #expect(entry.positionNorth == 48.1 && entry.positionEast == 11.5)
        #expect(entry.positionUp == 547_235)  // millimetres above the ellipsoid, not metres
        #expect(entry.positionStatus == .dRtkFloat)
        #expect(entry.hdop == 0.9 && entry.pdop == 1.5 && entry.numberOfSatellites == 12)
        #expect(entry.gpsUtcTimestamp.seconds == 1_790_000_000 && entry.gpsUtcTimestamp.nanos == 500_000_000)
    }

    @Test func noPositionIsSentAsSuchWithTheSampleTime() {
        let sampled = Date(timeIntervalSince1970: 1_790_000_123)
        let entry = GPSEntry(PositionSample(sampledAt: sampled, state: .gpsdUnreachable))
        #expect(entry.positionStatus == .dError)
        #expect(entry.positionNorth == 0 && entry.positionEast == 0 && entry.positionUp == 0)
        #expect(entry.gpsUtcTimestamp.seconds == 1_790_000_123)
    }

    @Test func wireSizeIsTheFramedEntry() throws {
        let report = PositionReport(
            time: Date(), gpsdMode: 3, gpsdStatus: 3, latitude: 48.1, longitude: 11.5,
            altitudeHAE: 547.2, hdop: 0.9, pdop: 1.5, satellitesUsed: 12)
        let sample = PositionSample(sampledAt: Date(), state: report.fixState, report: report)
        var list = Agrirouter_Technicalmessagetype_GPSList()
        list.gpsEntries = [GPSEntry(sample), GPSEntry(sample)]
        #expect((try list.serializedBytes() as Data).count == 2 * GPSEntry.wireSize(of: sample))
        #expect(GPSEntry.wireSize(of: sample) <= 75)
    }
}
