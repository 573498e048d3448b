import Foundation

/// The times `agrigps track` and `agrigps stats` take: "now", "today", "yesterday", a span back from
/// now ("8h", "30m", "2d", "90s"), a local date ("2026-11-25") or a local date and time
/// ("2026-11-25T08:30", with seconds, or with a closing Z for UTC).
public enum TimeText {
    public struct ParseError: Error, Sendable, Equatable, CustomStringConvertible {
        public var text: String
        /// What was wrong, when more can be said than "not a time".
        public var hint: String?

        public init(text: String, hint: String? = nil) {
            self.text = text
            self.hint = hint
        }

        public var description: String {
            if let hint { return "'\(text)' is not a time: \(hint)" }
            return
                "'\(text)' is not a time: use now, today, yesterday, a span back from now (8h, 30m, 2d, 90s), a date (2026-11-25) or a date and time (2026-11-25T08:30, or ...Z for UTC)"
        }
    }

    /// The moment `text` names. A day names its start, or with `endOfDay` its end (the next day's
    /// start), so that `--since yesterday --until yesterday` is all of yesterday.
    public static func date(_ text: String, now: Date, calendar: Calendar, endOfDay: Bool = false) throws(ParseError)
        -> Date
    {
        let text = text.trimmingCharacters(in: .whitespaces).lowercased()
        let today = calendar.startOfDay(for: now)
        func day(_ start: Date) throws(ParseError) -> Date {
            guard endOfDay else { return start }
            guard let next = calendar.date(byAdding: .day, value: 1, to: start) else { throw ParseError(text: text) }
            return next
        }
        switch text {
        case "now": return now
        case "today": return try day(today)
        case "yesterday":
            guard let start = calendar.date(byAdding: .day, value: -1, to: today) else { throw ParseError(text: text) }
            return try day(start)
        default: break
        }
        if text.hasPrefix("-"), span(String(text.dropFirst())) != nil {
            throw ParseError(
                text: text, hint: "a span already counts back from now; write \(text.dropFirst()) without the minus")
        }
        if let seconds = span(text) { return now.addingTimeInterval(-seconds) }
        if let start = localDate(text, calendar: calendar) { return try day(start) }
        if let moment = localDateTime(text, calendar: calendar) { return moment }
        throw ParseError(text: text)
    }

    /// "8h", "1.5d" and the like, up to ten years back: plain decimal digits, not hex, signs or exponents.
    static func span(_ text: String) -> Double? {
        let number = text.dropLast()
        guard let unit = text.last, number.contains(where: \.isASCIIDigit), number.count { $0 == "." } <= 1,
            number.allSatisfy({ $0.isASCIIDigit || $0 == "." }),
            let count = Double(number), count.isFinite, count >= 0
        else { return nil }
        let seconds: Double
        switch unit {
        case "s": seconds = count
        case "m": seconds = count * 60
        case "h": seconds = count * 3600
        case "d": seconds = count * 86_400
        default: return nil
        }
        return seconds <= 3_650 * 86_400 ? seconds : nil
    }

    static func localDate(_ text: String, calendar: Calendar) -> Date? {
        guard let (year, month, day) = dayParts(text) else { return nil }
        return exact(DateComponents(year: year, month: month, day: day), calendar: calendar)
    }

    static func localDateTime(_ text: String, calendar: Calendar) -> Date? {
        let utc = text.hasSuffix("z")
        let halves = (utc ? String(text.dropLast()) : text).split(separator: "t", omittingEmptySubsequences: false)
        guard halves.count == 2, let (year, month, day) = dayParts(String(halves[0])) else { return nil }
        let clock = halves[1].split(separator: ":", omittingEmptySubsequences: false)
        guard (2...3).contains(clock.count), clock.allSatisfy({ $0.count == 2 && $0.allSatisfy(\.isASCIIDigit) }),
            let hour = Int(clock[0]), let minute = Int(clock[1]), let second = clock.count == 3 ? Int(clock[2]) : 0,
            hour < 24, minute < 60, second < 60
        else { return nil }
        var zoned = calendar
        if utc { zoned.timeZone = TimeZone(identifier: "UTC")! }
        return exact(
            DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second),
            calendar: zoned)
    }

    private static func dayParts(_ text: String) -> (Int, Int, Int)? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy(\.isASCIIDigit) }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2]),
            (1970...2200).contains(year), (1...12).contains(month), (1...31).contains(day)
        else { return nil }
        return (year, month, day)
    }

    /// The moment `components` names, or nil when the calendar had to move it: 31 June, or a local
    /// time skipped when the clocks went forward.
    private static func exact(_ components: DateComponents, calendar: Calendar) -> Date? {
        guard let date = calendar.date(from: components) else { return nil }
        let fields: Set<Calendar.Component> =
            components.hour == nil ? [.year, .month, .day] : [.year, .month, .day, .hour, .minute, .second]
        var back = calendar.dateComponents(fields, from: date)
        back.calendar = nil
        back.timeZone = nil
        return back == components ? date : nil
    }
}

extension Character {
    /// 0 to 9 only: Swift's isNumber also takes other scripts' digits and fractions.
    var isASCIIDigit: Bool { isASCII && isNumber }
}
