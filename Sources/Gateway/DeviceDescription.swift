import AgrirouterWire
import Crypto
import Foundation
import SwiftProtobuf

/// The box described to farm software as an ISO 11783-10 device, for EFDI: one GNSS device with a
/// navigation element, the speed it logs and where that speed comes from. Built as ISO 11783-10
/// Annex F asks of a self-built description: ids, NAME and labels the schema requires, and nothing
/// the box does not measure (no work state, no implement geometry, no offsets it was not told).
public struct DeviceDescription: Sendable, Equatable {
    /// ISOXML ids: agrirouter's efdi.proto carries "DVC-1" as number −1 with the text kept in `uri`.
    public static let deviceID = uid(-1, "DVC-1")
    public static let rootElementID = uid(-1, "DET-1")
    public static let navigationElementID = uid(-2, "DET-2")
    /// The machine whose controllers the box listens to on its CAN bus (a tractor), when it does.
    public static let machineElementID = uid(-3, "DET-3")

    /// Object ids, one space per device (1 to 65534).
    enum ObjectID {
        static let root: UInt32 = 1
        static let navigation: UInt32 = 2
        static let speed: UInt32 = 10
        static let speedSource: UInt32 = 11
        static let kilometresPerHour: UInt32 = 20
        static let machine: UInt32 = 3
        static let workState: UInt32 = 30
        static let machineSpeed: UInt32 = 31
        static let machineSpeedSource: UInt32 = 32
        static let engineSpeed: UInt32 = 33
        static let fuelRate: UInt32 = 34
        static let engineHours: UInt32 = 35
        static let fuelUsed: UInt32 = 36
        static let effectiveTime: UInt32 = 37
        static let ineffectiveTime: UInt32 = 38
        static let totalFuel: UInt32 = 39
        static let engineTime: UInt32 = 40
    }

    /// The process data the TimeLogs carry.
    public enum DDI {
        /// Actual Speed, mm/s. From GNSS it is the ground speed's magnitude: a receiver cannot tell
        /// forward from reverse, so it is never negative.
        public static let actualSpeed: UInt32 = 397
        /// Speed Source: 1 wheel-based, 2 ground-based, 3 navigation-based, 6 machine selected.
        public static let speedSource: UInt32 = 400
        /// Actual Work State: 0 off, 1 on, 2 error, 3 not available.
        public static let workState: UInt32 = 141
        /// Actual Engine Speed, 0.0001 r/min.
        public static let engineSpeed: UInt32 = 484
        /// Instantaneous Fuel Consumption per Time, mm³/s.
        public static let fuelRate: UInt32 = 149
        /// Lifetime Engine Hours, 0.1 h: the engine's own total (J1939 SPN 247).
        public static let lifetimeEngineHours: UInt32 = 493
        /// Lifetime Fuel Consumption, 0.5 L: the engine's own total (J1939 SPN 250, the same steps).
        public static let lifetimeFuel: UInt32 = 276
        /// Effective Total Time, s: working, as the box counted it (DDI 141 on), a running total.
        public static let effectiveTime: UInt32 = 119
        /// Ineffective Total Time, s: not working, a running total.
        public static let ineffectiveTime: UInt32 = 120
        /// Total Fuel Consumption, ml: the fuel rate summed over time, a running total.
        public static let totalFuel: UInt32 = 148
        /// Total Engine Hours, 0.05 h: the time the engine ran (EEC1's speed above 0) as the box
        /// counted it, a running total; whole steps of 180 s.
        public static let totalEngineHours: UInt32 = 492
    }

    /// Whether it describes the machine on the box's bus too (`machine` of the initialiser).
    public let describesMachine: Bool

    /// The description as sent: an ISO11783_TaskData with the device only.
    public let taskData: Efdi_ISO11783_TaskData
    /// The team set context id: the same for the same description from the same endpoint, and
    /// different as soon as either changes (a new software version, another endpoint), as agrirouter
    /// asks. Every TimeLog goes out under the id of a description agrirouter has taken.
    public let teamSetContextID: String
    /// The serialised description's size in bytes, which the publisher budgets with.
    public let payloadSize: Int

