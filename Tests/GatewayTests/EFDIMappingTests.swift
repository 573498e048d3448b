import AgrirouterWire
import Bounds
import Clocks
import Foundation
import GNSS
import SwiftProtobuf
import Testing

@testable import Gateway

/// The box's device description and its TimeLogs, written as ISO 11783-10's schema and agrirouter's
/// efdi.proto ask.
@Suite struct EFDIMappingTests {
    let endpoint = "0f3c6a52-9e41-4d27-a46e-1c582d93e70a"
    let fixTime = Date(timeIntervalSince1970: 1_790_000_000.25)

    func sample(_ state: FixState, speed: Double? = 3.5, time: Date? = nil, sampledAt: Date? = nil) -> PositionSample {
        let mode = state.hasPosition ? 3 : 1
        let report = PositionReport(
            time: time ?? fixTime, gpsdMode: mode, gpsdStatus: 2, latitude: 48.123456789, longitude: 11.5,
            altitudeHAE: 547.2345, speed: speed, hdop: 0.7, pdop: 1.3, satellitesUsed: 17)
        return PositionSample(
            sampledAt: sampledAt ?? fixTime, state: state, report: state == .gpsdUnreachable ? nil : report)
    }

    // MARK: - Device description

    @Test func theDescriptionHasWhatTheSchemaRequiresAndNothingOutOfRange() throws {
        let description = DeviceDescription(endpointID: endpoint, softwareVersion: "0.1.0")
        let taskData = description.taskData
        #expect(taskData.versionMajor == .e2Fdis && taskData.versionMinor == 3 && taskData.dataTransferOrigin == .mics)
        let device = try #require(taskData.device.first)
        #expect(taskData.device.count == 1)
        #expect(device.deviceID.number == -1 && device.deviceID.uri == ["DVC-1"])
        #expect(device.clientName.count == 8)
        #expect(
            (7...39).contains(device.deviceStructureLabel.count)
                && device.deviceStructureLabel.prefix(7) != Data(repeating: 0xFF, count: 7))
        #expect(device.deviceLocalizationLabel.count == 7 && device.deviceLocalizationLabel.first == 0xFF)
        #expect(device.deviceLocalizationLabel.suffix(2) == Data("ne".utf8))  // "en", reversed as ISOXML writes it
        for text in [device.deviceDesignator, device.deviceSoftwareVersion, device.deviceSerialNumber]
            + device.deviceElement.map(\.deviceElementDesignator)
        {
            #expect(!text.isEmpty && text.count <= 32)
        }
        #expect(device.deviceSerialNumber == endpoint.replacingOccurrences(of: "-", with: ""))

