import Bounds
import Foundation
import SwiftProtobuf
import Testing

@testable import AgrirouterWire

@Suite("Received gps:info")
struct ReceivedFeedMessageTests {
    @Test("a GPSEntry reads back as sent: millimetres to metres, status by name, unset stays unset")
    func reportedPosition() throws {
        var entry = GPSEntry()
        entry.positionStatus = .dRtkFinteger
        entry.positionNorth = 52.1
        entry.positionEast = 8.2
        entry.positionUp = 101_250
        entry.hdop = 0.8
        entry.numberOfSatellites = 14
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date(timeIntervalSince1970: 1_790_000_000.25))
        let position = try ReportedPosition(checking: entry)
        #expect(
            position
                == ReportedPosition(
                    status: "D_RTK_FINTEGER", latitude: 52.1, longitude: 8.2, altitude: 101.25,
                    gnssTime: Date(timeIntervalSince1970: 1_790_000_000.25), hdop: 0.8, satellites: 14))
        #expect(position.statusDescription == "rtk_fixed")
    }

    @Test("no fix, no position: D_NO_GPS with zeros has no coordinates")
    func noFix() throws {
        var entry = GPSEntry()
        entry.positionStatus = .dNoGps
        let position = try ReportedPosition(checking: entry)
        #expect(!position.hasPosition && position.status == "D_NO_GPS" && position.statusDescription == "no_fix")
        #expect(position.gnssTime == nil && position.altitude == nil)
        var unknown = GPSEntry()
        unknown.positionStatus = .UNRECOGNIZED(42)
        #expect(try ReportedPosition(checking: unknown).status == "UNKNOWN_42")
    }

    @Test("push and feed query carry the same header under two types, read alike")
    func bothKinds() throws {
        var pushed = Agrirouter_Feed_Push_Notification_PushNotification.FeedMessage()
        pushed.header.messageID = "m1"
        pushed.header.senderID = "peer"
        pushed.header.technicalMessageType = "gps:info"
        pushed.header.sentTimestamp = Google_Protobuf_Timestamp(date: Date(timeIntervalSince1970: 1_790_000_000))
        pushed.content.value = Data([1, 2, 3])
        var push = Agrirouter_Feed_Push_Notification_PushNotification()
        push.messages = [pushed]
        let queried = try Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage(
            serializedBytes: try pushed.serializedBytes() as Data)
        var page = Agrirouter_Feed_Response_MessageQueryResponse()
        page.messages = [queried]
        let expected = ReceivedFeedMessage(
            messageID: "m1", senderID: "peer", technicalMessageType: "gps:info",
            sentAt: Date(timeIntervalSince1970: 1_790_000_000), content: Data([1, 2, 3]))
        var envelope = Agrirouter_Response_ResponseEnvelope()
        envelope.type = .pushNotification
        #expect(
            DecodedResponse(envelope: envelope, payloadTypeURL: "", body: .pushNotification(push)).feedMessages == [
                expected
            ])
        envelope.type = .ackForFeedMessage
        #expect(
            DecodedResponse(envelope: envelope, payloadTypeURL: "", body: .feedMessages(page)).feedMessages == [
                expected
            ])
        #expect(DecodedResponse(envelope: envelope, payloadTypeURL: "", body: .ack).feedMessages.isEmpty)
    }

    /// A valid entry with one field changed by `change`.
    static func entry(_ change: (inout GPSEntry) -> Void) -> GPSEntry {
        var entry = GPSEntry()
        entry.positionStatus = .dGnss
        entry.positionNorth = 52.1
        entry.positionEast = 8.2
        entry.positionUp = 101_250
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date(timeIntervalSince1970: 1_790_000_000))
        change(&entry)
        return entry
    }

    static let hostile: [(String, @Sendable (inout GPSEntry) -> Void)] = [
        ("gps_utc_timestamp", { $0.gpsUtcTimestamp.seconds = .min }),
        ("gps_utc_timestamp", { $0.gpsUtcTimestamp.seconds = .max }),
        ("gps_utc_timestamp", { $0.gpsUtcTimestamp.nanos = -1 }),
        ("gps_utc_timestamp", { $0.gpsUtcTimestamp.seconds = 0 }),
        ("position_north", { $0.positionNorth = 91 }),
        ("position_north", { $0.positionNorth = .infinity }),
        ("position_north", { $0.positionNorth = -.infinity }),
        ("position_north", { $0.positionNorth = .nan }),
        ("position_north", { $0.positionNorth = 1e308 }),
        ("position_east", { $0.positionEast = 200 }),
        ("position_east", { $0.positionEast = -180.0001 }),
        ("position_up", { $0.positionUp = 9_200_000_000_000_000_000 / 1000 * 1000 }),
        ("position_up", { $0.positionUp = .min }),
        ("hdop", { $0.hdop = .infinity }),
        ("hdop", { $0.hdop = -1 }),
        ("pdop", { $0.pdop = 1e300 }),
        ("number_of_satellites", { $0.numberOfSatellites = .max }),
    ]

    @Test(
        "what no receiver reports is refused, naming the field: extreme times, positions off WGS84, absurd altitudes and DOPs",
        arguments: hostile.indices)
    func refused(_ index: Int) {
        let (field, change) = Self.hostile[index]
        #expect(throws: OutOfBounds.self) { try ReportedPosition(checking: Self.entry(change)) }
        do {
            _ = try ReportedPosition(checking: Self.entry(change))
        } catch {
            #expect(error.field == field, "\(error)")
        }
    }

    @Test("the edges of the ranges are accepted")
    func edges() throws {
        let corner = try ReportedPosition(
            checking: Self.entry {
                $0.positionNorth = -90
                $0.positionEast = 180
                $0.positionUp = -1_000_000
            })
        #expect(corner.latitude == -90 && corner.longitude == 180 && corner.altitude == -1000)
    }

    @Test("a header time near Int64's ends reads as no time instead of trapping")
    func headerTime() throws {
        var pushed = Agrirouter_Feed_Push_Notification_PushNotification.FeedMessage()
        pushed.header.messageID = "m1"
        for seconds in [Int64.min, .max, -1, 7_258_118_401] {
            pushed.header.sentTimestamp.seconds = seconds
            #expect(ReceivedFeedMessage(pushed).sentAt == nil)
        }
        pushed.header.sentTimestamp.seconds = 1_790_000_000
        #expect(ReceivedFeedMessage(pushed).sentAt == Date(timeIntervalSince1970: 1_790_000_000))
    }
}
