import JSONText
import StateDirectory
import StateView

/// The model as JSON, written straight out: the page's stream sends it at every sample, and
/// JSONEncoder took about 0.1 ms for its 500 bytes, 9 % of the page process's CPU. The text is byte
/// for byte JSONEncoder's with sorted keys and unescaped slashes; a property test holds the two
/// together, so a field added to the model and not here fails it.
extension CabModel {
    var json: String {
        var out = JSONWriter()
        out.object { o in
            o.field("field", field)
            o.field("fieldsKnown", fieldsKnown)
            o.field("fieldsVersion", fieldsVersion)
            o.field("health", health)
            o.field("lastUpdate", lastUpdate)
            o.array("others", others) { $0.object($1.write) }
            if let own { o.object("own", own.write) }
            o.array("reasons", reasons) { $0.string($1) }
            o.object("settings", settings.write)
            o.object("sharing", sharing.write)
            o.field("staleAfterSeconds", staleAfterSeconds)
            o.field("takenAt", takenAt)
            o.object("work", work.write)
        }
        return out.text
    }
}

extension CabModel.Work {
    func write(_ o: inout JSONWriter.Object) {
        if let bus { o.object("bus", bus.write) }
        o.field("state", state)
        o.field("switchCounts", switchCounts)
        if let switchOn { o.field("switchOn", switchOn) }
        if let width { o.field("width", width) }
        o.field("widthConfigured", widthConfigured)
    }
}

extension Heartbeat.MachineStatus {
    func write(_ o: inout JSONWriter.Object) {
        o.field("busProblem", busProblem)
        o.field("engine", engine)
        o.array("notHeard", notHeard) { $0.string($1) }
        o.array("signals", signals) { $0.object($1.write) }
        o.field("tractorECU", tractorECU)
        o.field("work", work)
    }
}

extension Heartbeat.MachineStatus.Signal {
    func write(_ o: inout JSONWriter.Object) {
        o.field("ageSeconds", ageSeconds)
        o.field("signal", signal)
        o.field("source", source)
        o.field("value", value)
    }
}

extension CabModel.Own {
    func write(_ o: inout JSONWriter.Object) {
        o.field("fix", fix)
        o.field("fixText", fixText)
        o.field("hdop", hdop)
        o.field("heading", heading)
        o.field("latitude", latitude)
        o.field("longitude", longitude)
        o.field("old", old)
        o.field("satellites", satellites)
        o.field("speed", speed)
        o.field("time", time)
    }
}

extension CabModel.Other {
    func write(_ o: inout JSONWriter.Object) {
        o.field("age", age)
        o.field("ageSeconds", ageSeconds)
        o.field("bearing", bearing)
        o.field("direction", direction)
        o.field("distance", distance)
        o.field("distanceMetres", distanceMetres)
        o.field("field", field)
        o.field("fix", fix)
        o.field("fixText", fixText)
        o.field("id", id)
        o.field("latitude", latitude)
        o.field("longitude", longitude)
        o.field("name", name)
        o.field("positionTime", positionTime)
        o.field("state", state)
    }
}

extension CabModel.Settings {
    func write(_ o: inout JSONWriter.Object) {
        o.field("certificateValidUntil", certificateValidUntil)
        o.field("endpointName", endpointName)
        o.field("environment", environment)
        o.array("environments", environments) { $0.string($1) }
        o.field("onboarded", onboarded)
        o.field("waitingForGateway", waitingForGateway)
    }
}

extension SharingIndicator {
    func write(_ o: inout JSONWriter.Object) {
        o.field("kept", kept)
        o.field("pausedSince", pausedSince)
        o.field("since", since)
        o.field("state", state.rawValue)
        o.field("text", text)
        o.field("waiting", waiting)
    }
}
