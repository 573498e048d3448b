import Foundation

/// UTC time as ISO 8601 with milliseconds, the form gpsd itself writes ("2026-03-26T03:08:58.000Z").
public enum ISO8601UTC {
    public static func string(from date: Date) -> String {
        let totalMilliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(totalMilliseconds.floorDivided(by: 1000))
        let milliseconds = Int(totalMilliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                      Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1, Int(parts.tm_mday),
                      Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), milliseconds)
    }

    /// Reads "2026-03-26T03:08:58Z" or "2026-03-26T03:08:58.123Z". Done by hand rather than with
    /// Foundation's ISO 8601 support, which loads ICU's time-zone data (1 MiB resident) to read a
    /// UTC time.
    public static func date(from text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        let separators: [(Int, Character)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1.asciiValue }),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60 else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), (22...30).contains(bytes.count), let digits = number(20..<(bytes.count - 1)) else {
                return nil
            }
            fraction = Double(digits) / pow(10, Double(bytes.count - 21))
        } else if bytes[19] != UInt8(ascii: "Z") {
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Date(timeIntervalSince1970: Double(timegm(&parts)) + fraction)
    }
}

private extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

/// Builds one JSON object on one line, with keys in the order they are added.
public struct JSONLine {
    private var members: [String] = []

    public init() {}

    public mutating func add(_ key: String, _ value: String?) {
        members.append("\(Self.quote(key)):\(value.map(Self.quote) ?? "null")")
    }

    public mutating func add(_ key: String, _ value: Double?) {
        members.append("\(Self.quote(key)):\(value.map { $0.isFinite ? "\($0)" : "null" } ?? "null")")
    }

    public mutating func add(_ key: String, _ value: Int?) {
        members.append("\(Self.quote(key)):\(value.map(String.init) ?? "null")")
    }

    /// A value that is JSON already (an array, an object).
    public mutating func add(_ key: String, json: String) {
        members.append("\(Self.quote(key)):\(json)")
    }

    public var text: String { "{" + members.joined(separator: ",") + "}" }

    public static func quote(_ string: String) -> String {
        var out = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}

extension PositionReport {
    /// The keys every report and sample line carries, in this order.
    func addFields(to line: inout JSONLine, state: FixState) {
        line.add("time", time.map(ISO8601UTC.string(from:)))
        line.add("mode", gpsdMode)
        line.add("status", gpsdStatus)
        line.add("lat", latitude)
        line.add("lon", longitude)
        line.add("state", state.name)
        line.add("alt_hae", altitudeHAE)
        line.add("alt_msl", altitudeMSL)
        line.add("speed", speed)
        line.add("track", track)
        line.add("hdop", hdop)
        line.add("pdop", pdop)
        line.add("sats_used", satellitesUsed)
    }

    public var jsonLine: String {
        var line = JSONLine()
        addFields(to: &line, state: fixState)
        return line.text
    }

    public var textLine: String { Self.text(time: time, state: fixState, report: self, extra: []) }

    static func text(time: Date?, state: FixState, report: PositionReport?, extra: [String]) -> String {
        var fields = [time.map(ISO8601UTC.string(from:)) ?? "-", state.name]
        if let report {
            let numbers: [(String, Double?)] = [
                ("lat", report.latitude), ("lon", report.longitude), ("alt_msl", report.altitudeMSL),
                ("speed", report.speed), ("track", report.track), ("hdop", report.hdop),
            ]
            fields += numbers.compactMap { key, value in value.map { "\(key)=\($0)" } }
            if let used = report.satellitesUsed { fields.append("sats=\(used)") }
        }
        return (fields + extra).joined(separator: " ")
    }
}

extension PositionSample {
    /// One JSON object per sample. `sampled_at` is left out of replays, where the system time of the
    /// replay says nothing about the recording.
    public func jsonLine(includeSampledAt: Bool) -> String {
        var line = JSONLine()
        (report ?? PositionReport(gpsdMode: 0)).addFields(to: &line, state: state)
        if includeSampledAt { line.add("sampled_at", ISO8601UTC.string(from: sampledAt)) }
        line.add("clock_skew_s", clockSkew)
        line.add("detail", detail)
        return line.text
    }

    public var textLine: String {
        var extra: [String] = []
        if let clockSkew { extra.append("clock_skew_s=\(clockSkew)") }
        if let detail { extra.append("(\(detail))") }
        return PositionReport.text(time: receiverTime, state: state, report: report, extra: extra)
    }
}
