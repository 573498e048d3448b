/// How many dimensions a fix has, as gpsd's TPV `mode` says.
public enum FixDimension: Int, Sendable, Hashable {
    case twoD = 2
    case threeD = 3
}

/// The quality of a position fix. Kept as the receiver reported it, never flattened.
public enum FixQuality: String, Sendable, Hashable, CaseIterable {
    case autonomous
    case dgps
    case rtkFixed = "rtk_fixed"
    case rtkFloat = "rtk_float"
    case deadReckoning = "dead_reckoning"
    case simulated
    case manual
}

/// Why there is no receiver to read from.
public enum NoReceiverReason: String, Sendable, Hashable {
    /// gpsd knows no device at all.
    case noDevice = "no_device"
    /// gpsd closed the device (unplugged, `gpsdctl remove`, end of a replayed log).
    case removed
    /// A device is listed but has sent no report for longer than the silence threshold.
    case silent
}

/// What agrigps knows about the position at one moment. Every case is a sample in its own right.
public enum FixState: Sendable, Hashable {
    case gpsdUnreachable
    case noReceiver(NoReceiverReason)
    case noFix
    case fix(FixDimension, FixQuality)

    /// True when the state carries a usable latitude and longitude.
    public var hasPosition: Bool {
        if case .fix = self { return true }
        return false
    }

    /// A stable machine-readable name, used in JSON output and later in the spool.
    public var name: String {
        switch self {
        case .gpsdUnreachable: return "gpsd_unreachable"
        case .noReceiver: return "no_receiver"
        case .noFix: return "no_fix"
        case .fix(let dimension, let quality): return "fix_\(dimension.rawValue)d_\(quality.rawValue)"
        }
    }

    /// The reason part of a no-receiver state; nil for every other state.
    public var noReceiverReason: NoReceiverReason? {
        if case .noReceiver(let reason) = self { return reason }
        return nil
    }

    /// The inverse of `name` (with the no-receiver reason kept beside it); nil for an unknown name.
    public init?(name: String, noReceiverReason: NoReceiverReason? = nil) {
        switch name {
        case "gpsd_unreachable": self = .gpsdUnreachable
        case "no_receiver": self = .noReceiver(noReceiverReason ?? .noDevice)
        case "no_fix": self = .noFix
        default:
            let parts = name.split(separator: "_", maxSplits: 2).map(String.init)
            guard parts.count == 3, parts[0] == "fix",
                let dimension = FixDimension(rawValue: parts[1] == "2d" ? 2 : parts[1] == "3d" ? 3 : 0),
                let quality = FixQuality(rawValue: parts[2])
            else { return nil }
            self = .fix(dimension, quality)
        }
    }

    /// Maps gpsd's TPV `mode` and `status` to our fix state.
    ///
    /// | TPV mode          | TPV status                   | FixState                 |
    /// |-------------------|------------------------------|--------------------------|
    /// | 0 (not seen)      | any                          | `.noFix`                 |
    /// | 1 (no fix)        | any, including 8 (simulated) | `.noFix`                 |
    /// | 2 / 3 (2D / 3D)   | 0 (omitted: plain fix)       | `.fix(d, .autonomous)`   |
    /// | 2 / 3             | 1 GPS                        | `.fix(d, .autonomous)`   |
    /// | 2 / 3             | 2 DGPS (also SBAS)           | `.fix(d, .dgps)`         |
    /// | 2 / 3             | 3 RTK fixed                  | `.fix(d, .rtkFixed)`     |
    /// | 2 / 3             | 4 RTK float                  | `.fix(d, .rtkFloat)`     |
    /// | 2 / 3             | 5 DR, 6 GNSS+DR              | `.fix(d, .deadReckoning)`|
    /// | 2 / 3             | 7 time (surveyed-in, manual) | `.fix(d, .manual)`       |
    /// | 2 / 3             | 8 simulated (gpsfake)        | `.fix(d, .simulated)`    |
    /// | 2 / 3             | 9 PPS (precise service)      | `.fix(d, .autonomous)`   |
    /// | 2 / 3             | anything newer               | `.fix(d, .autonomous)`   |
    ///
    /// gpsd 3.22 writes `status` only when it is 2 or more, so a client reads 0 for a plain fix;
    /// the mode, not the status, says whether there is a fix. A status we do not know stays
    /// visible in the sample's raw `status`, so mapping it to autonomous hides nothing.
    public init(gpsdMode: Int, gpsdStatus: Int) {
        guard gpsdMode >= 2 else {
            self = .noFix
            return
        }
        let dimension: FixDimension = gpsdMode >= 3 ? .threeD : .twoD
        let quality: FixQuality
        switch gpsdStatus {
        case 2: quality = .dgps
        case 3: quality = .rtkFixed
        case 4: quality = .rtkFloat
        case 5, 6: quality = .deadReckoning
        case 7: quality = .manual
        case 8: quality = .simulated
        default: quality = .autonomous
        }
        self = .fix(dimension, quality)
    }
}
