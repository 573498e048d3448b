import ChildProcesses
import Foundation

/// A program of the system, run to completion (bounded) with its standard output and error as one text.
public enum SystemTool {
    public static let path = ["PATH": "/usr/sbin:/usr/bin:/sbin:/bin"]

    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String] = path,
        timeout: Double = 60
    ) async throws -> (code: Int32?, output: String) {
        let output = FileManager.default.temporaryDirectory.appendingPathComponent(
            "agrigps-tool-\(UUID().uuidString).out"
        ).path
        defer { unlink(output) }
        let process = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment,
            outputPath: output, errorPath: output)
        defer { process.terminate(grace: 1) }
        let code = await process.wait(timeout: timeout)
        return (code, (try? String(contentsOfFile: output, encoding: .utf8)) ?? "")
    }
}

/// The track exports checked by tools other than ours: GPX by xmllint against Topografix's GPX 1.1
/// schema, GeoJSON by the `geojson` Python library (RFC 7946 geometry rules). `script/bootstrap`
/// installs both and the schema.
public enum ExportValidation {
    public static let gpxSchema = "/usr/local/share/xml/schema/gpx-1.1/gpx.xsd"

    public struct Verdict: Sendable, CustomStringConvertible {
        public var valid: Bool
        public var description: String
    }

    public static func gpx(_ text: String) async throws -> Verdict {
        guard FileManager.default.fileExists(atPath: gpxSchema) else {
            return Verdict(valid: false, description: "no GPX 1.1 schema at \(gpxSchema): run script/bootstrap")
        }
        let file = try scratchFile(text, suffix: ".gpx")
        defer { unlink(file) }
        let result = try await SystemTool.run("/usr/bin/xmllint", ["--noout", "--nonet", "--schema", gpxSchema, file])
        return Verdict(valid: result.code == 0 && result.output.contains("validates"), description: result.output)
    }

    public static func geoJSON(_ text: String) async throws -> Verdict {
        let file = try scratchFile(text, suffix: ".geojson")
        defer { unlink(file) }
        // Every geometry, each feature's and the collection's, through the library's own checks.
        let script = """
            import geojson, sys
            with open(sys.argv[1]) as f:
                document = geojson.load(f)
            problems = document.errors()
            print("valid" if document.is_valid and not problems else "invalid: %r" % (problems,))
            sys.exit(0 if document.is_valid and not problems else 1)
            """
        let result = try await SystemTool.run("/usr/bin/python3", ["-c", script, file])
        return Verdict(valid: result.code == 0 && result.output.hasPrefix("valid"), description: result.output)
    }

    private static func scratchFile(_ text: String, suffix: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "agrigps-export-\(UUID().uuidString)\(suffix)"
        ).path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
