/// What the gpsd source reports, in order.
public enum SourceEvent: Sendable, Equatable {
    /// Connected to gpsd and asked for reports.
    case connected(GPSDAddress)
    /// gpsd could not be reached; the source keeps retrying with backoff (unless it is one-shot).
    case unreachable(GPSDError)
    /// An established connection to gpsd ended.
    case disconnected(GPSDError)
    /// The devices gpsd knows; empty means no receiver.
    case devices([String])
    case deviceActivated(String)
    /// gpsd closed a device: unplugged, removed by gpsdctl, or the end of a replayed log.
    case deviceRemoved(String)
    case report(PositionReport)
    /// No report for longer than the silence threshold, although gpsd is connected.
    case receiverSilent(seconds: Double)
}
