import Clocks
import Foundation
import GNSS
import JSONText

/// The formats a track is exported in.
public enum TrackFormat: String, Sendable, CaseIterable {
    case gpx, geojson, csv

    public var fileExtension: String { self == .geojson ? "geojson" : rawValue }
    public var mediaType: String {
        switch self {
        case .gpx: return "application/gpx+xml"
        case .geojson: return "application/geo+json"
        case .csv: return "text/csv"
        }
    }
}

/// A track written out. Fix loss breaks the line: a new GPX segment, a new line of a GeoJSON
/// MultiLineString. CSV keeps every point, with or without a fix.
public enum TrackExport {
    /// `keep` cuts the track to a place (a field): the points it refuses are left out, and the line
    /// breaks where they were.
    public static func text(
        _ points: [TrackPoint], as format: TrackFormat, name: String, rules: TrackRules = TrackRules(),
        keep: (TrackPoint) -> Bool = { _ in true }
    ) -> String {
        switch format {
        case .gpx: return gpx(points, name: name, rules: rules, keep: keep)
        case .geojson: return geoJSON(points, name: name, rules: rules, keep: keep)
        case .csv: return csv(points.filter(keep))
        }
    }

    /// The namespace of GPX's extension for what the machine did at a point.
    public static let gpxNamespace = "urn:agrigps:track:1"

    /// GPX 1.1: one track, one segment per run of fixes. A point whose work state is known has it as
    /// an extension, `<agrigps:work>working</agrigps:work>`, which readers that do not know it skip.
    public static func gpx(
        _ points: [TrackPoint], name: String, rules: TrackRules = TrackRules(),
        keep: (TrackPoint) -> Bool = { _ in true }
    ) -> String {
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <gpx version="1.1" creator="agrigps" xmlns="http://www.topografix.com/GPX/1/1" \
            xmlns:agrigps="\(gpxNamespace)" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
            xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd">
            <trk>
            <name>\(xmlEscaped(name))</name>

            """
        for segment in TrackSegments.split(points, rules: rules, keep: keep) {
            out += "<trkseg>\n"
            for point in segment {
                guard let coordinate = point.coordinate else { continue }
                out += "<trkpt lat=\"\(degrees(coordinate.latitude))\" lon=\"\(degrees(coordinate.longitude))\">"
                if let altitude = point.altitude { out += "<ele>\(String(format: "%.2f", altitude))</ele>" }
                out += "<time>\(ISO8601UTC.string(from: point.time))</time>"
                if let fix = gpxFix(point.state) { out += "<fix>\(fix)</fix>" }
                if let work = point.work {
                    out += "<extensions><agrigps:work>\(work.rawValue)</agrigps:work></extensions>"
                }
                out += "</trkpt>\n"
            }
            out += "</trkseg>\n"
        }
        return out + "</trk>\n</gpx>\n"
    }

    /// GPX's fix kinds: it has no word for RTK, which is differential, so RTK is "dgps" (the CSV and
    /// GeoJSON keep the exact state).
    static func gpxFix(_ state: FixState) -> String? {
        guard case .fix(let dimension, let quality) = state else { return nil }
        switch quality {
        case .dgps, .rtkFixed, .rtkFloat: return "dgps"
        case .autonomous: return dimension == .twoD ? "2d" : "3d"
        case .deadReckoning, .simulated, .manual: return nil
        }
    }

    /// RFC 7946 GeoJSON: a FeatureCollection with the track as a MultiLineString, one line per run of
    /// two or more fixes; a lone fix between losses is a MultiPoint beside it, as a line needs two.
    public static func geoJSON(
        _ points: [TrackPoint], name: String, rules: TrackRules = TrackRules(),
        keep: (TrackPoint) -> Bool = { _ in true }
    ) -> String {
        let segments = TrackSegments.split(points, rules: rules, keep: keep)
        let lines = segments.filter { $0.count >= 2 }
        let lone = segments.filter { $0.count == 1 }.map { $0[0] }
        let kept = points.filter(keep)
        var out = JSONWriter()
        out.object { collection in
            collection.field("type", "FeatureCollection")
            collection.array("features", lone.isEmpty ? [true] : [true, false]) { out, isTrack in
                if isTrack {
                    out.object { feature(&$0, lines: lines, kept: kept, name: name) }
                } else {
                    out.object { feature in
                        feature.field("type", "Feature")
                        feature.object("properties") { properties in
                            properties.field("name", name + ": lone fixes")
                            properties.array("times", lone) { $0.string(ISO8601UTC.string(from: $1.time)) }
                        }
                        feature.object("geometry") { geometry in
                            geometry.field("type", "MultiPoint")
                            geometry.array("coordinates", lone, position)
                        }
                    }
                }
            }
        }
        return out.text + "\n"
    }

    /// The track's feature: one line per run, the runs' times and, when anything said, what the
    /// machine did at each point, beside "times".
    private static func feature(
        _ feature: inout JSONWriter.Object, lines: [[TrackPoint]], kept: [TrackPoint], name: String
    ) {
        feature.field("type", "Feature")
        feature.object("properties") { properties in
            properties.field("name", name)
            properties.nullable("start", kept.first.map { ISO8601UTC.string(from: $0.time) })
            properties.nullable("end", kept.last.map { ISO8601UTC.string(from: $0.time) })
            properties.field("segments", lines.count)
            properties.array("times", lines) { out, run in
                out.array(run) { $0.string(ISO8601UTC.string(from: $1.time)) }
            }
            if lines.contains(where: { $0.contains { $0.work != nil } }) {
                properties.array("work", lines) { out, run in
                    out.array(run) { out, point in
                        if let work = point.work { out.string(work.rawValue) } else { out.null() }
                    }
                }
            }
        }
        feature.object("geometry") { geometry in
            geometry.field("type", "MultiLineString")
            geometry.array("coordinates", lines) { $0.array($1, position) }
        }
    }

    private static func position(_ out: inout JSONWriter, _ point: TrackPoint) {
        guard let coordinate = point.coordinate else { return out.raw("[]") }
        out.raw("[\(degrees(coordinate.longitude)),\(degrees(coordinate.latitude))]")
    }

    /// Every point, one line each, with or without a fix, and what the machine did where known.
    public static func csv(_ points: [TrackPoint]) -> String {
        var out = "time,state,latitude,longitude,altitude_m,speed_m_s,work,engine_rpm,fuel_l_h\n"
        for point in points {
            let fields = [
                ISO8601UTC.string(from: point.time), point.state.name,
                point.coordinate.map { degrees($0.latitude) } ?? "",
                point.coordinate.map { degrees($0.longitude) } ?? "",
                point.altitude.map { String(format: "%.2f", $0) } ?? "",
                point.speed.map { String(format: "%.3f", $0) } ?? "",
                point.work?.rawValue ?? "", point.engineSpeed.map { String(format: "%.3f", $0) } ?? "",
                point.fuelRate.map { String(format: "%.2f", $0) } ?? "",
            ]
            out += fields.joined(separator: ",") + "\n"
        }
        return out
    }

    /// Seven decimals: about a centimetre, finer than any receiver here.
    static func degrees(_ value: Double) -> String { String(format: "%.7f", value) }

    static func xmlEscaped(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            // XML 1.0 has no place for other control characters.
            case _ where scalar.value < 0x20 && scalar != "\t" && scalar != "\n": out += " "
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
