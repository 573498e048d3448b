import Bounds
import Foundation
import GRDB

/// Reading our own databases back as untrusted input. GRDB's typed subscripts stop the process on a
/// value of the wrong type (a text where a number belongs, 1e300 where an integer belongs), and
/// SQLite lets a damaged or edited file hold anything in any column; these return nil instead.
/// Each comes by column name and by index (for joins that repeat column names).
extension Row {
    /// A finite number within `range`, else nil.
    public func double(_ column: String, in range: ClosedRange<Double>) -> Double? {
        Self.double(self[column], in: range)
    }
    public func double(at index: Int, in range: ClosedRange<Double>) -> Double? { Self.double(self[index], in: range) }

    /// A whole number within `range`, else nil.
    public func int(_ column: String, in range: ClosedRange<Int>) -> Int? { Self.int(self[column], in: range) }
    public func int(at index: Int, in range: ClosedRange<Int>) -> Int? { Self.int(self[index], in: range) }

    /// A text of at most `limit` characters, else nil.
    public func text(_ column: String, limit: Int = 4096) -> String? { Self.text(self[column], limit: limit) }
    public func text(at index: Int, limit: Int = 4096) -> String? { Self.text(self[index], limit: limit) }

    /// A time (seconds since 1970) within `Bounds.epochSeconds`, else nil.
    public func date(_ column: String) -> Date? {
        double(column, in: Bounds.epochSeconds).map(Date.init(timeIntervalSince1970:))
    }

    private static func double(_ value: DatabaseValue, in range: ClosedRange<Double>) -> Double? {
        Double.fromDatabaseValue(value).flatMap { Bounds.check($0, in: range) }
    }

    private static func int(_ value: DatabaseValue, in range: ClosedRange<Int>) -> Int? {
        Int.fromDatabaseValue(value).flatMap { range.contains($0) ? $0 : nil }
    }

    private static func text(_ value: DatabaseValue, limit: Int) -> String? {
        String.fromDatabaseValue(value).flatMap { $0.unicodeScalars.count <= limit ? $0 : nil }
    }
}
