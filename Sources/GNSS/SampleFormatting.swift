import Clocks
import Foundation
import JSONText

extension PositionReport {
    /// The keys every report and sample line carries, in this order.
    func addFields(to line: inout JSONWriter.Object, state: FixState) {
        line.nullable("time", time.map(ISO8601UTC.string(from:)))
        line.nullable("mode", gpsdMode)
        line.nullable("status", gpsdStatus)
        line.nullable("lat", latitude)
        line.nullable("lon", longitude)
        line.nullable("state", state.name)
        line.nullable("alt_hae", altitudeHAE)
        line.nullable("alt_msl", altitudeMSL)
        line.nullable("speed", speed)
        line.nullable("track", track)
        line.nullable("hdop", hdop)
        line.nullable("pdop", pdop)
        line.nullable("sats_used", satellitesUsed)
    }

    /// The sample lines' writer: keys in the order above, every key present, whole numbers as "92.0".
    static func lineWriter(_ body: (inout JSONWriter.Object) -> Void) -> String {
        var out = JSONWriter(numbers: .keepingPoint)
        out.object(body)
        return out.text
    }

    public var jsonLine: String {
        Self.lineWriter { addFields(to: &$0, state: fixState) }
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
        PositionReport.lineWriter { line in
            (report ?? PositionReport(gpsdMode: 0)).addFields(to: &line, state: state)
            if includeSampledAt { line.nullable("sampled_at", ISO8601UTC.string(from: sampledAt)) }
            line.nullable("clock_skew_s", clockSkew)
            line.nullable("detail", detail)
        }
    }

    public var textLine: String {
        var extra: [String] = []
        if let clockSkew { extra.append("clock_skew_s=\(clockSkew)") }
        if let detail { extra.append("(\(detail))") }
        return PositionReport.text(time: receiverTime, state: state, report: report, extra: extra)
    }
}