    /// `endpointID` is agrirouter's id of this box (its serial number and NAME identity come from it);
    /// `softwareVersion` the agrigps version; `name` the endpoint's name in agrirouter, once known: farm
    /// software and other machines name a machine by its description's designator, and the name the
    /// farmer gave it says more than "agrigps GNSS".
    ///
    /// `machine`: the box listens to a machine's controllers on its CAN bus, so the description has
    /// a third element for what they say (work state, the bus's speed and its source, engine speed,
    /// fuel rate, engine hours and fuel used), which the TimeLogs then carry where the bus gave them.
    public init(endpointID: String, softwareVersion: String, name: String? = nil, machine: Bool = false) {
        describesMachine = machine
        var device = Efdi_Device()
        device.deviceID = Self.deviceID
        let named = (name ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
        device.deviceDesignator = named.isEmpty ? "agrigps GNSS" : String(named.prefix(32))
        device.deviceSoftwareVersion = String(softwareVersion.prefix(32))
        device.clientName = Self.clientName(identity: Self.identityNumber(endpointID))
        device.deviceSerialNumber = Self.serialNumber(endpointID)
        device.deviceStructureLabel = Self.structureLabel
        device.deviceLocalizationLabel = Self.localizationLabel
        device.deviceElement = Self.elements + (machine ? [Self.machineElement] : [])
        device.deviceProcessData =
            [Self.processData(ObjectID.speed, ddi: DDI.actualSpeed, designator: "Speed")]
            + (machine ? Self.machineProcessData : [])
        var source = Efdi_DeviceProperty()
        source.devicePropertyObjectID = ObjectID.speedSource
        source.devicePropertyDdi = DDI.speedSource
        source.devicePropertyValue = 3
        source.devicePropertyDesignator = "Speed source"
        device.deviceProperty = [source]
        var kmh = Efdi_DeviceValuePresentation()
        kmh.deviceValuePresentationObjectID = ObjectID.kilometresPerHour
        kmh.scale = 0.0036
        kmh.numberOfDecimals = 1
        kmh.unitDesignator = "km/h"
        device.deviceValuePresentation = [kmh]

        var taskData = Efdi_ISO11783_TaskData()
        taskData.versionMajor = .e2Fdis  // ISO 11783-10 edition 2, version 4
        taskData.versionMinor = 3
        taskData.taskControllerManufacturer = "agrigps"
        taskData.taskControllerVersion = device.deviceSoftwareVersion
        taskData.dataTransferOrigin = .mics
        taskData.dataTransferLanguage = "en"
        taskData.device = [device]
        self.taskData = taskData
        // Serialising plain fields cannot fail; the endpoint id alone still gives a stable id if it did.
        let bytes = (try? taskData.serializedBytes() as [UInt8]) ?? []
        payloadSize = bytes.isEmpty ? 1024 : bytes.count
        teamSetContextID = Self.uuidV5(name: Array(endpointID.utf8) + [0] + bytes)
    }

    private static var elements: [Efdi_DeviceElement] {
        let root = element(
            rootElementID, ObjectID.root, .cDevice, "agrigps", number: 0, parent: 0,
            references: [ObjectID.speed, ObjectID.speedSource])
        // Where the positions are measured. Its offsets from the root are not known to the box, so
        // none are claimed.
        let navigation = element(
            navigationElementID, ObjectID.navigation, .cNavigation, "GNSS receiver", number: 1, parent: ObjectID.root)
        return [root, navigation]
    }

    /// The machine on the box's bus: a function of the device, with what its controllers broadcast.
    private static var machineElement: Efdi_DeviceElement {
        element(
            machineElementID, ObjectID.machine, .cFunction, "Tractor", number: 2, parent: ObjectID.root,
            references: machineProcessData.map(\.deviceProcessDataObjectID))
    }

    private static func element(
        _ id: Efdi_UID, _ objectID: UInt32, _ type: Efdi_DeviceElement.DeviceElementType, _ designator: String,
        number: UInt32, parent: UInt32, references: [UInt32] = []
    ) -> Efdi_DeviceElement {
        var element = Efdi_DeviceElement()
        element.deviceElementID = id
        element.deviceElementObjectID = objectID
        element.deviceElementType = type
        element.deviceElementDesignator = designator
        element.deviceElementNumber = number
        element.parentObjectID = parent
        element.deviceObjectReference = references.map { id in
            var reference = Efdi_DeviceObjectReference()
            reference.deviceObjectID = id
            return reference
        }
        return element
    }

    private static var machineProcessData: [Efdi_DeviceProcessData] {
        [
            processData(ObjectID.workState, ddi: DDI.workState, designator: "Work state", presentation: nil),
            processData(ObjectID.machineSpeed, ddi: DDI.actualSpeed, designator: "Machine speed"),
            processData(
                ObjectID.machineSpeedSource, ddi: DDI.speedSource, designator: "Machine speed source", presentation: nil
            ),
            processData(ObjectID.engineSpeed, ddi: DDI.engineSpeed, designator: "Engine speed", presentation: nil),
            processData(ObjectID.fuelRate, ddi: DDI.fuelRate, designator: "Fuel rate", presentation: nil),
            processData(
                ObjectID.engineHours, ddi: DDI.lifetimeEngineHours, designator: "Engine hours", presentation: nil),
            processData(ObjectID.fuelUsed, ddi: DDI.lifetimeFuel, designator: "Fuel used", presentation: nil),
            processData(
                ObjectID.effectiveTime, ddi: DDI.effectiveTime, designator: "Working time", presentation: nil,
                total: true),
            processData(
                ObjectID.ineffectiveTime, ddi: DDI.ineffectiveTime, designator: "Not working time", presentation: nil,
                total: true),
            processData(ObjectID.totalFuel, ddi: DDI.totalFuel, designator: "Fuel", presentation: nil, total: true),
            processData(
                ObjectID.engineTime, ddi: DDI.totalEngineHours, designator: "Engine time", presentation: nil,
                total: true),
        ]
    }

    private static func processData(
        _ objectID: UInt32, ddi: UInt32, designator: String,
        presentation: UInt32? = ObjectID.kilometresPerHour, total: Bool = false
    ) -> Efdi_DeviceProcessData {
        var data = Efdi_DeviceProcessData()
        data.deviceProcessDataObjectID = objectID
        data.deviceProcessDataDdi = ddi
        data.deviceProcessDataProperty = 1  // belongs to the default set
        // Logged by time and on change; a running total says so (16), for farm software sums its differences.
        data.deviceProcessDataTriggerMethods = 1 | 8 | (total ? 16 : 0)
        data.deviceProcessDataDesignator = designator
        if let presentation { data.deviceValuePresentationObjectID = presentation }
        return data
    }

    static func uid(_ number: Int64, _ uri: String) -> Efdi_UID {
        var uid = Efdi_UID()
        uid.number = number
        uid.uri = [uri]
        return uid
    }

    // MARK: - NAME and labels

    /// ISO 11783-5 NAME, most significant bit first (ISOXML's hex order): not self-configurable (the
    /// box is on no CAN bus), industry group 2 (agriculture and forestry), device class 0
    /// (non-specific), function 23 (vehicle navigation), instances 0, manufacturer code 0 (agrigps
    /// has none assigned), and a 21-bit identity number from the endpoint id.
    static func clientName(identity: UInt32) -> Data {
        var name: UInt64 = 0
        name |= UInt64(2) << 60  // industry group
        name |= UInt64(23) << 40  // function
        name |= UInt64(identity & 0x1F_FFFF)
        return Data((0..<8).map { UInt8(truncatingIfNeeded: name >> (56 - 8 * $0)) })
    }

    /// 21 bits of the endpoint id's SHA-256: stable for the box, and unlike the box next to it.
    static func identityNumber(_ endpointID: String) -> UInt32 {
        let digest = Array(SHA256.hash(data: Array(endpointID.utf8)))
        return (UInt32(digest[0]) << 16 | UInt32(digest[1]) << 8 | UInt32(digest[2])) & 0x1F_FFFF
    }

    /// The endpoint id is a UUID; without its dashes it fits ISOXML's 32 characters.
    static func serialNumber(_ endpointID: String) -> String {
        String(endpointID.filter { $0 != "-" }.prefix(32))
    }

    /// Seven bytes naming this layout of elements and process data. It changes only when the layout
    /// does (and the team set context id with it).
    static let structureLabel = Data("agps001".utf8)

    /// English, decimal point, 24-hour clock, day-month-year, metric units; ISOXML's order puts the
    /// reserved 0xFF first and the language code last, reversed.
    static let localizationLabel = Data([0xFF, 0x00, 0x00, 0x00, 0x40, UInt8(ascii: "n"), UInt8(ascii: "e")])

    // MARK: - Team set context id

    /// RFC 9562 name-based UUID (version 5, SHA-1), in agrigps's own namespace unless told another.
    static func uuidV5(namespace: [UInt8] = namespace, name: [UInt8]) -> String {
        var digest = Array(Insecure.SHA1.hash(data: namespace + name).prefix(16))
        digest[6] = (digest[6] & 0x0F) | 0x50
        digest[8] = (digest[8] & 0x3F) | 0x80
        let hex = digest.map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        let parts = [0..<8, 8..<12, 12..<16, 16..<20, 20..<32].map { range in
            String(hex.dropFirst(range.lowerBound).prefix(range.count))
        }
        return parts.joined(separator: "-")
    }

    /// The namespace of agrigps's team set context ids (a random UUID, fixed once).
    static let namespace: [UInt8] = [
        0x6f, 0x0b, 0x3c, 0x52, 0x9e, 0x41, 0x4d, 0x27, 0xa4, 0x6e, 0x1c, 0x58, 0x2d, 0x93, 0xe7, 0x0a,
    ]
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        String(repeating: "0", count: max(0, width - count)) + self
    }
}
