/// Why a replay could not run. Each case says what to do about it.
public enum ReplayError: Error, Sendable, Equatable, CustomStringConvertible {
    case logNotFound(String)
    case logIsDirectory(String)
    case logUnreadable(String, reason: String)
    case logNotRegular(String)
    case logTooLarge(String, limit: Int)
    case logEmpty(String)
    case logBinary(String, offset: Int)
    case logHasNoSentences(String)
    case logHasNoTimes(String)
    case gpsdMissing(String)
    case gpsdFailedToStart(String)
    /// The virtual CAN interface a recording is replayed onto cannot be written.
    case bus(String)
    case system(String)

    public var description: String {
        switch self {
        case .logNotFound(let path): return "log file not found: \(path)"
        case .logIsDirectory(let path): return "\(path) is a directory; give the path of an NMEA log file"
        case .logUnreadable(let path, let reason): return "cannot read \(path): \(reason)"
        case .logNotRegular(let path):
            return
                "\(path) is not a file (a FIFO, a device or a socket is not read); give the path of a recorded NMEA log"
        case .logTooLarge(let path, let limit):
            return "\(path) is larger than \(limit >> 20) MiB, more than a replay holds; replay a part of it, such as: "
                + "head -c \(limit >> 21)M \(path) > part.log"
        case .logEmpty(let path): return "log file is empty: \(path)"
        case .logBinary(let path, let offset):
            return "\(path) is not an NMEA text log (binary data at byte \(offset))"
        case .logHasNoSentences(let path):
            return "\(path) holds no NMEA sentences (no line starts with '$' or '!')"
        case .logHasNoTimes(let path):
            return
                "\(path) has no sentence with a valid time (GGA, RMC, GLL, ZDA, GNS) to move to now; replay it without --retime"
        case .gpsdMissing(let path): return "gpsd not found at \(path); install the gpsd package"
        case .gpsdFailedToStart(let reason): return "the private gpsd did not start: \(reason)"
        case .bus(let reason): return reason
        case .system(let reason): return reason
        }
    }

    /// sysexits-style exit code for the command line.
    public var exitCode: Int32 {
        switch self {
        case .logNotFound, .logIsDirectory, .logUnreadable, .logNotRegular, .logTooLarge: return 66  // EX_NOINPUT
        case .logEmpty, .logBinary, .logHasNoSentences, .logHasNoTimes: return 65  // EX_DATAERR
        case .gpsdMissing, .gpsdFailedToStart, .bus: return 69  // EX_UNAVAILABLE
        case .system: return 71  // EX_OSERR
        }
    }
}
