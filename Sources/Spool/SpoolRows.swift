import Bounds
import Foundation
import GNSS
import GRDB

/// A sample as the spool holds it.
public struct SpooledSample: Sendable, Equatable {
    /// Append order; also the order samples were taken in.
    public var rowID: Int64
    public var sample: PositionSample
    public var wireSize: Int
}

/// Samples taken out for one send. `id` becomes agrirouter's application_message_id.
public struct SpoolBatch: Sendable, Equatable {
    public var id: String
    /// The output it was taken for.
    public var output: SpoolOutput = .gpsInfo
    public var samples: [SpooledSample]
    public var wireBytes: Int { samples.reduce(0) { $0 + $1.wireSize } }
}

/// What became of an append.
public enum AppendOutcome: Sendable, Equatable {
    /// Committed to disk.
    case stored(rowID: Int64)
    /// The disk refused the write; the sample waits in memory and is written, in order, once it can be.
    case heldInMemory(SpoolError)
}

enum SampleColumns {
    private static let columns =
        [
            "sampled_at", "receiver_time", "state", "state_reason", "gpsd_mode", "gpsd_status",
            "latitude", "longitude", "altitude_hae", "altitude_msl", "speed", "track", "hdop", "pdop",
            "satellites_used",
            "device", "clock_skew", "detail", "wire_size", "sampled_uptime",
        ] + machineColumns

    /// What the machine's controllers said at the sample (`MachineReading`); all NULL without one.
    static let machineColumns = [
        "machine_work", "machine_speed", "machine_speed_source", "engine_speed", "engine_hours", "fuel_rate",
        "fuel_used",
        "machine_effective_s", "machine_ineffective_s", "machine_fuel_ml", "machine_engine_s",
    ]

    /// A sample taken while sharing is paused is withheld for good. The state is read by the insert
    /// itself, inside the transaction, because `agrigps pause` in another process may just have set it.
    /// Outputs not enabled are "off" for the sample: it never waits for them.
    static func insert(outputs: [SpoolOutput]) -> String {
        let state =
            "CASE (SELECT text FROM spool_state WHERE name = 'sharing') WHEN 'paused' THEN 'withheld' ELSE 'pending' END"
        let deliveries = SpoolOutput.all.map { outputs.contains($0) ? state : "'\(DeliveryState.off)'" }
        return """
            INSERT INTO sample (id, \(columns.joined(separator: ", ")), \(SpoolOutput.all.map(\.delivery).joined(separator: ", ")))
            VALUES ((\(RowIDs.highestSQL)) + 1, \(columns.map { _ in "?" }.joined(separator: ", ")), \(deliveries.joined(separator: ", ")))
            """
    }

    static let select = select(present: nil)

    /// The select for a file with or without (some of) the machine's columns: a reader in another
    /// process may open a spool the daemon has not migrated yet. `present` nil: all of them.
    static func select(present: Set<String>?) -> String {
        let machine = machineColumns.map { present?.contains($0) ?? true ? $0 : "NULL AS \($0)" }.joined(
            separator: ", ")
        return """
            SELECT id, sampled_at, receiver_time, state, state_reason, gpsd_mode, gpsd_status,
                latitude, longitude, altitude_hae, altitude_msl, speed, track, hdop, pdop, satellites_used,
                device, clock_skew, detail, wire_size, sampled_uptime, \(machine) FROM sample
            """
    }

    static func arguments(_ sample: PositionSample, wireSize: Int) -> StatementArguments {
        let report = sample.report
        let values: [(any DatabaseValueConvertible)?] = [
            sample.sampledAt.timeIntervalSince1970, report?.time?.timeIntervalSince1970,
            sample.state.name, sample.state.noReceiverReason?.rawValue,
            report?.gpsdMode ?? 0, report?.gpsdStatus ?? 0,
            report?.latitude, report?.longitude, report?.altitudeHAE, report?.altitudeMSL,
            report?.speed, report?.track, report?.hdop, report?.pdop, report?.satellitesUsed,
            report?.device, sample.clockSkew, sample.detail, wireSize, sample.sampledUptime,
        ]
        let machine = sample.machine
        let machineValues: [(any DatabaseValueConvertible)?] = [
            machine?.work.rawValue, machine?.speed, machine?.speedSource, machine?.engineSpeed, machine?.engineHours,
            machine?.fuelRate, machine?.fuelUsed,
            machine?.totals?.effectiveSeconds, machine?.totals?.ineffectiveSeconds, machine?.totals?.fuelMillilitres,
            machine?.totals?.engineSeconds,
        ]
        return StatementArguments(values + machineValues)
    }

