import Foundation

/// The little of gpsd's JSON that libgps does not decode for us: the message class, the device
/// list, and DEVICE `"activated":0` (libgps 3.22 fails to parse that one, so the raw line is all we have).
enum GPSDJSON {
    private static let classKey = Array(#""class":""#.utf8)
    private static let leadingClass = Array(#"{"class":""#.utf8)
    private static let classKeyOnly = Array(#""class":"#.utf8)

    /// The value of the first `"class"` key, which gpsd always writes first.
    static func messageClass(of line: UnsafeRawBufferPointer) -> Substring? {
        guard let start = find(classKey, in: line) else { return nil }
        let valueStart = start + classKey.count
        guard let end = line[valueStart...].firstIndex(of: UInt8(ascii: "\"")) else { return nil }
        return Substring(decoding: line[valueStart..<end], as: UTF8.self)
    }

    /// True for lines libgps 3.22 decodes without hanging: the class first, and no second `"class":`.
    /// gps_unpack restarts at a later `"class":` after a failed parse, and re-parses the same
    /// failure for ever when one follows. Every TPV and SKY line gpsd writes has this shape.
    static func isSafeForLibgps(_ line: UnsafeRawBufferPointer) -> Bool {
        guard line.starts(with: leadingClass) else { return false }
        let rest = UnsafeRawBufferPointer(rebasing: line[(1 + classKeyOnly.count)...])
        return find(classKeyOnly, in: rest) == nil
    }

    /// The device paths of a DEVICES line; nil when the line is not one we can read.
    static func devicePaths(in line: UnsafeRawBufferPointer) -> [String]? {
        guard let object = decode(line), let devices = object["devices"] as? [[String: Any]] else { return nil }
        return devices.compactMap { $0["path"] as? String }
    }

    static func device(in line: UnsafeRawBufferPointer) -> (path: String, active: Bool)? {
        guard let object = decode(line), let path = object["path"] as? String else { return nil }
        // Open devices carry an ISO time in "activated"; a closed one carries the number 0.
        switch object["activated"] {
        case let number as NSNumber: return (path, number.doubleValue != 0)
        case is String: return (path, true)
        default: return nil
        }
    }

    /// Untyped on purpose: gpsd writes "activated" as a time or as the number 0, and a DEVICES
    /// line's entries carry whatever fields each driver knows; only two keys are read, rarely (when a
    /// device comes or goes), and anything unexpected reads as nil.
    private static func decode(_ line: UnsafeRawBufferPointer) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any]
    }

    private static func find(_ needle: [UInt8], in haystack: UnsafeRawBufferPointer) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for index in 0...(haystack.count - needle.count) where haystack[index] == needle[0] {
            if needle.indices.allSatisfy({ haystack[index + $0] == needle[$0] }) { return index }
        }
        return nil
    }
}
