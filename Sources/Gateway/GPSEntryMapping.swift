import AgrirouterWire
import Clocks
import Foundation
import GNSS
import SwiftProtobuf

// Where samples meet the wire: our fix states and samples as gps:info's GPSEntry.

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
    /// and the receiver's time. When the receiver gave none, the true time of the sample's monotonic
    /// stamp, once `clock` knows it, else its system time corrected to the best known UTC; a time
    /// that cannot be true (a clock at 1970) is left out rather than sent.
    public init(_ sample: PositionSample, correctedBy clock: TrueTime? = nil) {
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
        let time =
            report?.time ?? clock.map { clock in
                sample.sampledUptime.flatMap(clock.time(atUptime:)) ?? clock.corrected(sample.sampledAt)
            } ?? sample.sampledAt
        guard report?.time != nil || time >= TrueTime.plausibleFrom else { return }
        // Milliseconds: receivers report no finer, and whole milliseconds encode shorter.
        let seconds = time.timeIntervalSince1970
        gpsUtcTimestamp = Google_Protobuf_Timestamp(
            date: Date(timeIntervalSince1970: (seconds * 1000).rounded() / 1000))
    }

    /// Bytes this entry takes inside a GPSList: its tag, its length and itself. The spool budgets with it.
    public static func wireSize(of sample: PositionSample) -> Int {
        // A sample without receiver time may go out with a corrected time, or none: budget for the
        // longest, a time in 2100 with milliseconds, so a batch never outgrows the payload cap.
        var sized = sample
        if sample.report?.time == nil { sized.sampledAt = Date(timeIntervalSince1970: 4_102_444_799.999) }
        // Serialising a proto3 message of plain fields cannot fail; 96 bytes bounds any entry if it did.
        let size = (try? GPSEntry(sized).serializedBytes() as Data)?.count ?? 96
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
