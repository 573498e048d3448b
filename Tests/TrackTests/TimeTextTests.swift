import Foundation
import Testing

@testable import Track

@Suite struct TimeTextTests {
    let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Europe/Berlin")!
        return calendar
    }()
    /// 2026-03-29 10:00 in Berlin, the day the clocks go forward (02:00 → 03:00).
    let now = Date(timeIntervalSince1970: 1_774_771_200)

    func date(_ text: String, end: Bool = false) throws -> Date {
        try TimeText.date(text, now: now, calendar: calendar, endOfDay: end)
    }

    @Test func wordsAndSpans() throws {
        #expect(try date("now") == now)
        #expect(try date("8h") == now.addingTimeInterval(-8 * 3600))
        #expect(try date("30m") == now.addingTimeInterval(-1800))
        #expect(try date("2d") == now.addingTimeInterval(-2 * 86_400))
        // Midnight in Berlin (UTC+1 before the change), and the day's end 23 hours later.
        #expect(try date("today") == Date(timeIntervalSince1970: 1_774_738_800))
        #expect(try date("today", end: true) == Date(timeIntervalSince1970: 1_774_738_800 + 23 * 3600))
        #expect(try date("yesterday") == Date(timeIntervalSince1970: 1_774_738_800 - 86_400))
        #expect(try date("yesterday", end: true) == Date(timeIntervalSince1970: 1_774_738_800))
    }

    @Test func datesAndTimes() throws {
        #expect(try date("2026-03-29T08:30") == Date(timeIntervalSince1970: 1_774_765_800))  // 06:30 UTC, summer time
        #expect(try date("2026-03-29T08:30:15Z") == Date(timeIntervalSince1970: 1_774_773_015))
        #expect(try date("2026-03-28") == Date(timeIntervalSince1970: 1_774_652_400))
    }

    @Test(
        "what is not a time is refused with the forms that are",
        arguments: [
            "", "soon", "8x", "0x10h", "1e2h", "+2h", "1.2.3h", ".h", "h", "\u{0661}h", "2026-02-30", "+026-03-29",
            "2026-03-29T0\u{0661}:00", "2026-3-29", "2026-03-29T02:30", "2026-03-29T24:00", "2026-03-29T10:61",
            "99999999d", "1969-12-31", "2026-03-29T10:00:00+01:00",
        ])
    func refused(_ text: String) {
        let error = #expect(throws: TimeText.ParseError.self) { try date(text) }
        #expect(error?.description.contains("2026-11-25T08:30") == true)
    }

    @Test("a span with a minus is refused with what to write instead")
    func minusSpan() {
        let error = #expect(throws: TimeText.ParseError.self) { try date("-2h") }
        #expect(
            error?.description == "'-2h' is not a time: a span already counts back from now; write 2h without the minus"
        )
        #expect(throws: Never.self) { try date("1.5h") }
    }
}

@Suite struct StatsReportTests {
    var figures: WorkFigures {
        var figures = WorkFigures()
        figures.samples = 7200
        figures.secondsByQuality = [.rtkFixed: 3600, .autonomous: 1800]
        figures.secondsWithoutFix = 1200
        figures.secondsWithoutReceiver = 600
        figures.secondsMoving = 2700
        figures.metresDriven = 12_345
        figures.sent = 7000
        figures.acknowledged = 6990
        figures.lost = 3
        return figures
    }

    @Test func text() {
        let lines = StatsReport.text([("2026-W48", figures)], by: .week)
        #expect(lines.count == 2)
        #expect(lines[0].hasPrefix("week      fix h"))
        let cells = lines[1].split(separator: " ")
        #expect(
            cells == [
                "2026-W48", "1.50", "1.00", "0.00", "0.00", "0.50", "20", "10", "0.75", "12.3", "7200", "7000", "6990",
                "3",
            ])
        #expect(StatsReport.text([], by: .day) == ["No track recorded in this time."])
    }

    @Test func json() throws {
        let text = StatsReport.json([("2026-11", figures)], by: .month)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        #expect(object["by"] as? String == "month")
        let period = try #require((object["periods"] as? [[String: Any]])?.first)
        #expect(period["period"] as? String == "2026-11")
        #expect(period["seconds_with_fix"] as? Double == 5400)
        #expect((period["seconds_by_quality"] as? [String: Double])?["rtk_fixed"] == 3600)
        #expect(period["metres_driven"] as? Double == 12_345)
        #expect(period["samples"] as? Int == 7200)
        #expect(
            period["samples_sent"] as? Int == 7000 && period["samples_acknowledged"] as? Int == 6990
                && period["samples_lost"] as? Int == 3)
    }
}