    /// A row read back. Every value passes the same checks as a report from gpsd (`PositionReport`
    /// drops what is out of range), so a damaged row is sent as what can still be trusted of it.
    static func spooled(_ row: Row) -> SpooledSample {
        let time = row.date("receiver_time")
        let state =
            row.text("state", limit: 64).flatMap { name in
                FixState(
                    name: name, noReceiverReason: row.text("state_reason", limit: 64).flatMap(NoReceiverReason.init))
            } ?? .noFix
        let mode = row.int("gpsd_mode", in: 0...3) ?? 0
        let hasReport = time != nil || mode != 0 || !row.hasNull("latitude") || !row.hasNull("hdop")
        let report =
            hasReport
            ? PositionReport(
                time: time, gpsdMode: mode, gpsdStatus: row.int("gpsd_status", in: 0...255) ?? 0,
                latitude: row.double("latitude", in: Bounds.latitude),
                longitude: row.double("longitude", in: Bounds.longitude),
                altitudeHAE: row.double("altitude_hae", in: Bounds.altitude),
                altitudeMSL: row.double("altitude_msl", in: Bounds.altitude),
                speed: row.double("speed", in: Bounds.speed), track: row.double("track", in: Bounds.track),
                hdop: row.double("hdop", in: Bounds.dop), pdop: row.double("pdop", in: Bounds.dop),
                satellitesUsed: row.int("satellites_used", in: Bounds.satellites),
                device: row.text("device", limit: 512)) : nil
        // The system time of a sample is never absent; a damaged one falls back to the receiver's, then
        // to the start of GNSS time, which the age cap then treats as very old rather than as a trap.
        let sampledAt = row.date("sampled_at") ?? time ?? Date(timeIntervalSince1970: Bounds.epochSeconds.lowerBound)
        let sample = PositionSample(
            sampledAt: sampledAt, state: state, report: report,
            clockSkew: row.double("clock_skew", in: Bounds.duration), detail: row.text("detail", limit: 512),
            sampledUptime: row.double("sampled_uptime", in: 0...1e10), machine: machine(row))
        return SpooledSample(rowID: row["id"], sample: sample, wireSize: wireSize(row))
    }

    /// The machine's reading, each value in the range its message can carry; a damaged work state
    /// reads as unknown. Nil where the row has none.
    static func machine(_ row: Row) -> MachineReading? {
        guard machineColumns.contains(where: { !row.hasNull($0) }) else { return nil }
        let work = row.text("machine_work", limit: 32).flatMap(MachineReading.Work.init(rawValue:)) ?? .unknown
        var reading = MachineReading(
            work: work, speed: row.double("machine_speed", in: MachineReading.speedRange),
            speedSource: row.text("machine_speed_source", limit: 16).flatMap {
                ["wheel", "ground", "selected"].contains($0) ? $0 : nil
            },
            engineSpeed: row.double("engine_speed", in: MachineReading.engineSpeedRange),
            engineHours: row.double("engine_hours", in: MachineReading.engineHoursRange),
            fuelRate: row.double("fuel_rate", in: MachineReading.fuelRateRange),
            fuelUsed: row.double("fuel_used", in: MachineReading.fuelUsedRange))
        reading.totals = totals(row)
        return reading
    }

    /// The running totals, each within what EFDI's 32-bit values can carry (seconds, millilitres).
    static func totals(_ row: Row) -> MachineTotals? {
        let range = MachineTotalsState.range
        guard let effective = row.double("machine_effective_s", in: range),
            let ineffective = row.double("machine_ineffective_s", in: range),
            let fuel = row.double("machine_fuel_ml", in: range)
        else { return nil }
        // A row from before the engine's total was kept has none: it counts from 0.
        return MachineTotals(
            effectiveSeconds: effective, ineffectiveSeconds: ineffective, fuelMillilitres: fuel,
            engineSeconds: row.double("machine_engine_s", in: range) ?? 0)
    }

    /// The stored encoded size; a damaged one counts as a large entry, so that a batch stays under the
    /// payload cap whatever the file says.
    /// The same rule in SQL, for sums: a damaged size counts 1024, so TOTAL stays a sane number.
    static let wireSizeSQL =
        "CASE WHEN typeof(wire_size) = 'integer' AND wire_size BETWEEN 0 AND 1000000 THEN wire_size ELSE 1024 END"

    static func wireSize(_ row: Row) -> Int {
        row.int("wire_size", in: 0...1_000_000) ?? 1024
    }
}

extension Row {
    func hasNull(_ column: String) -> Bool { (self[column] as DatabaseValue).isNull }
}

/// Row ids are never given out twice, though the newest row may leave (acknowledged, evicted): the
/// heartbeat's loss check and the cab view's trail rely on a new sample having a higher id than any
/// before it. AUTOINCREMENT gave that by writing its counter in `sqlite_sequence` beside every row,
/// a second page in every append's commit. Instead a trigger notes the id of a newest row when it is
/// deleted, which is rare next to appends, and a new row takes the next id after the higher of that
/// note and the table's own highest.
enum RowIDs {
    /// The note, read as damaged input: anything but a whole number in range counts as none.
    static let notedSQL = """
        IFNULL((SELECT CAST(number AS INTEGER) FROM spool_state WHERE name = 'highest_id' \
        AND typeof(number) IN ('integer', 'real') AND number BETWEEN 0 AND 9007199254740991), 0)
        """
    /// The highest id ever given out; 0 for a new spool.
    static let highestSQL = "MAX(IFNULL((SELECT MAX(id) FROM sample), 0), \(notedSQL))"

    static let trigger = """
        CREATE TRIGGER IF NOT EXISTS sample_notes_highest_id AFTER DELETE ON sample
        WHEN OLD.id > IFNULL((SELECT MAX(id) FROM sample), 0)
        BEGIN
            INSERT INTO spool_state (name, number) VALUES ('highest_id', OLD.id)
            ON CONFLICT(name) DO UPDATE SET number = MAX(IFNULL(number, 0), excluded.number);
        END
        """
}
