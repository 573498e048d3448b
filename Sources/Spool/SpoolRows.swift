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
    private static let columns = [
        "sampled_at", "receiver_time", "state", "state_reason", "gpsd_mode", "gpsd_status",
        "latitude", "longitude", "altitude_hae", "altitude_msl", "speed", "track", "hdop", "pdop", "satellites_used",
        "device", "clock_skew", "detail", "wire_size",
    ]

    /// A sample taken while sharing is paused is withheld for good. The state is read by the insert
    /// itself, inside the transaction, because `agrigps pause` in another process may just have set it.
    static let insert = """
        INSERT INTO sample (\(columns.joined(separator: ", ")), delivery) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")),
            CASE (SELECT text FROM spool_state WHERE name = 'sharing') WHEN 'paused' THEN 'withheld' ELSE 'pending' END)
        """

    static let select = """
        SELECT id, sampled_at, receiver_time, state, state_reason, gpsd_mode, gpsd_status,
            latitude, longitude, altitude_hae, altitude_msl, speed, track, hdop, pdop, satellites_used,
            device, clock_skew, detail, wire_size FROM sample
        """

    static func arguments(_ sample: PositionSample, wireSize: Int) -> StatementArguments {
        let report = sample.report
        let values: [(any DatabaseValueConvertible)?] = [
            sample.sampledAt.timeIntervalSince1970, report?.time?.timeIntervalSince1970,
            sample.state.name, sample.state.noReceiverReason?.rawValue,
            report?.gpsdMode ?? 0, report?.gpsdStatus ?? 0,
            report?.latitude, report?.longitude, report?.altitudeHAE, report?.altitudeMSL,
            report?.speed, report?.track, report?.hdop, report?.pdop, report?.satellitesUsed,
            report?.device, sample.clockSkew, sample.detail, wireSize,
        ]
        return StatementArguments(values)
    }

    static func spooled(_ row: Row) -> SpooledSample {
        let time: Double? = row["receiver_time"]
        let state = FixState(name: row["state"], noReceiverReason: (row["state_reason"] as String?).flatMap(NoReceiverReason.init))
            ?? .noFix
        let mode: Int = row["gpsd_mode"]
        let hasReport = time != nil || mode != 0 || row["latitude"] != nil || row["hdop"] != nil
        let report = hasReport ? PositionReport(
            time: time.map(Date.init(timeIntervalSince1970:)), gpsdMode: mode, gpsdStatus: row["gpsd_status"],
            latitude: row["latitude"], longitude: row["longitude"],
            altitudeHAE: row["altitude_hae"], altitudeMSL: row["altitude_msl"],
            speed: row["speed"], track: row["track"], hdop: row["hdop"], pdop: row["pdop"],
            satellitesUsed: row["satellites_used"], device: row["device"]) : nil
        let sample = PositionSample(
            sampledAt: Date(timeIntervalSince1970: row["sampled_at"]), state: state, report: report,
            clockSkew: row["clock_skew"], detail: row["detail"])
        return SpooledSample(rowID: row["id"], sample: sample, wireSize: row["wire_size"])
    }
}
