import Bounds
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
    /// The payload's raw bytes (for gps:info, a GPSList; for TaskData, base64 text of the chunk).
    public var content: Data
    /// Where this message sits in a chunked one; nil for a message sent whole.
    public var chunk: ChunkPosition?

    public init(
        messageID: String, senderID: String, technicalMessageType: String, sentAt: Date?, content: Data,
        chunk: ChunkPosition? = nil
    ) {
        self.messageID = messageID
        self.senderID = senderID
        self.technicalMessageType = technicalMessageType
        self.sentAt = sentAt
        self.content = content
        self.chunk = chunk
    }

    init(_ message: Agrirouter_Feed_Push_Notification_PushNotification.FeedMessage) {
        let header = message.header
        self.init(
            messageID: header.messageID, senderID: header.senderID, technicalMessageType: header.technicalMessageType,
            sentAt: header.hasSentTimestamp ? header.sentTimestamp.checkedDate : nil, content: message.content.value,
            chunk: header.hasChunkContext ? ChunkPosition(header.chunkContext) : nil)
    }

    init(_ message: Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage) {
        let header = message.header
        self.init(
            messageID: header.messageID, senderID: header.senderID, technicalMessageType: header.technicalMessageType,
            sentAt: header.hasSentTimestamp ? header.sentTimestamp.checkedDate : nil, content: message.content.value,
            chunk: header.hasChunkContext ? ChunkPosition(header.chunkContext) : nil)
    }
}

/// A chunk component as sent: context id, which chunk, of how many, and the whole content's size.
/// The numbers are the sender's and unchecked here; `ChunkJoiner` checks them.
public struct ChunkPosition: Sendable, Equatable {
    public var contextID: String
    public var current: Int64
    public var total: Int64
    public var totalSize: Int64

    public init(contextID: String, current: Int64, total: Int64, totalSize: Int64) {
        self.contextID = contextID
        self.current = current
        self.total = total
        self.totalSize = totalSize
    }

    /// nil for a component without a context id: there is nothing to join it by.
    init?(_ component: Agrirouter_Commons_ChunkComponent) {
        guard !component.contextID.isEmpty else { return nil }
        self.init(
            contextID: component.contextID, current: component.current, total: component.total,
            totalSize: component.totalSize)
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

    public init(
        status: String, latitude: Double? = nil, longitude: Double? = nil, altitude: Double? = nil,
        gnssTime: Date? = nil,
        hdop: Double? = nil, pdop: Double? = nil, satellites: Int? = nil
    ) {
        self.status = status
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
        self.gnssTime = gnssTime
        self.hdop = hdop
        self.pdop = pdop
        self.satellites = satellites
    }

    /// Reads a GPSEntry another machine sent, refusing what no receiver reports: a position outside
    /// WGS84's ranges or not finite, an altitude outside `Bounds.altitude`, a time outside
    /// `Bounds.epochSeconds`, a DOP above 100. One bad field refuses the whole entry: a sender that
    /// writes nonsense in one field cannot be trusted in the next. With `coordinatesWhateverTheStatus`
    /// (for EFDI, see `init(checking: Efdi_Time)`) coordinates count without a fix status.
    public init(checking entry: GPSEntry, coordinatesWhateverTheStatus: Bool = false) throws(OutOfBounds) {
        let status = entry.positionStatus
        // proto3 cannot tell 0 from unset: a position of exactly 0/0 is no position.
        let located =
            (status.isFix || coordinatesWhateverTheStatus) && !(entry.positionNorth == 0 && entry.positionEast == 0)
        var time: Date?
        if entry.hasGpsUtcTimestamp {
            guard let checked = entry.gpsUtcTimestamp.checkedDate else {
                throw OutOfBounds(
                    field: "gps_utc_timestamp",
                    reason: "\(entry.gpsUtcTimestamp.seconds) s is not a time from 1980 to 2200")
            }
            time = checked
        }
        let altitude = Double(entry.positionUp) / 1000
        self.init(
            status: status.agrirouterName,
            latitude: located
                ? try Bounds.require(entry.positionNorth, in: Bounds.latitude, field: "position_north") : nil,
            longitude: located
                ? try Bounds.require(entry.positionEast, in: Bounds.longitude, field: "position_east") : nil,
            altitude: located && entry.positionUp != 0
                ? try Bounds.require(altitude, in: Bounds.altitude, field: "position_up") : nil,
            gnssTime: time,
            hdop: try Self.dop(entry.hdop, field: "hdop"),
            pdop: try Self.dop(entry.pdop, field: "pdop"),
            satellites: entry.numberOfSatellites > 0
                ? Int(try Bounds.require(Double(entry.numberOfSatellites), in: 0...255, field: "number_of_satellites"))
                : nil)
    }

    /// A DOP: absent when 0 (proto3's unset), refused when negative, not finite or above 100.
    private static func dop(_ value: Double, field: String) throws(OutOfBounds) -> Double? {
        if value == 0 { return nil }
        return try Bounds.require(value, in: Bounds.dop, field: field)
    }

    /// A report read back from a store of ours: a value out of range there is damage, and is dropped
    /// (the position is then unknown) rather than shown or computed with.
    public static func stored(
        status: String, latitude: Double?, longitude: Double?, altitude: Double?, time: Double?,
        hdop: Double?, pdop: Double?, satellites: Int?
    ) -> ReportedPosition {
        let latitude = latitude.flatMap { Bounds.check($0, in: Bounds.latitude) }
        let longitude = longitude.flatMap { Bounds.check($0, in: Bounds.longitude) }
        let located = latitude != nil && longitude != nil
        return ReportedPosition(
            status: status, latitude: located ? latitude : nil, longitude: located ? longitude : nil,
            altitude: located ? altitude.flatMap { Bounds.check($0, in: Bounds.altitude) } : nil,
            gnssTime: time.flatMap(Bounds.date(secondsSince1970:)),
            hdop: hdop.flatMap { Bounds.check($0, in: Bounds.dop) },
            pdop: pdop.flatMap { Bounds.check($0, in: Bounds.dop) },
            satellites: satellites.flatMap { Bounds.satellites.contains($0) ? $0 : nil })
    }

    public var hasPosition: Bool { latitude != nil && longitude != nil }

    /// The status in the words `agrigps` uses for its own fix (no_fix, rtk_fixed, …).
    public var statusDescription: String { GPSEntry.PositionStatus.description(ofAgrirouterName: status) }
}

extension GPSEntry.PositionStatus {
    /// Whether the status claims a position at all.
    public var isFix: Bool {
        switch self {
        case .dGnss, .dDgnss, .dPreciseGnss, .dRtkFinteger, .dRtkFloat, .dEstDrMode, .dManualInput, .dSimulateMode:
            return true
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

extension Google_Protobuf_Timestamp {
    /// The time, if it is one agrigps accepts (`Bounds.epochSeconds`); SwiftProtobuf's own `date`
    /// traps on seconds near Int64's ends, which any sender can put on the wire.
    public var checkedDate: Date? { Bounds.date(seconds: seconds, nanos: nanos) }
}
