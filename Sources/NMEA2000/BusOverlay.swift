import Foundation
import GNSS

/// What the bus adds to gpsd's reports of an NMEA 2000 receiver. gpsd 3.22 reports RTK fixed, RTK
/// float and precise GNSS as a plain fix, and without PGN 129539 it reports no fix at all (mode 0),
/// whatever the receiver knows. Listening to the same bus, agrigps keeps the receiver's newest
/// 129029 and puts its method into each report, or, where gpsd says no fix and the receiver has
/// one, makes the report from 129029 itself.
public struct BusOverlay: Sendable {
    /// The receiver's address, once chosen or given.
    public private(set) var address: UInt8?
    public private(set) var finder = ReceiverFinder()
    private var latest: (data: GNSSPositionData, at: Double)?
    /// The receiver's newest 129026, for the speed and course of its own fixes.
    private var course: (data: GNSSCourseAndSpeed, at: Double)?
    /// When the receiver last gave a position (129029 or 129025).
    private var positionAt: Double?
    /// The time of the newest fix gone out.
    private var newestSent: Double?
    /// A fix time this much before the newest sent is the receiver's clock set back, not a late report.
    static let setBackAfter = 30.0
    /// A 129029 older than this (by when it arrived) says nothing about a report.
    public static let freshFor = 2.5

    /// `address` as configured (`nmea2000://can0:SA`), else the finder's choice.
    public init(address: UInt8? = nil) {
        self.address = address
    }

    /// Takes one frame, `now` the monotonic time it arrived.
    public mutating func add(_ frame: CANFrame, now: Double) {
        // The finder joins every sender's 129029: the receiver may be chosen only by the message it completes.
        let data = finder.add(frame)
        let pgn = frame.pgn
        if pgn == GNSSPGN.courseAndSpeed, frame.source == (address ?? finder.chosen?.address),
            let data = GNSSCourseAndSpeed(frame.data)
        {
            course = (data, now)
            return
        }
        guard pgn == GNSSPGN.positionData || pgn == GNSSPGN.positionRapid,
            frame.source == (address ?? finder.chosen?.address)
        else { return }
        if let data {
            latest = (data, now)
            if data.latitude != nil { positionAt = now }
        } else if pgn == GNSSPGN.positionRapid {
            positionAt = now
        }
    }

    /// Whether a report of gpsd's is the receiver's, judged by its position. gpsd 3.22 makes a device
    /// of every sender on the bus, and its devices' names do not say whose fix they report: in the
    /// field rig, a Garmin at address 2 was reported as `nmea2000://can0:17` and `nmea2000://can0:176`,
    /// the addresses of two other senders. So a report is the receiver's when the receiver sent its
    /// position lately, and another's when another sender did and the receiver did not. A report
    /// without a position, while the receiver gives positions, is another device's, unless the
    /// receiver's own 129029 stands in for it (`apply`). A report of another device than the bus's
    /// is not the receiver configured either.
    public func admits(_ report: PositionReport, interface: String, now: Double) -> Bool {
        if let device = report.device {
            let bare = "nmea2000://" + interface
            guard device == bare || device.hasPrefix(bare + ":") else { return false }
        }
        guard let receiver = address ?? finder.chosen?.address else { return true }
        guard let latitude = report.latitude, let longitude = report.longitude else {
            guard let at = positionAt, now - at <= Self.freshFor, now >= at else { return true }
            guard let (data, dataAt) = latest, now - dataAt <= Self.freshFor, now >= dataAt else { return false }
            return data.latitude != nil && data.quality != nil
        }
        if finder.senders[receiver]?.sent(latitude: latitude, longitude: longitude) == true { return true }
        return !finder.senders.values.contains {
            $0.address != receiver && $0.sent(latitude: latitude, longitude: longitude)
        }
    }

    /// The report as sampled (`admits`, then `apply`), or nil to set it aside; and one more rule that
    /// needs memory (`inOrder`).
    public mutating func take(_ report: PositionReport, interface: String, now: Double) -> PositionReport? {
        guard admits(report, interface: interface, now: now) else { return nil }
        let taken = apply(to: report, now: now)
        return inOrder(taken) ? taken : nil
    }

    /// Reports go out in the order of their fixes. gpsd's devices lag one another, so a report of a
    /// fix older than one gone out before is a late copy, unless it is older by more than
    /// `setBackAfter` (the receiver's time set back). Notes the report's time when it goes out.
    public mutating func inOrder(_ report: PositionReport) -> Bool {
        guard let time = report.time?.timeIntervalSince1970 else { return true }
        if let newest = newestSent, time < newest, newest - time <= Self.setBackAfter { return false }
        newestSent = time
        return true
    }

    /// gpsd's STATUS for a 129029 method: what `FixState` reads back as the same quality.
    static func gpsdStatus(_ method: GNSSPositionData.Method) -> Int {
        switch method {
        case .dgnss: return 2
        case .rtkFixed: return 3
        case .rtkFloat: return 4
        case .deadReckoning: return 6
        case .manual: return 7
        case .simulated: return 8
        case .gnss, .preciseGNSS, .noGNSS, .error, .notAvailable: return 1
        }
    }

    /// `report` with the bus's word on the fix, if the bus has a fresh one from the receiver.
    public func apply(to report: PositionReport, now: Double) -> PositionReport {
        guard let (data, at) = latest, now - at <= Self.freshFor, now >= at, data.quality != nil else { return report }
        if report.gpsdMode >= 2 {
            // The same fix: its GNSS time within a second of the report's, where both have one.
            if let time = report.time, let fixTime = data.time, abs(time.timeIntervalSince1970 - fixTime) > 1 {
                return report
            }
            var adjusted = report
            adjusted.gpsdStatus = Self.gpsdStatus(data.method)
            return adjusted
        }
        // gpsd says no fix (no 129539 on the bus): the receiver's own position and method.
        return Self.report(from: data, speed: report.speed, track: report.track, device: report.device) ?? report
    }

    /// The receiver's own newest fix, from its 129029 of the last 2.5 s: what is sampled while gpsd
    /// reports nothing of a receiver that is on the bus.
    public func receiverReport(now: Double) -> PositionReport? {
        guard let (data, at) = latest, now - at <= Self.freshFor, now >= at else { return nil }
        let fresh = course.flatMap { now - $0.at <= Self.freshFor && now >= $0.at ? $0.data : nil }
        return Self.report(from: data, speed: fresh?.speed, track: fresh?.course)
    }

    static func report(from data: GNSSPositionData, speed: Double? = nil, track: Double? = nil, device: String? = nil)
        -> PositionReport?
    {
        guard data.quality != nil, let latitude = data.latitude, let longitude = data.longitude else { return nil }
        return PositionReport(
            time: data.time.map { Date(timeIntervalSince1970: $0) }, gpsdMode: data.altitude == nil ? 2 : 3,
            gpsdStatus: Self.gpsdStatus(data.method), latitude: latitude, longitude: longitude,
            altitudeHAE: data.altitude, speed: speed, track: track, hdop: data.hdop, pdop: data.pdop,
            satellitesUsed: data.satellites, device: device)
    }
}
