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

    public var text: String { "{" + members.joined(separator: ",") + "}" }

    static func quote(_ string: String) -> String {
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
