import AgrirouterWire
import Foundation
import SwiftProtobuf
import Synchronization

/// What `agrirouter-sim --received FILE` writes: one JSON line per gps:info, device description and
/// TimeLog it accepts, before the sender's acknowledgement is queued, so whatever a client saw
/// acknowledged is already in the file. Checks from outside the process (the field rig) read it.
/// With a payload directory, each accepted payload is also kept there as the raw protobuf
/// agrirouter passes on, for `protoc --decode`.
public final class ReceivedLog: Sendable {
    private let handle: FileHandle
    private let payloadDirectory: String?
    private let written = Mutex(0)

    /// Starts the file anew; nil when it or the payload directory cannot be written.
    public init?(path: String, payloadDirectory: String? = nil) {
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else { return nil }
        if let payloadDirectory {
            guard
                (try? FileManager.default.createDirectory(atPath: payloadDirectory, withIntermediateDirectories: true))
                    != nil,
                FileManager.default.isWritableFile(atPath: payloadDirectory)
            else { return nil }
        }
        self.handle = handle
        self.payloadDirectory = payloadDirectory
    }

    @Sendable public func record(endpointID: String, messageID: String, list: Agrirouter_Technicalmessagetype_GPSList) {
        handle.write(Self.line(endpointID: endpointID, messageID: messageID, list: list))
        keep((try? list.serializedBytes()) ?? Data(), type: TechnicalMessageType.gpsInfo)
    }

    @Sendable public func recordEFDI(endpointID: String, messageID: String, technicalMessageType: String, payload: Data)
    {
        handle.write(
            Self.line(
                endpointID: endpointID, messageID: messageID, technicalMessageType: technicalMessageType,
                payload: payload))
        keep(payload, type: technicalMessageType)
    }

    /// `<n>-<type>.pb`, numbered in order of acceptance: 0001-gps_info.pb, 0002-device_description.pb, …
    private func keep(_ payload: Data, type: String) {
        guard let payloadDirectory else { return }
        let number = written.withLock { count in
            count += 1
            return count
        }
        let name = Self.format(of: type)
        _ = FileManager.default.createFile(
            atPath: payloadDirectory + "/" + String(format: "%04d-%@.pb", number, name), contents: payload)
    }

    /// gps_info, device_description or time_log: the short name of a technical message type.
    static func format(of type: String) -> String {
        switch type {
        case TechnicalMessageType.gpsInfo: "gps_info"
        case TechnicalMessageType.deviceDescription: "device_description"
        case TechnicalMessageType.timeLog: "time_log"
        default: "other"
        }
    }

    /// A client's timestamp may hold anything: one outside protobuf's own range (years 1 to 9999) is
    /// written as -1 rather than multiplied into an overflow.
    static func milliseconds(_ time: Google_Protobuf_Timestamp) -> Int64 {
        guard (-62_135_596_800...253_402_300_799).contains(time.seconds), (0..<1_000_000_000).contains(time.nanos)
        else { return -1 }
        // Rounded: a time sent in whole milliseconds may arrive as 0.999999 of one.
        return time.seconds * 1000 + (Int64(time.nanos) + 500_000) / 1_000_000
    }

    /// One line of the file. Entries are written for gps:info and TimeLog only, a designator for a
    /// description only: absent, not null, otherwise.
    struct Line: Encodable {
        var endpoint: String
        var message: String
        var format: String
        var entries: [Entry]?
        var designator: String?
    }

    /// A position as the checks from outside read it, under the names they read. A TimeLog's `Time`
    /// adds its values by DDI (the first of each), so a check can follow the work state (141) or a
    /// total (119) without decoding protobuf.
    struct Entry: Encodable {
        var timeMS: Int64
        var status: String
        var lat: Double
        var lon: Double
        var values: [String: Int64]?

        enum CodingKeys: String, CodingKey {
            case timeMS = "time_ms", status, lat, lon, values
        }
    }

    static func entry(time: Google_Protobuf_Timestamp?, status: String, latitude: Double, longitude: Double) -> Entry {
        Entry(timeMS: time.map(milliseconds) ?? -1, status: status, lat: latitude, lon: longitude)
    }

    /// Each DDI's first value in `time`, keyed by the DDI's decimal number; nil when it has none.
    static func values(of time: Efdi_Time) -> [String: Int64]? {
        guard !time.dataLogValue.isEmpty else { return nil }
        return Dictionary(
            time.dataLogValue.map { (String($0.processDataDdi), $0.processDataValue) },
            uniquingKeysWith: { first, _ in first })
    }

    /// `{"endpoint":…,"entries":[{"lat":…,"lon":…,"status":"dGnss","time_ms":…}],"format":"gps_info","message":…}`
    /// and a newline. An entry without a time has time_ms -1.
    public static func line(endpointID: String, messageID: String, list: Agrirouter_Technicalmessagetype_GPSList)
        -> Data
    {
        let entries = list.gpsEntries.map { entry in
            Self.entry(
                time: entry.hasGpsUtcTimestamp ? entry.gpsUtcTimestamp : nil,
                status: String(describing: entry.positionStatus),
                latitude: entry.positionNorth, longitude: entry.positionEast)
        }
        return line(Line(endpoint: endpointID, message: messageID, format: "gps_info", entries: entries))
    }

    /// A TimeLog's line has the same entries, one per `Time` (its start and its start position; the
    /// statuses are named as gps:info names them, as both number them alike); a description's has
    /// its first device's designator.
    public static func line(endpointID: String, messageID: String, technicalMessageType: String, payload: Data) -> Data
    {
        var object = Line(endpoint: endpointID, message: messageID, format: format(of: technicalMessageType))
        if technicalMessageType == TechnicalMessageType.timeLog, let log = try? Efdi_TimeLog(serializedBytes: payload) {
            object.entries = log.time.map { time in
                let status = GPSEntry.PositionStatus(rawValue: time.positionStart.positionStatus.rawValue) ?? .dError
                var entry = entry(
                    time: time.hasStart ? time.start : nil, status: String(describing: status),
                    latitude: time.positionStart.positionNorth, longitude: time.positionStart.positionEast)
                entry.values = values(of: time)
                return entry
            }
        } else if let taskData = try? Efdi_ISO11783_TaskData(serializedBytes: payload) {
            object.designator = taskData.device.first?.deviceDesignator ?? ""
        }
        return line(object)
    }

    /// `{}` for a line that cannot be written (a NaN position), so the file stays one object a line.
    private static func line(_ object: Line) -> Data {
        var data = SimJSON.encode(object) ?? Data("{}".utf8)
        data.append(UInt8(ascii: "\n"))
        return data
    }
}
