import Foundation

/// One TPV report from gpsd, with the newest sky view (DOP, satellites used) attached.
/// Absent values are nil, never NaN.
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
        self.time = time
        self.gpsdMode = gpsdMode
        self.gpsdStatus = gpsdStatus
        // Without a fix gpsd's coordinates mean nothing; do not let them leak out.
        let hasFix = gpsdMode >= 2
        self.latitude = hasFix ? latitude : nil
        self.longitude = hasFix ? longitude : nil
        self.altitudeHAE = gpsdMode >= 3 ? altitudeHAE : nil
        self.altitudeMSL = gpsdMode >= 3 ? altitudeMSL : nil
        self.speed = speed
        self.track = track
        self.hdop = hdop
        self.pdop = pdop
        self.satellitesUsed = satellitesUsed
        self.device = device
    }

    /// Our fix state for this report. gpsd can claim a 3D mode from a GSA sentence before it knows
    /// any coordinates; without latitude and longitude there is no position to share, so that is
    /// no fix. The raw mode stays in `gpsdMode`.
    public var fixState: FixState {
        guard latitude != nil, longitude != nil else { return .noFix }
        return FixState(gpsdMode: gpsdMode, gpsdStatus: gpsdStatus)
    }
}
