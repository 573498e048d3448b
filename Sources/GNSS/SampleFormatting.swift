import Clocks
import Foundation

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
