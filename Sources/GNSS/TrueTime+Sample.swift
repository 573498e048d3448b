import Clocks
import Foundation

extension TrueTime {
    /// Takes a sample's GNSS time as the truth, if it has a position and a time. The sample was
    /// known at `sampledAt` by the system clock; the monotonic reading is worked back from that.
    public func observe(_ sample: PositionSample) {
        observe(sample, systemNow: wall.now(), uptimeNow: monotonic.now())
    }

    public func observe(_ sample: PositionSample, systemNow: Date, uptimeNow: Double) {
        guard sample.state.hasPosition, let time = sample.receiverTime else { return }
        observe(gnssTime: time, atUptime: Self.uptimeKnown(sample, systemNow: systemNow, uptimeNow: uptimeNow))
    }

    /// The monotonic reading at which `sample` was known. Its own monotonic stamp when it has one (the
    /// sampler's always do): a system clock set between sampling and now (NTP at boot, on a busy box)
    /// cannot move it. Without one, worked back through the system clock; an age that a step made
    /// implausible counts as none, which errs early: a stamp a little in the past, never in the future.
    static func uptimeKnown(_ sample: PositionSample, systemNow: Date, uptimeNow: Double) -> Double {
        if let stamped = sample.sampledUptime, stamped <= uptimeNow, uptimeNow - stamped <= 3600 { return stamped }
        let age = systemNow.timeIntervalSince(sample.sampledAt)
        return uptimeNow - ((0...60).contains(age) ? age : 0)
    }
}
