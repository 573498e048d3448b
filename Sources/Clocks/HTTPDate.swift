import Foundation
import Glibc

/// HTTP's dates and delta-seconds, read and written without Foundation's formatters (which bring
/// ICU's data): the cab view's tile cache reads them, and the cab view and the local agrirouter write them.
public enum HTTPDate {
    /// Delta-seconds: digits only, cut to 2^31 as RFC 9111 asks of larger values.
    public static func seconds(_ text: some StringProtocol) -> Double? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty, trimmed.utf8.count <= 30, trimmed.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return nil
        }
        return min(Double(trimmed) ?? 2_147_483_648, 2_147_483_648)
    }

    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    /// Month names folded to lower case once, for a match that ignores case.
    private static let foldedMonths = months.map { $0.lowercased() }

    /// An IMF-fixdate, "Sun, 06 Nov 1994 08:49:37 GMT", the one form servers are to send; nil for any
    /// other text, or a date outside 1970 to 9999.
    public static func parse(_ text: some StringProtocol) -> Date? {
        let fields = text.split(separator: " ", omittingEmptySubsequences: true)
        guard fields.count == 6, fields[5] == "GMT", let day = Int(fields[1]), (1...31).contains(day),
            let monthIndex = foldedMonths.firstIndex(of: fields[2].lowercased()), let year = Int(fields[3]),
            (1970...9999).contains(year)
        else { return nil }
        let clock = fields[4].split(separator: ":")
        guard clock.count == 3, let hour = Int(clock[0]), let minute = Int(clock[1]), let second = Int(clock[2]),
            (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        // Days from the civil date (Howard Hinnant's algorithm), all in ranges that cannot overflow.
        let month = monthIndex + 1
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }

    /// The IMF-fixdate of a second since 1970, for the `Date` header.
    public static func format(_ second: Int) -> String {
        var time = second
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "Thu, 01 Jan 1970 00:00:00 GMT" }
        // gmtime_r keeps its fields in range; the clamps only keep a damaged value from trapping.
        let day = weekdays[Int(min(max(parts.tm_wday, 0), 6))]
        let month = months[Int(min(max(parts.tm_mon, 0), 11))]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return
            "\(day), \(two(parts.tm_mday)) \(month) \(Int(parts.tm_year) + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
