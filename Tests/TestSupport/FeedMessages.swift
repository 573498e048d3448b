import AgrirouterWire
import Foundation
import SwiftProtobuf

/// A GPSList with one entry per (status, latitude, longitude, GNSS time), at `altitude` (mm) if given.
public func gpsList(_ entries: [(GPSEntry.PositionStatus, Double, Double, Date)], altitude: Int64? = nil)
    -> Agrirouter_Technicalmessagetype_GPSList
{
    var list = Agrirouter_Technicalmessagetype_GPSList()
    list.gpsEntries = entries.map { status, latitude, longitude, time in
        var entry = GPSEntry()
        entry.positionStatus = status
        entry.positionNorth = latitude
        entry.positionEast = longitude
        if let altitude { entry.positionUp = altitude }
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: time)
        return entry
    }
    return list
}

/// A gps:info message from `sender` with one entry per (status, latitude, longitude, GNSS time).
public func gpsInfo(
    id: String = UUID().uuidString.lowercased(), from sender: String,
    _ entries: [(GPSEntry.PositionStatus, Double, Double, Date)]
) -> ReceivedFeedMessage {
    ReceivedFeedMessage(
        messageID: id, senderID: sender, technicalMessageType: TechnicalMessageType.gpsInfo,
        sentAt: entries.last?.3, content: try! gpsList(entries, altitude: 123_456).serializedBytes())
}
