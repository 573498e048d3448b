import Bounds
import Foundation
import SwiftProtobuf

/// EFDI another machine sent: its TimeLogs' positions and its device description's name.
public enum EFDIContent {
    /// Parses a received TimeLog. EFDI is raw protobuf, never base64 or chunked.
    public static func timeLog(from content: Data) throws(CodecError) -> Efdi_TimeLog {
        do {
            return try Efdi_TimeLog(serializedBytes: content)
        } catch {
            throw .malformedPayload(type: "TimeLog", reason: "\(error)")
        }
    }

    /// Parses a received device description.
    public static func taskData(from content: Data) throws(CodecError) -> Efdi_ISO11783_TaskData {
        do {
            return try Efdi_ISO11783_TaskData(serializedBytes: content)
        } catch {
            throw .malformedPayload(type: "ISO11783_TaskData", reason: "\(error)")
        }
    }

    /// The name a description gives its machine: the first device's designator, trimmed and cut to
    /// ISOXML's 32 characters (like endpoint names, it is made safe where it is shown); nil when it
    /// gives none.
    public static func designator(of taskData: Efdi_ISO11783_TaskData) -> String? {
        let name = String(
            (taskData.device.first?.deviceDesignator ?? "").trimmingCharacters(in: .whitespacesAndNewlines).prefix(32)
        )
        .trimmingCharacters(in: .whitespacesAndNewlines)
        return name.isEmpty ? nil : name
    }
}

extension ReportedPosition {
    /// The position one `Time` of another machine's TimeLog reports: `position_stop` when it has
    /// coordinates (the later of the two), else `position_start`; nil when the `Time` has no
    /// coordinates at all (terminals log many values without a position).
    ///
    /// Unlike gps:info, EFDI senders are terminals that often leave the status unset (D_NO_GPS) or at
    /// D_NOT_AVAILABLE beside valid coordinates: coordinates other than 0/0 are taken whatever the
    /// status says, except D_ERROR, and the status is kept as sent. The time is the position's GNSS
    /// time, else the `Time`'s stop or start. Values out of range refuse the whole `Time`.
    public init?(checking time: Efdi_Time) throws(OutOfBounds) {
        let located: (Efdi_Position) -> Bool = { position in
            (position.positionNorth != 0 || position.positionEast != 0) && position.positionStatus != .dError
        }
        let useStop = time.hasPositionStop && located(time.positionStop)
        guard useStop || (time.hasPositionStart && located(time.positionStart)) else { return nil }
        let position = useStop ? time.positionStop : time.positionStart
        var entry = GPSEntry()
        entry.positionNorth = position.positionNorth
        entry.positionEast = position.positionEast
        entry.positionUp = position.positionUp
        entry.pdop = position.pdop
        entry.hdop = position.hdop
        entry.numberOfSatellites = position.numberOfSatellites
        // A status agrirouter does not define reads as D_ERROR's "unknown", never as a fix.
        entry.positionStatus = GPSEntry.PositionStatus(rawValue: position.positionStatus.rawValue) ?? .dError
        let stamp = [
            position.hasGpsUtcTimestamp ? position.gpsUtcTimestamp : nil,
            useStop && time.hasStop ? time.stop : nil, time.hasStart ? time.start : nil,
        ].compactMap { $0 }.first
        if let stamp { entry.gpsUtcTimestamp = stamp }
        try self.init(checking: entry, coordinatesWhateverTheStatus: true)
    }
}
