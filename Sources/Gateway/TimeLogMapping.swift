import AgrirouterWire
import Clocks
import Foundation
import GNSS
import SwiftProtobuf

public typealias EFDIPosition = Efdi_Position

extension Efdi_Position {
    /// The same position, status, DOPs, satellites and time as gps:info sends: the two messages
    /// number these fields alike, and one mapping from our fix state serves both.
    public init(_ entry: GPSEntry) {
        self.init()
        positionNorth = entry.positionNorth
        positionEast = entry.positionEast
        positionUp = entry.positionUp
        // Both enums number the ISO 11783-10 statuses identically.
        positionStatus = PositionStatus(rawValue: entry.positionStatus.rawValue) ?? .dError
        pdop = entry.pdop
        hdop = entry.hdop
        numberOfSatellites = entry.numberOfSatellites
        if entry.hasGpsUtcTimestamp { gpsUtcTimestamp = entry.gpsUtcTimestamp }
    }
}

extension Efdi_Time {
    /// One sample as a TimeLog `Time`: its start is the sample's time (the receiver's, or the corrected
    /// system time gps:info would send), type effective, `position_start` set in full (a sample
    /// without a fix has D_NO_GPS, D_NOT_AVAILABLE or D_ERROR, never silence), and the speed when the
    /// receiver reported one with a fix. Nil for a sample with no true time at all (taken while the
    /// clock read 1970, before an earlier reboot): a `Time` cannot go without its start.
    public init?(_ sample: PositionSample, correctedBy clock: TrueTime? = nil) {
        let entry = GPSEntry(sample, correctedBy: clock)
        guard entry.hasGpsUtcTimestamp else { return nil }
        self.init()
        start = entry.gpsUtcTimestamp
        type = .dEffective
        positionStart = Efdi_Position(entry)
        if sample.state.hasPosition, let speed = sample.report?.speed {
            var value = Efdi_DataLogValue()
            value.processDataDdi = DeviceDescription.DDI.actualSpeed
            // PositionReport keeps speed within 0...600 m/s, so millimetres per second fit easily.
            value.processDataValue = Int64((speed * 1000).rounded())
            value.deviceElementIDRef = DeviceDescription.rootElementID
            dataLogValue = [value]
        }
        if let machine = sample.machine { dataLogValue += Self.values(machine) }
    }

    /// The machine's values, each in its DDI's unit, in the machine's element. Only those the bus gave;
    /// the work state always, "not available" (3) when it is not known.
    static func values(_ machine: MachineReading) -> [Efdi_DataLogValue] {
        let work: Int64 =
            switch machine.work {
            case .working: 1
            case .notWorking: 0
            case .unknown: 3
            }
        let source: Int64? =
            switch machine.speedSource {
            case "wheel"?: 1
            case "ground"?: 2
            case "selected"?: 6
            default: nil
            }
        // Every reading is within its message's range (`MachineReading`), so each product fits.
        let values: [(UInt32, Int64?)] = [
            (DeviceDescription.DDI.workState, work),
            (DeviceDescription.DDI.actualSpeed, machine.speed.map { Int64(($0 * 1000).rounded()) }),
            (DeviceDescription.DDI.speedSource, source),
            (DeviceDescription.DDI.engineSpeed, machine.engineSpeed.map { Int64(($0 * 10_000).rounded()) }),
            (DeviceDescription.DDI.fuelRate, machine.fuelRate.map { Int64(($0 * 1_000_000 / 3_600).rounded()) }),
            (DeviceDescription.DDI.lifetimeEngineHours, machine.engineHours.map { Int64(($0 * 10).rounded()) }),
            (DeviceDescription.DDI.lifetimeFuel, machine.fuelUsed.map { Int64(($0 * 2).rounded()) }),
            // Read back within 32 bits (`MachineTotals`), in whole seconds and millilitres.
            (DeviceDescription.DDI.effectiveTime, machine.totals.map { Int64($0.effectiveSeconds.rounded(.down)) }),
            (DeviceDescription.DDI.ineffectiveTime, machine.totals.map { Int64($0.ineffectiveSeconds.rounded(.down)) }),
            (DeviceDescription.DDI.totalFuel, machine.totals.map { Int64($0.fuelMillilitres.rounded(.down)) }),
            (
                DeviceDescription.DDI.totalEngineHours,
                machine.totals.map { Int64(($0.engineSeconds / 180).rounded(.down)) }
            ),
        ]
        // Process data values are 32-bit: a total past that (a damaged frame's) is left out, not wrapped.
        return values.compactMap { ddi, number in
            guard let number, (Int64(Int32.min)...Int64(Int32.max)).contains(number) else { return nil }
            var value = Efdi_DataLogValue()
            value.processDataDdi = ddi
            value.processDataValue = number
            value.deviceElementIDRef = DeviceDescription.machineElementID
            return value
        }
    }

    /// The most bytes one `Time` built from a sample takes inside a TimeLog, framing included:
    /// tag and length (3), start (2 + 6 + 6 for seconds until 2200 and nanoseconds), type (2),
    /// position (3 + a full GPSEntry's 86 less its field status), one speed value (2 + ddi 3 + value
    /// 4 + element reference 2 + 2 + 7). A batch of samples is sized by it, so a TimeLog cannot
    /// outgrow the payload cap.
    public static let upperBound = 3 + 14 + 2 + (3 + 84) + (2 + 3 + 4 + 2 + 2 + 7)
    /// What the machine's eleven values add at most: each tag and length (2), DDI (3), value (11: a
    /// negative speed takes a varint's ten bytes) and the element reference (2 + 2 + 7).
    public static let machineUpperBound = 11 * (2 + 3 + 11 + 2 + 2 + 7)
}

extension Efdi_TimeLog {
    /// The samples of one send cycle as one TimeLog, in the order given; samples with no true time
    /// are left out (see `Efdi_Time.init`). Returns the TimeLog and how many were left out.
    /// `withMachine` false leaves the machine's values out: a TimeLog goes under a description, and
    /// one without the machine's element must not be sent values for it (the work switch's first use
    /// gives samples a reading a cycle before the description that has the machine is taken).
    public static func of(_ samples: [PositionSample], correctedBy clock: TrueTime? = nil, withMachine: Bool = true)
        -> (timeLog: Efdi_TimeLog, untimed: Int)
    {
        var log = Efdi_TimeLog()
        log.timeLogType = .cBinaryTimelog
        log.time = samples.compactMap { sample in
            var sample = sample
            if !withMachine { sample.machine = nil }
            return Efdi_Time(sample, correctedBy: clock)
        }
        return (log, samples.count - log.time.count)
    }
}
