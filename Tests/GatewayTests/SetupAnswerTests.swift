import AgrirouterLink
import AgrirouterWire
import Foundation
import TestSupport
import Testing

@testable import Gateway

/// The endpoint set-up takes its own answers and leaves the rest for the others.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct SetupAnswerTests {
    @Test func theEndpointSetUpLeavesWhatItsPollsBringForTheOthers() async throws {
        let rig = try await Rig.make()
        try await tearingDown({ await rig.close() }) {
            let connection = rig.connection
            let ping = try await connection.send(TechnicalMessageType.ping, payload: nil, for: .check)
            await rig.simulator.deliver(Data(), from: "someone", to: connection.endpoint.deviceAlternateId)
            try await EndpointSetup(applicationID: "app", certificationVersionID: "v", answerTimeout: 10).run(
                on: connection)
            #expect(await connection.answers(for: .check).map(\.applicationMessageID) == [ping.applicationMessageID])
            #expect(await connection.answers(for: .reader).map(\.envelope.type) == [.pushNotification])
            #expect(await connection.answers(for: .setup).isEmpty, "the set-up took its own")
        }
    }
}