        // One object id space; every reference points at an object that is there.
        let objects =
            device.deviceElement.map(\.deviceElementObjectID)
            + device.deviceProcessData.map(\.deviceProcessDataObjectID)
            + device.deviceProperty.map(\.devicePropertyObjectID)
            + device.deviceValuePresentation.map(\.deviceValuePresentationObjectID)
        #expect(Set(objects).count == objects.count && objects.allSatisfy { (1...65534).contains($0) })
        let elements = Set(device.deviceElement.map(\.deviceElementObjectID))
        for element in device.deviceElement {
            #expect(element.parentObjectID == 0 || elements.contains(element.parentObjectID))
            #expect(element.deviceElementNumber <= 4095)
            #expect(element.deviceObjectReference.allSatisfy { objects.contains($0.deviceObjectID) })
        }
        #expect(device.deviceElement.map(\.deviceElementType) == [.cDevice, .cNavigation])
        #expect(device.deviceElement.map(\.deviceElementID.uri) == [["DET-1"], ["DET-2"]])
        let presentations = Set(device.deviceValuePresentation.map(\.deviceValuePresentationObjectID))
        for data in device.deviceProcessData {
            #expect(data.deviceProcessDataProperty <= 7 && data.deviceProcessDataTriggerMethods <= 31)
            #expect(presentations.contains(data.deviceValuePresentationObjectID))
        }
        #expect(
            device.deviceValuePresentation.allSatisfy { (1e-9...1e8).contains($0.scale) && $0.numberOfDecimals <= 7 })
        // Only what a GNSS receiver measures: speed, and where it comes from (navigation).
        #expect(device.deviceProcessData.map(\.deviceProcessDataDdi) == [397])
        #expect(device.deviceProperty.map { [$0.devicePropertyDdi, UInt32($0.devicePropertyValue)] } == [[400, 3]])
    }

    @Test func theNAMEIsAnAgriculturalNavigationFunctionWithAnIdentityFromTheEndpoint() throws {
        let name = DeviceDescription(endpointID: endpoint, softwareVersion: "0.1.0").taskData.device[0].clientName
        let value = name.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        #expect(value >> 63 == 0)  // not self-configurable
        #expect((value >> 60) & 0x7 == 2)  // agriculture and forestry
        #expect((value >> 49) & 0x7F == 0)  // non-specific device class
        #expect((value >> 40) & 0xFF == 23)  // vehicle navigation
        #expect(UInt32(value & 0x1F_FFFF) == DeviceDescription.identityNumber(endpoint))
        let other = DeviceDescription(endpointID: "1" + endpoint.dropFirst(), softwareVersion: "0.1.0").taskData.device[
            0
        ].clientName
        #expect(other != name)
    }

    @Test func theTeamSetContextIDFollowsTheDescriptionAndTheEndpoint() {
        let id = DeviceDescription(endpointID: endpoint, softwareVersion: "0.1.0").teamSetContextID
        #expect(id == DeviceDescription(endpointID: endpoint, softwareVersion: "0.1.0").teamSetContextID)
        #expect(id != DeviceDescription(endpointID: endpoint, softwareVersion: "0.1.1").teamSetContextID)
        #expect(
            id != DeviceDescription(endpointID: "1" + endpoint.dropFirst(), softwareVersion: "0.1.0").teamSetContextID)
        // Named after the endpoint once agrirouter's list says its name: another description, another team set.
        let named = DeviceDescription(
            endpointID: endpoint, softwareVersion: "0.1.0", name: "  Fendt 942 Vario of the Müller farm, north  ")
        #expect(
            named.taskData.device[0].deviceDesignator == "Fendt 942 Vario of the Müller fa"
                && named.teamSetContextID != id)
        #expect(DeviceDescription(endpointID: endpoint, softwareVersion: "0.1.0", name: " ").teamSetContextID == id)
        #expect(
            id.range(
                of: "^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", options: .regularExpression
            ) != nil)
    }

    @Test func nameBasedUUIDsMatchRFC9562() {
        // RFC 9562 appendix A.4: "www.example.com" in the DNS namespace.
        let dns: [UInt8] = [
            0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4, 0x30, 0xc8,
        ]
        #expect(
            DeviceDescription.uuidV5(namespace: dns, name: Array("www.example.com".utf8))
                == "2ed6657d-e927-568b-95e1-2665a8aea6a2")
    }

    // MARK: - TimeLogs

    @Test(arguments: [
        (FixState.fix(.threeD, .rtkFixed), Efdi_Position.PositionStatus.dRtkFinteger),
        (.fix(.threeD, .rtkFloat), .dRtkFloat),
        (.fix(.twoD, .dgps), .dDgnss), (.fix(.threeD, .autonomous), .dGnss),
        (.fix(.threeD, .deadReckoning), .dEstDrMode),
        (.noFix, .dNoGps), (.noReceiver(.removed), .dNotAvailable), (.gpsdUnreachable, .dError),
    ])
    func everySampleIsATimeWithTheSameStatusAsGPSInfo(state: FixState, status: Efdi_Position.PositionStatus) throws {
        let sample = sample(state)
        let time = try #require(Efdi_Time(sample))
        let entry = GPSEntry(sample)
        #expect(time.positionStart.positionStatus == status)
        #expect(time.positionStart.positionStatus.rawValue == entry.positionStatus.rawValue)
        #expect(time.start == entry.gpsUtcTimestamp && time.positionStart.gpsUtcTimestamp == entry.gpsUtcTimestamp)
        #expect(time.type == .dEffective && !time.hasStop && !time.hasPositionStop)
        if state.hasPosition {
            #expect(time.positionStart.positionNorth == 48.123456789 && time.positionStart.positionEast == 11.5)
            #expect(time.positionStart.positionUp == 547_235 && time.positionStart.numberOfSatellites == 17)
            #expect(time.positionStart.hdop == 0.7 && time.positionStart.pdop == 1.3)
            let speed = try #require(time.dataLogValue.first)
            #expect(time.dataLogValue.count == 1)
            #expect(speed.processDataDdi == 397 && speed.processDataValue == 3500)
            #expect(speed.deviceElementIDRef == DeviceDescription.rootElementID)
        } else {
            // No position, no speed: a state is sent as it is, never with coordinates or values.
            #expect(
                time.positionStart.positionNorth == 0 && time.positionStart.positionEast == 0
                    && time.dataLogValue.isEmpty)
        }
    }

    @Test func aFixWithoutSpeedLogsNoValueAndASampleWithNoTrueTimeIsLeftOut() throws {
        #expect(try #require(Efdi_Time(sample(.fix(.threeD, .dgps), speed: nil))).dataLogValue.isEmpty)
        let untimed = PositionSample(sampledAt: Date(timeIntervalSince1970: 60), state: .noFix)
        #expect(Efdi_Time(untimed) == nil)
        let (log, left) = Efdi_TimeLog.of([sample(.noFix), untimed, sample(.fix(.threeD, .rtkFixed))])
        #expect(left == 1 && log.time.count == 2 && log.timeLogType == .cBinaryTimelog)
        #expect(log.time.map(\.positionStart.positionStatus) == [.dNoGps, .dRtkFinteger])
    }

    @Test func noTimeOutgrowsTheBoundBatchesAreSizedBy() throws {
        var largest = 0
        let extremes: [PositionReport] = [
            PositionReport(
                time: Date(timeIntervalSince1970: 7_258_118_399.999), gpsdMode: 3, gpsdStatus: 2,
                latitude: -89.99999999,
                longitude: -179.99999999, altitudeHAE: -999.999, speed: 600, hdop: 99.9, pdop: 99.9, satellitesUsed: 255
            ),
            PositionReport(
                time: Date(timeIntervalSince1970: 7_258_118_399.999), gpsdMode: 3, gpsdStatus: 2,
                latitude: 89.123456789,
                longitude: 179.123456789, altitudeHAE: 99_999.999, speed: 599.999, hdop: 0.123456789, pdop: 0.987654321,
                satellitesUsed: 200),
        ]
        for report in extremes {
            for state in [FixState.fix(.threeD, .rtkFixed), .fix(.threeD, .simulated)] {
                let time = try #require(
                    Efdi_Time(
                        PositionSample(
                            sampledAt: Date(timeIntervalSince1970: 7_258_118_399.999), state: state, report: report)))
                var log = Efdi_TimeLog()
                log.time = [time]
                largest = max(largest, try (log.serializedBytes() as [UInt8]).count)
            }
        }
        #expect(largest <= Efdi_Time.upperBound)
        // Random samples too, with times from 1980 to 2200 at millisecond and finer resolution.
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let report = PositionReport(
                time: Date(timeIntervalSince1970: Double.random(in: Bounds.epochSeconds, using: &generator)),
                gpsdMode: 3,
                gpsdStatus: Int.random(in: 0...5, using: &generator),
                latitude: .random(in: Bounds.latitude, using: &generator),
                longitude: .random(in: Bounds.longitude, using: &generator),
                altitudeHAE: .random(in: Bounds.altitude, using: &generator),
                speed: .random(in: Bounds.speed, using: &generator), hdop: .random(in: Bounds.dop, using: &generator),
                pdop: .random(in: Bounds.dop, using: &generator),
                satellitesUsed: .random(in: Bounds.satellites, using: &generator))
            guard let time = Efdi_Time(PositionSample(sampledAt: Date(), state: report.fixState, report: report)) else {
                continue
            }
            var log = Efdi_TimeLog()
            log.time = [time]
            let size = try (log.serializedBytes() as [UInt8]).count
            #expect(size <= Efdi_Time.upperBound, "\(time)")
        }
    }

    @Test(
        "the machine's values in their DDIs' units, in the machine's element; with the largest of each, a Time stays within its bound"
    )
    func machineValues() throws {
        let report = PositionReport(
            time: Date(timeIntervalSince1970: 7_258_118_399.999), gpsdMode: 3, gpsdStatus: 2, latitude: -89.99999999,
            longitude: -179.99999999, altitudeHAE: -999.999, speed: 600, hdop: 99.9, pdop: 99.9, satellitesUsed: 255)
        let cases: [(MachineReading, [UInt32: Int64])] = [
            (
                MachineReading(
                    work: .working, speed: -2.5, speedSource: "wheel", engineSpeed: 1_230, engineHours: 147.55,
                    fuelRate: 12, fuelUsed: 1_000.5),
                [141: 1, 397: -2_500, 400: 1, 484: 12_300_000, 149: 3_333, 493: 1_476, 276: 2_001]
            ),
            (MachineReading(work: .unknown), [141: 3]),
            (MachineReading(work: .notWorking, speed: 0, speedSource: "selected"), [141: 0, 397: 0, 400: 6]),
            // The largest each message carries, and the largest totals read back.
            (
                MachineReading(
                    work: .working, speed: -64.255, speedSource: "ground", engineSpeed: 8_031.875,
                    engineHours: 210_554_060.75,
                    fuelRate: 3_212.75, fuelUsed: 2_105_540_607.5),
                [
                    // 276 past 32 bits: left out
                    141: 1, 397: -64_255, 400: 2, 484: 80_318_750, 149: 892_431, 493: 2_105_540_608,
                    119: 2_147_483_647, 120: 2_147_483_647, 148: 2_147_483_647, 492: 11_930_464,
                ]
            ),  // 492 in steps of 180 s
        ]
        for (reading, expected) in cases {
            var machine = reading
            if expected[119] != nil {
                let most = Double(Int32.max)
                machine.totals = MachineTotals(
                    effectiveSeconds: most, ineffectiveSeconds: most, fuelMillilitres: most, engineSeconds: most)
            }
            let sample = PositionSample(
                sampledAt: Date(timeIntervalSince1970: 7_258_118_399.999), state: .fix(.threeD, .rtkFixed),
                report: report,
                machine: machine)
            let time = try #require(Efdi_Time(sample))
            let values = time.dataLogValue.filter { $0.deviceElementIDRef == DeviceDescription.machineElementID }
            #expect(
                Dictionary(uniqueKeysWithValues: values.map { ($0.processDataDdi, $0.processDataValue) }) == expected)
            var log = Efdi_TimeLog()
            log.time = [time]
            #expect(try (log.serializedBytes() as [UInt8]).count <= Efdi_Time.upperBound + Efdi_Time.machineUpperBound)
        }
        // A sample without a machine reading carries none of it.
        let plain = try #require(
            Efdi_Time(PositionSample(sampledAt: Date(), state: .fix(.threeD, .rtkFixed), report: report)))
        #expect(plain.dataLogValue.map(\.processDataDdi) == [DeviceDescription.DDI.actualSpeed])
    }
}
