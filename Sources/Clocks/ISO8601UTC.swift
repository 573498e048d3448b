import Foundation

/// UTC time as ISO 8601 with milliseconds, the form gpsd itself writes ("2026-03-26T03:08:58.000Z").
public enum ISO8601UTC {
    public static func string(from date: Date) -> String {
        // Years 0 to 9999 are all four digits allow; anything outside (a garbled time) is clamped to
        // them rather than trap in the conversion.
        let exact = (date.timeIntervalSince1970 * 1000).rounded()
        let totalMilliseconds = Int64(min(max(exact.isNaN ? 0 : exact, -62_167_219_200_000), 253_402_300_799_999))
        var seconds = time_t(totalMilliseconds.floorDivided(by: 1000))
        let milliseconds = Int(totalMilliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Digits by hand: String(format:) goes through CoreFoundation's formatter, and the cab view
        // writes a few of these for every sample.
        var text = [UInt8]()
        text.reserveCapacity(24)
        func digits(_ value: Int, _ count: Int, then separator: Unicode.Scalar) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            var rest = value
            for _ in 0..<count {
                text.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
            text.append(UInt8(ascii: separator))
        }
        digits(Int(parts.tm_year) + 1900, 4, then: "-")
        digits(Int(parts.tm_mon) + 1, 2, then: "-")
        digits(Int(parts.tm_mday), 2, then: "T")
        digits(Int(parts.tm_hour), 2, then: ":")
        digits(Int(parts.tm_min), 2, then: ":")
        digits(Int(parts.tm_sec), 2, then: ".")
        digits(milliseconds, 3, then: "Z")
        return String(decoding: text, as: UTF8.self)
    }

    /// A time as documents write it, or nil (null there) for a time not known.
    public static func string(ifAny date: Date?) -> String? {
        date.map(string(from:))
    }

    /// Reads "2026-03-26T03:08:58Z" or "2026-03-26T03:08:58.123Z". Done by hand rather than with
    /// Foundation's ISO 8601 support, which loads ICU's time-zone data (1 MiB resident) to read a
    /// UTC time.
    public static func date(from text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        let separators: [(Int, Character)] = [(4, "-"), (7, "-"), (10, "T"), (13, ":"), (16, ":")]
        guard separators.allSatisfy({ bytes[$0.0] == $0.1.asciiValue }),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second <= 60
        else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), (22...30).contains(bytes.count),
                let digits = number(20..<(bytes.count - 1))
            else {
                return nil
            }
            fraction = Double(digits) / pow(10, Double(bytes.count - 21))
        } else if bytes[19] != UInt8(ascii: "Z") {
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        return Date(timeIntervalSince1970: Double(timegm(&parts)) + fraction)
    }
}

private extension Int64 {
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
