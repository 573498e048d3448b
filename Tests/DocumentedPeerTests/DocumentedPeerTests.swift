import AgrirouterWire
import Foundation
import NIOCore
import NIOPosix
import SwiftProtobuf
import TestSupport
import Testing

/// A second endpoint written from DKE's documentation, not from agrigps, reads what `agrigps run`
/// publishes through the local agrirouter: onboarding as documented, capabilities, subscription,
/// then the feed (REST: queried page by page; MQTT: pushed), confirm and delete. Every envelope,
/// header and payload it gets is held to the documentation's rules, and what it reads must be the
/// replayed log's samples, in order, in both formats.
@Suite(.serialized, .timeLimit(.minutes(5)))
struct DocumentedPeerTests {
    static let subscribed: Set<String> = [
        TechnicalTypes.gpsInfo, TechnicalTypes.timeLog, TechnicalTypes.deviceDescription,
    ]
    static let log = "telit-he910"
    static let peerTAN = "TANP000001"

    /// A machine onboarded through `agrigps onboard`, with a TAN for the peer beside it; both, and the
    /// peer's event loop, torn down after `body`.
    static func withMachine(_ transport: String, _ body: (OnboardedMachine, any EventLoopGroup) async throws -> Void)
        async throws
    {
        let machine = try await OnboardedMachine.make(transport: transport, otherTANs: [peerTAN: "Documented peer"])
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        try await tearingDown({
            await machine.close()
            try? await group.shutdownGracefully()
        }) { try await body(machine, group) }
    }

    /// The peer onboarded at the machine's local agrirouter over the same transport.
    static func peer(of machine: OnboardedMachine, group: any EventLoopGroup, subscribed: Set<String>) async throws
        -> DocumentedPeer
    {
        try await DocumentedPeer.onboard(
            url: machine.simulator.onboardingURL, tan: peerTAN, trusting: machine.simulator.caCertificatePEM,
            gatewayID: machine.transport == "mqtt" ? "2" : "3", group: group, subscribed: subscribed)
    }

    @Test(
        "an endpoint written from the documentation reads agrigps's positions, every field within the documentation's rules",
        arguments: ["rest", "mqtt"])
    func readsWhatAgrigpsPublishes(transport: String) async throws {
        try await Self.withMachine(transport) { machine, group in
            let push = transport == "mqtt"
            let peer = try await Self.peer(of: machine, group: group, subscribed: Self.subscribed)
            try await Self.announce(peer, push: push)

            let run = try await AgrigpsCommand.run(
                ["run", "--replay", Fixtures.log(Self.log), "--state-dir", machine.state, "--spacing", "0.05"],
                timeout: 120)
            #expect(run.code == 0, "\(run.stderr.suffix(5))")
            let expected = try expectedEntries(Self.log)

            let read = push ? try await Self.readPushes(peer, entries: expected.count) : try await Self.readFeed(peer)
            peer.checkTeamSets()
            print(
                "documented peer over \(transport): \(read.count) messages (\(Set(read.map(\.header.technicalMessageType)).sorted())), "
                    + "\(peer.rules.messages.count) checked, \(expected.count) samples expected, \(peer.rules.violations.count) rules broken"
            )
            #expect(peer.rules.violations == [], "\(peer.rules.violations)")

            #expect(Set(read.map(\.header.senderID)) == [try machine.endpointID])
            let inOrder = read.sorted { $0.header.sequenceNumber < $1.header.sequenceNumber }
            let entries = try inOrder.filter { $0.header.technicalMessageType == TechnicalTypes.gpsInfo }
                .flatMap { try Agrirouter_Technicalmessagetype_GPSList(serializedBytes: $0.content.value).gpsEntries }
            #expect(entries.map(\.positionStatus.rawValue) == expected.map(\.status.rawValue))
            #expect(entries.map(\.positionNorth) == expected.map(\.latitude))
            let times = try inOrder.filter { $0.header.technicalMessageType == TechnicalTypes.timeLog }
                .flatMap { try Efdi_TimeLog(serializedBytes: $0.content.value).time }
            #expect(times.map(\.positionStart.positionStatus.rawValue) == expected.map(\.status.rawValue))
            #expect(times.map(\.positionStart.positionNorth) == expected.map(\.latitude))
            #expect(read.contains { $0.header.technicalMessageType == TechnicalTypes.deviceDescription })
            // Everything was confirmed or deleted: the feed is empty.
            #expect(try await peer.queryFeed(since: peer.rules.since).isEmpty)
            await peer.close()
        }
    }

