import Foundation
import GNSS

/// Samples as the sampler makes them, for tests that need a position and not a receiver.
public enum Samples {
    /// A 3-D fix of `quality` at `time` (the receiver's time, and when it was sampled unless
    /// `sampledAt` says otherwise), with the status gpsd reports for that quality.
    public static func fix(
        latitude: Double = 52, longitude: Double = 8.5, quality: FixQuality = .rtkFixed, at time: Date = Date(),
        sampledAt: Date? = nil, speed: Double? = nil, track: Double? = nil, satellitesUsed: Int? = 14
    ) -> PositionSample {
        PositionSample(
            sampledAt: sampledAt ?? time, state: .fix(.threeD, quality),
            report: PositionReport(
                time: time, gpsdMode: 3, gpsdStatus: gpsdStatus(quality), latitude: latitude, longitude: longitude,
                speed: speed, track: track, satellitesUsed: satellitesUsed))
    }

    /// gpsd's `status` for a fix of `quality`, as `FixState(gpsdMode:gpsdStatus:)` reads it back.
    public static func gpsdStatus(_ quality: FixQuality) -> Int {
        switch quality {
        case .autonomous: 1
        case .dgps: 2
        case .rtkFixed: 3
        case .rtkFloat: 4
        case .deadReckoning: 5
        case .manual: 7
        case .simulated: 8
        }
    }
}
