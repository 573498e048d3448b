import Bounds
import Foundation

/// One TPV report from gpsd, with the newest sky view (DOP, satellites used) attached.
/// Absent values are nil, never NaN, and so are values outside `Bounds`: a receiver that reports an
/// altitude of 1e9 m or a latitude of 91° reports nothing usable there.
public struct PositionReport: Sendable, Equatable {
    /// Receiver UTC time. gpsd may send a fix before it knows the date, so this can be nil.
    public var time: Date?
    /// gpsd's TPV mode: 0 not seen, 1 no fix, 2 2D, 3 3D.
    public var gpsdMode: Int
    /// gpsd's TPV status (0 when gpsd omitted it).
    public var gpsdStatus: Int
    public var latitude: Double?
    public var longitude: Double?
    /// Height above the WGS84 ellipsoid, metres.
    public var altitudeHAE: Double?
    /// Height above mean sea level, metres.
    public var altitudeMSL: Double?
    /// Speed over ground, metres per second.
    public var speed: Double?
    /// Course over ground, degrees from true north.
    public var track: Double?
    public var hdop: Double?
    public var pdop: Double?
    public var satellitesUsed: Int?
    /// The gpsd device path the report came from.
    public var device: String?

    public init(
        time: Date? = nil, gpsdMode: Int, gpsdStatus: Int = 0,
        latitude: Double? = nil, longitude: Double? = nil,
        altitudeHAE: Double? = nil, altitudeMSL: Double? = nil,
        speed: Double? = nil, track: Double? = nil,
        hdop: Double? = nil, pdop: Double? = nil, satellitesUsed: Int? = nil,
        device: String? = nil
    ) {
        self.time = time.flatMap { Bounds.date(secondsSince1970: $0.timeIntervalSince1970) }
        self.gpsdMode = (0...3).contains(gpsdMode) ? gpsdMode : 0
        self.gpsdStatus = (0...255).contains(gpsdStatus) ? gpsdStatus : 0
        // Without a fix gpsd's coordinates mean nothing; do not let them leak out. Half a position
        // is none: a latitude in range with a longitude out of it gives neither.
        let hasFix = self.gpsdMode >= 2
        let latitude = latitude.flatMap { Bounds.check($0, in: Bounds.latitude) }
        let longitude = longitude.flatMap { Bounds.check($0, in: Bounds.longitude) }
        let located = hasFix && latitude != nil && longitude != nil
        self.latitude = located ? latitude : nil
        self.longitude = located ? longitude : nil
        self.altitudeHAE = self.gpsdMode >= 3 ? altitudeHAE.flatMap { Bounds.check($0, in: Bounds.altitude) } : nil
        self.altitudeMSL = self.gpsdMode >= 3 ? altitudeMSL.flatMap { Bounds.check($0, in: Bounds.altitude) } : nil
        self.speed = speed.flatMap { Bounds.check($0, in: Bounds.speed) }
        self.track = track.flatMap { Bounds.check($0, in: Bounds.track) }
        self.hdop = hdop.flatMap { Bounds.check($0, in: Bounds.dop) }
        self.pdop = pdop.flatMap { Bounds.check($0, in: Bounds.dop) }
        self.satellitesUsed = satellitesUsed.flatMap { Bounds.satellites.contains($0) ? $0 : nil }
        self.device = device.map { String($0.prefix(512)) }
    }

    /// Our fix state for this report. gpsd can claim a 3D mode from a GSA sentence before it knows
    /// any coordinates; without latitude and longitude there is no position to share, so that is
    /// no fix. The raw mode stays in `gpsdMode`.
    public var fixState: FixState {
        guard latitude != nil, longitude != nil else { return .noFix }
        return FixState(gpsdMode: gpsdMode, gpsdStatus: gpsdStatus)
    }
}
