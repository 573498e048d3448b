import Agrirouter
import Foundation
import SwiftProtobuf

/// What `agrirouter-sim --received FILE` writes: one JSON line per gps:info it accepts, before the
/// sender's acknowledgement is queued, so whatever a client saw acknowledged is already in the file.
/// Checks from outside the process (the field rig) read it.
public struct ReceivedLog: Sendable {
    private let handle: FileHandle

    /// Starts the file anew; nil when it cannot be written.
    public init?(path: String) {
        guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else { return nil }
        self.handle = handle
    }

    @Sendable public func record(endpointID: String, messageID: String, list: Agrirouter_Technicalmessagetype_GPSList) {
        handle.write(Self.line(endpointID: endpointID, messageID: messageID, list: list))
    }

    /// A client's timestamp may hold anything: one outside protobuf's own range (years 1 to 9999) is
    /// written as -1 rather than multiplied into an overflow.
    static func milliseconds(_ time: Google_Protobuf_Timestamp) -> Int64 {
        guard (-62_135_596_800...253_402_300_799).contains(time.seconds), (0..<1_000_000_000).contains(time.nanos) else { return -1 }
        // Rounded: a time sent in whole milliseconds may arrive as 0.999999 of one.
        return time.seconds * 1000 + (Int64(time.nanos) + 500_000) / 1_000_000
    }

    /// `{"endpoint":…,"entries":[{"lat":…,"lon":…,"status":"dGnss","time_ms":…}],"message":…}` and a
    /// newline. An entry without a time has time_ms -1.
    public static func line(endpointID: String, messageID: String, list: Agrirouter_Technicalmessagetype_GPSList) -> Data {
        let entries: [[String: Any]] = list.gpsEntries.map { entry in
            return [
                "time_ms": entry.hasGpsUtcTimestamp ? milliseconds(entry.gpsUtcTimestamp) : -1,
                "status": String(describing: entry.positionStatus),
                "lat": entry.positionNorth,
                "lon": entry.positionEast,
            ]
        }
        let object: [String: Any] = ["endpoint": endpointID, "message": messageID, "entries": entries]
        var data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        data.append(UInt8(ascii: "\n"))
        return data
    }
}
