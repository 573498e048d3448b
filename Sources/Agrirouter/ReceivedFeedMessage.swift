import Foundation
import SwiftProtobuf

/// A message another endpoint sent us, as a push or a feed query delivers it. Both carry the same
/// header under different protobuf types; this is the part of it the gateway reads.
public struct ReceivedFeedMessage: Sendable, Equatable {
    public var messageID: String
    public var senderID: String
    public var technicalMessageType: String
    /// When agrirouter received it from the sender.
    public var sentAt: Date?
    /// The payload's raw bytes (for gps:info, a GPSList).
    public var content: Data

    public init(messageID: String, senderID: String, technicalMessageType: String, sentAt: Date?, content: Data) {
        self.messageID = messageID
        self.senderID = senderID
        self.technicalMessageType = technicalMessageType
        self.sentAt = sentAt
        self.content = content
    }

    init(_ message: Agrirouter_Feed_Push_Notification_PushNotification.FeedMessage) {
        let header = message.header
        self.init(messageID: header.messageID, senderID: header.senderID, technicalMessageType: header.technicalMessageType,
                  sentAt: header.hasSentTimestamp ? header.sentTimestamp.date : nil, content: message.content.value)
    }

    init(_ message: Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage) {
        let header = message.header
        self.init(messageID: header.messageID, senderID: header.senderID, technicalMessageType: header.technicalMessageType,
                  sentAt: header.hasSentTimestamp ? header.sentTimestamp.date : nil, content: message.content.value)
    }
}

extension DecodedResponse {
    /// The messages a push notification or a feed query answer carries; none for anything else.
    public var feedMessages: [ReceivedFeedMessage] {
        switch body {
        case .pushNotification(let push): return push.messages.map(ReceivedFeedMessage.init)
        case .feedMessages(let page): return page.messages.map(ReceivedFeedMessage.init)
        default: return []
        }
    }
}

/// One position another machine reported, read from a GPSEntry without guessing: what it did not
/// send stays nil.
public struct ReportedPosition: Sendable, Equatable {
    /// agrirouter's position status, e.g. "D_RTK_FINTEGER".
    public var status: String
    public var latitude: Double?
    public var longitude: Double?
    /// Metres (GPSEntry carries millimetres).
    public var altitude: Double?
    public var gnssTime: Date?
    public var hdop: Double?
    public var pdop: Double?
    public var satellites: Int?

    public init(status: String, latitude: Double? = nil, longitude: Double? = nil, altitude: Double? = nil, gnssTime: Date? = nil,
                hdop: Double? = nil, pdop: Double? = nil, satellites: Int? = nil) {
        self.status = status
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.gnssTime = gnssTime
        self.hdop = hdop
        self.pdop = pdop
        self.satellites = satellites
    }

    public init(_ entry: GPSEntry) {
        let status = entry.positionStatus
        // proto3 cannot tell 0 from unset: a position of exactly 0/0 from a status without a fix is no position.
        let located = status.isFix && !(entry.positionNorth == 0 && entry.positionEast == 0)
        self.init(status: status.agrirouterName,
                  latitude: located ? entry.positionNorth : nil,
                  longitude: located ? entry.positionEast : nil,
                  altitude: located && entry.positionUp != 0 ? Double(entry.positionUp) / 1000 : nil,
                  gnssTime: entry.hasGpsUtcTimestamp ? entry.gpsUtcTimestamp.date : nil,
                  hdop: entry.hdop > 0 ? entry.hdop : nil,
                  pdop: entry.pdop > 0 ? entry.pdop : nil,
                  satellites: entry.numberOfSatellites > 0 ? Int(entry.numberOfSatellites) : nil)
    }

    public var hasPosition: Bool { latitude != nil && longitude != nil }

    /// The status in the words `agrigps` uses for its own fix (no_fix, rtk_fixed, …).
    public var statusDescription: String { GPSEntry.PositionStatus.description(ofAgrirouterName: status) }
}

extension GPSEntry.PositionStatus {
    /// Whether the status claims a position at all.
    public var isFix: Bool {
        switch self {
        case .dGnss, .dDgnss, .dPreciseGnss, .dRtkFinteger, .dRtkFloat, .dEstDrMode, .dManualInput, .dSimulateMode: return true
        default: return false
        }
    }

    static let names: [(GPSEntry.PositionStatus, agrirouter: String, ours: String)] = [
        (.dNoGps, "D_NO_GPS", "no_fix"), (.dGnss, "D_GNSS", "autonomous"), (.dDgnss, "D_DGNSS", "dgps"),
        (.dPreciseGnss, "D_PRECISE_GNSS", "precise"), (.dRtkFinteger, "D_RTK_FINTEGER", "rtk_fixed"),
        (.dRtkFloat, "D_RTK_FLOAT", "rtk_float"), (.dEstDrMode, "D_EST_DR_MODE", "dead_reckoning"),
        (.dManualInput, "D_MANUAL_INPUT", "manual"), (.dSimulateMode, "D_SIMULATE_MODE", "simulated"),
        (.dError, "D_ERROR", "receiver_error"), (.dNotAvailable, "D_NOT_AVAILABLE", "no_receiver"),
    ]

    /// The name in agrirouter's .proto, e.g. "D_RTK_FINTEGER"; "UNKNOWN_<n>" for a value it does not define.
    public var agrirouterName: String {
        Self.names.first { $0.0 == self }?.agrirouter ?? "UNKNOWN_\(rawValue)"
    }

    static func description(ofAgrirouterName name: String) -> String {
        names.first { $0.agrirouter == name }?.ours ?? name.lowercased()
    }
}
