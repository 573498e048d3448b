import AgrirouterWire
import Foundation
import SwiftProtobuf

/// A gps:info message from `sender` with one entry per (status, latitude, longitude, GNSS time).
public func gpsInfo(id: String = UUID().uuidString.lowercased(), from sender: String,
             _ entries: [(GPSEntry.PositionStatus, Double, Double, Date)]) -> ReceivedFeedMessage {
    var list = Agrirouter_Technicalmessagetype_GPSList()
    list.gpsEntries = entries.map { status, latitude, longitude, time in
        var entry = GPSEntry()
        entry.positionStatus = status
        entry.positionNorth = latitude
        entry.positionEast = longitude
        entry.positionUp = 123_456
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: time)
        return entry
    }
    return ReceivedFeedMessage(messageID: id, senderID: sender, technicalMessageType: TechnicalMessageType.gpsInfo,
                               sentAt: entries.last?.3, content: try! list.serializedBytes())
}
