import Foundation

extension MachineMessage {
    /// The message's values in words and units, as `agrigps bus` and `status` print them.
    public var text: String {
        switch self {
        case .wheelBasedSpeed(let speed), .groundBasedSpeed(let speed), .machineSelectedSpeed(let speed):
            var words = Self.text(speed.speed) { String(format: "%.2f m/s (%.1f km/h)", $0, $0 * 3.6) }
            if let direction = speed.direction.value, (speed.speed.value ?? 0) > 0 { words += " " + direction.rawValue }
            if let source = speed.source?.value { words += ", from \(source.rawValue)" }
            if let operations = speed.implementOperations?.value {
                words += operations ? ", implements on" : ", implements off"
            }
            return words
        case .rearHitch(let hitch), .frontHitch(let hitch):
            let state = Self.text(hitch.inWork) { $0 ? "in work" : "out of work" }
            return state + ", " + Self.text(hitch.position) { String(format: "%.0f %% up", $0) }
        case .rearPTO(let pto), .frontPTO(let pto):
            let state = Self.text(pto.engaged) { $0 ? "engaged" : "disengaged" }
            return state + ", " + Self.text(pto.shaftSpeed) { String(format: "%.0f rpm", $0) }
        case .engineSpeed(let value): return Self.text(value) { String(format: "%.0f rpm", $0) }
        case .engineHours(let value): return Self.text(value) { String(format: "%.2f h", $0) }
        case .fuelRate(let value): return Self.text(value) { String(format: "%.2f L/h", $0) }
        case .fuelUsed(let value): return Self.text(value) { String(format: "%.1f L", $0) }
        }
    }

    private static func text<Value>(_ measured: Measured<Value>, _ words: (Value) -> String) -> String {
        switch measured {
        case .value(let value): return words(value)
        case .error: return "error"
        case .notAvailable: return "not available"
        }
    }
}
