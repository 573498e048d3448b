import AgrirouterWire
import Foundation
import Spool
import StateDirectory
import Testing

@testable import Gateway

@Suite struct TaskDataSetupTests {
    @Test func taskDataIsDeclaredReceivedAndSubscribedWhateverIsPublished() {
        for outputs in [[SpoolOutput.gpsInfo], [.efdi], [.gpsInfo, .efdi]] {
            let setup = EndpointSetup(applicationID: "app", certificationVersionID: "v", outputs: outputs)
            let capability = setup.capabilities.capabilities.first {
                $0.technicalMessageType == TechnicalMessageType.taskData
            }
            #expect(capability?.direction == .receive)
            #expect(
                setup.subscription.technicalMessageTypes.contains {
                    $0.technicalMessageType == TechnicalMessageType.taskData
                })
        }
    }

    @Test func aSetUpRecordedBeforeTaskDataIsStale() throws {
        let setup = EndpointSetup(applicationID: "app", certificationVersionID: "v")
        // The fingerprint as the version before TaskData computed it: the same digest of the payloads without it.
        var capabilities = setup.capabilities
        capabilities.capabilities.removeAll { $0.technicalMessageType == TechnicalMessageType.taskData }
        var subscription = setup.subscription
        subscription.technicalMessageTypes.removeAll { $0.technicalMessageType == TechnicalMessageType.taskData }
        let old = String(
            FNV1a.hash(
                Array("e".utf8) + (try capabilities.serializedBytes() as [UInt8])
                    + (try subscription.serializedBytes() as [UInt8])),
            radix: 16)
        let record = EndpointSetupRecord(endpointID: "e", fingerprint: old, acknowledgedAt: Date())
        #expect(old != setup.fingerprint(endpointID: "e"))
        #expect(
            record.stillValid(endpointID: "e", fingerprint: setup.fingerprint(endpointID: "e"), maximumAge: 86_400)
                == nil,
            "a box upgraded within a day sends its set-up once more")
        #expect(record.stillValid(endpointID: "e", fingerprint: old, maximumAge: 86_400) != nil)
    }
}