    @Test(
        "agrigps reads what an endpoint written from the documentation publishes, sent in the documentation's JSON form",
        arguments: ["rest", "mqtt"])
    func agrigpsReadsThePeer(transport: String) async throws {
        try await Self.withMachine(transport) { machine, group in
            func run() async throws {
                let run = try await AgrigpsCommand.run(
                    [
                        "run", "--replay", Fixtures.log("ublox-lea-4h"), "--state-dir", machine.state, "--spacing",
                        "0.05",
                    ], timeout: 120)
                #expect(run.code == 0, "\(run.stderr.suffix(5))")
            }
            try await run()  // agrigps announces itself and subscribes
            let peer = try await Self.peer(of: machine, group: group, subscribed: [TechnicalTypes.gpsInfo])
            try await Self.announce(
                peer, types: [TechnicalTypes.gpsInfo], direction: .sendReceive, push: transport == "mqtt")

            // Two positions, the later one RTK fixed: a GPSList as tmt/gps.adoc describes it, published.
            var list = Agrirouter_Technicalmessagetype_GPSList()
            list.gpsEntries = [
                (52.005, 8.008, 3.0, Agrirouter_Technicalmessagetype_GPSList.GPSEntry.PositionStatus.dGnss),
                (52.0061, 8.0092, 1.0, .dRtkFinteger),
            ].map { latitude, longitude, ago, status in
                var entry = Agrirouter_Technicalmessagetype_GPSList.GPSEntry()
                (entry.positionNorth, entry.positionEast, entry.positionUp, entry.positionStatus) = (
                    latitude, longitude, 61_000, status
                )
                (entry.pdop, entry.hdop, entry.numberOfSatellites) = (1.4, 0.8, 14)
                entry.gpsUtcTimestamp = Google_Protobuf_Timestamp(date: Date().addingTimeInterval(-ago))
                return entry
            }
            try await peer.command(TechnicalTypes.gpsInfo, list, mode: .publish, expecting: [.ack], codes: [201])

            try await run()  // its feed catch-up reads the peer's message
            let others = try await AgrigpsCommand.run(["others", "--json", "--state-dir", machine.state])
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(others.stdout.joined().utf8)) as? [String: Any])
            let seen = try #require((object["machines"] as? [[String: Any]])?.first, "\(others.stdout)")
            #expect(seen["name"] as? String == "Documented peer")
            #expect(seen["latitude"] as? Double == 52.0061 && seen["longitude"] as? Double == 8.0092)
            #expect(seen["altitude_m"] as? Double == 61 && seen["fix"] as? String == "rtk_fixed", "\(seen)")
            let tractor = try machine.endpointID
            #expect(await machine.simulator.feed(endpoint: tractor).isEmpty, "agrigps confirmed the peer's message")
            #expect(peer.rules.violations == [], "\(peer.rules.violations)")
            await peer.close()
        }
    }

    /// Capabilities first (commands/endpoint.adoc): the three types received, push on for MQTT; 201.
    /// Then the subscription to all three in one message (it replaces the previous one).
    static func announce(
        _ peer: DocumentedPeer, types: Set<String> = subscribed,
        direction: Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Direction = .receive, push: Bool
    ) async throws {
        var specification = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification()
        specification.capabilities = types.sorted().map { type in
            var capability = Agrirouter_Request_Payload_Endpoint_CapabilitySpecification.Capability()
            capability.technicalMessageType = type
            capability.direction = direction
            return capability
        }
        specification.appCertificationID = "documented-peer-app"
        specification.appCertificationVersionID = "documented-peer-version"
        specification.enablePushNotifications = push ? .enabled : .disabled
        _ = try await peer.command(
            TechnicalTypes.capabilities, specification, expecting: [.ack, .ackWithMessages], codes: [201])

        var subscription = Agrirouter_Request_Payload_Endpoint_Subscription()
        subscription.technicalMessageTypes = types.sorted().map { type in
            var item = Agrirouter_Request_Payload_Endpoint_Subscription.MessageTypeSubscriptionItem()
            item.technicalMessageType = type
            item.position = type == TechnicalTypes.timeLog
            return item
        }
        // The SDKs' tests accept 200, 201 or 204 for a subscription.
        _ = try await peer.command(
            TechnicalTypes.subscription, subscription, expecting: [.ack, .ackWithMessages], codes: [200, 201, 204])
    }

    /// REST: page by page; each page's descriptions deleted once read, the rest confirmed.
    static func readFeed(_ peer: DocumentedPeer) async throws -> [FeedMessage] {
        var read: [FeedMessage] = []
        for _ in 0..<200 {
            let page = try await peer.queryFeed(since: peer.rules.since)
            if page.isEmpty { break }
            try await settle(page, peer)
            read += page
        }
        return read
    }

    /// MQTT: pushes until the log's samples are all in, then the same settling.
    static func readPushes(_ peer: DocumentedPeer, entries: Int) async throws -> [FeedMessage] {
        let deadline = Date().addingTimeInterval(30)
        var pushed: [FeedMessage] = []
        while Date() < deadline {
            pushed = try await peer.pushedSoFar()
            let gps = pushed.filter { $0.header.technicalMessageType == TechnicalTypes.gpsInfo }
                .reduce(0) {
                    $0
                        + ((try? Agrirouter_Technicalmessagetype_GPSList(serializedBytes: $1.content.value).gpsEntries
                            .count) ?? 0)
                }
            let times = pushed.filter { $0.header.technicalMessageType == TechnicalTypes.timeLog }
                .reduce(0) { $0 + ((try? Efdi_TimeLog(serializedBytes: $1.content.value).time.count) ?? 0) }
            if gps >= entries, times >= entries { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        for start in stride(from: 0, to: pushed.count, by: 25) {
            try await settle(Array(pushed[start..<min(start + 25, pushed.count)]), peer)
        }
        return pushed
    }

    static func settle(_ messages: [FeedMessage], _ peer: DocumentedPeer) async throws {
        let descriptions = messages.filter { $0.header.technicalMessageType == TechnicalTypes.deviceDescription }.map(
            \.header.messageID)
        let others = messages.map(\.header.messageID).filter { !descriptions.contains($0) }
        if !descriptions.isEmpty { try await peer.delete(descriptions) }
        if !others.isEmpty { try await peer.confirm(others) }
    }
}
