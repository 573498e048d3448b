import Foundation
import GNSS
import SwiftProtobuf

public typealias GPSEntry = Agrirouter_Technicalmessagetype_GPSList.GPSEntry

extension GPSEntry.PositionStatus {
    /// Our fix state as agrirouter's position status. Every state is sent, including "no position".
    ///
    /// | fix state | position_status |
    /// |---|---|
    /// | no fix | D_NO_GPS |
    /// | no receiver | D_NOT_AVAILABLE |
    /// | gpsd unreachable | D_ERROR |
    /// | RTK fixed | D_RTK_FINTEGER |
    /// | RTK float | D_RTK_FLOAT |
    /// | DGPS | D_DGNSS |
    /// | autonomous | D_GNSS |
    /// | dead reckoning | D_EST_DR_MODE |
    /// | simulated | D_SIMULATE_MODE |
    /// | manual | D_MANUAL_INPUT |
    public init(_ state: FixState) {
        switch state {
        case .noFix: self = .dNoGps
        case .noReceiver: self = .dNotAvailable
        case .gpsdUnreachable: self = .dError
        case .fix(_, .rtkFixed): self = .dRtkFinteger
        case .fix(_, .rtkFloat): self = .dRtkFloat
        case .fix(_, .dgps): self = .dDgnss
        case .fix(_, .autonomous): self = .dGnss
        case .fix(_, .deadReckoning): self = .dEstDrMode
        case .fix(_, .simulated): self = .dSimulateMode
        case .fix(_, .manual): self = .dManualInput
        }
    }
}

extension GPSEntry {
    /// One sample as a GPSEntry: latitude north, longitude east, altitude above the WGS84 ellipsoid in
    /// millimetres (mean sea level when the ellipsoid height is unknown), the fix quality as reported,
    /// and the receiver's time (the sample's system time when the receiver gave none).
    public init(_ sample: PositionSample) {
        self.init()
        let report = sample.report
        positionStatus = PositionStatus(sample.state)
        if sample.state.hasPosition, let report {
            positionNorth = report.latitude ?? 0
            positionEast = report.longitude ?? 0
            if let metres = report.altitudeHAE ?? report.altitudeMSL {
                positionUp = Int64((metres * 1000).rounded())
            }
        }
        if let pdop = report?.pdop { self.pdop = pdop }
        if let hdop = report?.hdop { self.hdop = hdop }
        if let used = report?.satellitesUsed, used > 0 { numberOfSatellites = UInt32(used) }
        // Milliseconds: receivers report no finer, and whole milliseconds encode shorter.
        let time = (report?.time ?? sample.sampledAt).timeIntervalSince1970
        gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date(timeIntervalSince1970: (time * 1000).rounded() / 1000))
    }

    /// Bytes this entry takes inside a GPSList: its tag, its length and itself. The spool budgets with it.
    public static func wireSize(of sample: PositionSample) -> Int {
        // Serialising a proto3 message of plain fields cannot fail; 96 bytes bounds any entry if it did.
        let size = (try? GPSEntry(sample).serializedBytes() as Data)?.count ?? 96
        return 1 + varintSize(size) + size
    }

    private static func varintSize(_ value: Int) -> Int {
        var value = UInt64(value)
        var count = 1
        while value >= 0x80 {
            value >>= 7
            count += 1
        }
        return count
    }
}
