import GNSS

/// The words a person reads for a fix, the same in the cab view and in `agrigps others`: "RTK
/// fixed", "RTK float", "DGPS", "GPS", "no fix". Not the codes of agrirouter's .proto
/// ("D_RTK_FINTEGER") or ours ("fix_3d_rtk_fixed"), which stay in JSON, where programs read them.
public enum FixWords {
    /// For another machine's reported status, by our code for it (`GPSInfoReport.statusDescription`,
    /// "rtk_fixed"); a code we do not know is shown as it came, for it may be news.
    public static func words(forCode code: String) -> String {
        switch code {
        case "no_fix": return "no fix"
        case "autonomous": return "GPS"
        case "dgps": return "DGPS"
        case "precise": return "precise GPS"
        case "rtk_fixed": return "RTK fixed"
        case "rtk_float": return "RTK float"
        case "dead_reckoning": return "dead reckoning"
        case "manual": return "entered by hand"
        case "simulated": return "simulated"
        case "receiver_error": return "receiver error"
        case "no_receiver": return "no receiver"
        default: return code
        }
    }

    /// For this machine's own state.
    public static func words(_ state: FixState) -> String {
        switch state {
        case .fix(_, .rtkFixed): return "RTK fixed"
        case .fix(_, .rtkFloat): return "RTK float"
        case .fix(_, .dgps): return "DGPS"
        case .fix(_, .autonomous): return "GPS"
        case .fix(_, .deadReckoning): return "dead reckoning"
        case .fix(_, .simulated): return "simulated"
        case .fix(_, .manual): return "entered by hand"
        case .noFix: return "no fix"
        case .noReceiver: return "no receiver"
        case .gpsdUnreachable: return "gpsd unreachable"
        }
    }
}
