import Foundation

extension NMEALog {
    /// The log with its times moved so that its first epoch falls at `start` and the rest follow at
    /// the pace the replay feeds them (gaps over 5 s are fed as 1 s, so they are closed up here too).
    /// Fed in real time, it looks to gpsd and to the daemon like a receiver working now: for tests
    /// and field checks of the clock discipline. Time and date fields of GGA, RMC, GLL, ZDA, GNS, GST,
    /// GBS and GRS are rewritten with fresh checksums; sentences whose checksum was already wrong, and
    /// everything else, are fed as they were.
    public func retimed(startingAt start: Date) throws(ReplayError) -> NMEALog {
        var pacing = EpochClock()
        var anchor: (old: Double, new: Double)?
        var changed = 0
        var out: [FeedLine] = []
        for line in lines {
            var bytes = line.bytes
            if bytes.starts(with: Array("# Date:".utf8)) {
                bytes = Array("# Date: \(Self.calendarDate(start))\n".utf8)
            } else if let fields = Sentence(bytes), let old = fields.timeOfDay {
                if EpochClock.timeOfDay(in: bytes[...]) != nil {
                    let step = pacing.delay(before: bytes[...])
                    anchor =
                        anchor.map { (old, $0.new + step) } ?? (
                            old, start.timeIntervalSince1970.rounded(.down) + old.truncatingRemainder(dividingBy: 1)
                        )
                }
                if let anchor, let rewritten = fields.moved(to: anchor.new + Self.shortest(from: anchor.old, to: old)) {
                    bytes = rewritten
                    changed += 1
                }
            }
            out.append(FeedLine(bytes: bytes, delayBefore: line.delayBefore))
        }
        guard changed > 0 else { throw .logHasNoTimes(path) }
        return NMEALog(path: path, sentenceCount: sentenceCount, replacedBytes: replacedBytes, lines: out)
    }

    /// `to` − `from` as times of day, taken the short way round midnight.
    static func shortest(from: Double, to: Double) -> Double {
        var delta = (to - from).truncatingRemainder(dividingBy: 86_400)
        if delta > 43_200 { delta -= 86_400 } else if delta <= -43_200 { delta += 86_400 }
        return delta
    }

    static func calendarDate(_ date: Date) -> String {
        let parts = utcParts(date.timeIntervalSince1970)
        return String(format: "%04d-%02d-%02d", parts.year, parts.month, parts.day)
    }

    static func utcParts(_ seconds: Double) -> (year: Int, month: Int, day: Int, secondOfDay: Double) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let parts = calendar.dateComponents(
            [.year, .month, .day], from: Date(timeIntervalSince1970: seconds.rounded(.down)))
        return (parts.year ?? 1970, parts.month ?? 1, parts.day ?? 1, seconds.truncatingRemainder(dividingBy: 86_400))
    }
}

/// One NMEA sentence split into its fields, for rewriting times: `$TTXXX,f1,…*CS`.
private struct Sentence {
    var fields: [String]
    let decimals: Int
    let timeIndex: Int
    let ending: String

    init?(_ bytes: [UInt8]) {
        guard bytes.first == UInt8(ascii: "$"), let text = String(bytes: bytes, encoding: .ascii),
            let star = text.lastIndex(of: "*")
        else { return nil }
        let body = text[text.index(after: text.startIndex)..<star]
        let tail = text[text.index(after: star)...]
        let checksum = tail.prefix(2)
        // A sentence that was already damaged stays damaged: gpsd is meant to drop it.
        guard checksum.count == 2, let given = UInt8(checksum, radix: 16),
            body.utf8.reduce(0, ^) == given
        else { return nil }
        fields = body.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard let type = fields.first?.suffix(3) else { return nil }
        switch type {
        case "GGA", "RMC", "ZDA", "GNS", "GST", "GBS", "GRS": timeIndex = 1
        case "GLL": timeIndex = 5
        default: return nil
        }
        guard fields.count > timeIndex else { return nil }
        decimals =
            fields[timeIndex].split(separator: ".", omittingEmptySubsequences: false).dropFirst().first?.count ?? 0
        ending = String(tail.dropFirst(2))
    }

    var type: Substring { fields[0].suffix(3) }

    var timeOfDay: Double? { EpochClock.secondsOfDay(fields[timeIndex]) }

    /// The sentence at `time` (seconds since 1970), with its date fields too, and a fresh checksum.
    func moved(to time: Double) -> [UInt8]? {
        guard time.isFinite, time >= 0, time < 7_258_118_400 else { return nil }  // before 2200
        // Rounded to the field's own precision first, so 59.999… cannot print as 60.
        let scale = pow(10, Double(decimals))
        let time = (time * scale).rounded() / scale
        let parts = NMEALog.utcParts(time)
        let second = parts.secondOfDay
        let hours = Int(second / 3600), minutes = Int(second.truncatingRemainder(dividingBy: 3600) / 60)
        let seconds = second.truncatingRemainder(dividingBy: 60)
        var fields = fields
        let secondsText =
            decimals > 0
            ? String(format: "%0\(decimals + 3).\(decimals)f", seconds) : String(format: "%02d", Int(seconds))
        fields[timeIndex] = String(format: "%02d%02d", hours, minutes) + secondsText
        if type == "RMC", fields.count > 9, fields[9].count == 6 {
            fields[9] = String(format: "%02d%02d%02d", parts.day, parts.month, parts.year % 100)
        }
        if type == "ZDA", fields.count > 4, !fields[2].isEmpty {
            (fields[2], fields[3], fields[4]) = (
                String(format: "%02d", parts.day), String(format: "%02d", parts.month), String(parts.year)
            )
        }
        let body = fields.joined(separator: ",")
        return Array("$\(body)*\(String(format: "%02X", body.utf8.reduce(0, ^)))\(ending)".utf8)
    }
}
