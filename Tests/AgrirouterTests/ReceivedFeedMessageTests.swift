@testable import Agrirouter
import Foundation
import SwiftProtobuf
import Testing

@Suite("Received gps:info")
struct ReceivedFeedMessageTests {
    @Test("a GPSEntry reads back as sent: millimetres to metres, status by name, unset stays unset")
    func reportedPosition() {
        var entry = GPSEntry()
        entry.positionStatus = .dRtkFinteger
        entry.positionNorth = 52.1
        entry.positionEast = 8.2
        entry.positionUp = 101_250
        entry.hdop = 0.8
        entry.numberOfSatellites = 14
        entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date(timeIntervalSince1970: 1_790_000_000.25))
        let position = ReportedPosition(entry)
        #expect(position == ReportedPosition(status: "D_RTK_FINTEGER", latitude: 52.1, longitude: 8.2, altitude: 101.25,
                                             gnssTime: Date(timeIntervalSince1970: 1_790_000_000.25), hdop: 0.8, satellites: 14))
        #expect(position.statusDescription == "rtk_fixed")
    }

    @Test("no fix, no position: D_NO_GPS with zeros has no coordinates")
    func noFix() {
        var entry = GPSEntry()
        entry.positionStatus = .dNoGps
        let position = ReportedPosition(entry)
        #expect(!position.hasPosition && position.status == "D_NO_GPS" && position.statusDescription == "no_fix")
        #expect(position.gnssTime == nil && position.altitude == nil)
        var unknown = GPSEntry()
        unknown.positionStatus = .UNRECOGNIZED(42)
        #expect(ReportedPosition(unknown).status == "UNKNOWN_42")
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
        let queried = try Agrirouter_Feed_Response_MessageQueryResponse.FeedMessage(serializedBytes: try pushed.serializedBytes() as Data)
        var page = Agrirouter_Feed_Response_MessageQueryResponse()
        page.messages = [queried]
        let expected = ReceivedFeedMessage(messageID: "m1", senderID: "peer", technicalMessageType: "gps:info",
                                           sentAt: Date(timeIntervalSince1970: 1_790_000_000), content: Data([1, 2, 3]))
        var envelope = Agrirouter_Response_ResponseEnvelope()
        envelope.type = .pushNotification
        #expect(DecodedResponse(envelope: envelope, payloadTypeURL: "", body: .pushNotification(push)).feedMessages == [expected])
        envelope.type = .ackForFeedMessage
        #expect(DecodedResponse(envelope: envelope, payloadTypeURL: "", body: .feedMessages(page)).feedMessages == [expected])
        #expect(DecodedResponse(envelope: envelope, payloadTypeURL: "", body: .ack).feedMessages.isEmpty)
    }
}
