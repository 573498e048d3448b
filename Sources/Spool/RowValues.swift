import Bounds
import Foundation
import GRDB

/// Reading our own databases back as untrusted input. GRDB's typed subscripts stop the process on a
/// value of the wrong type (a text where a number belongs, 1e300 where an integer belongs), and
/// SQLite lets a damaged or edited file hold anything in any column; these return nil instead.
extension Row {
    /// A finite number within `range`, else nil.
    public func double(_ column: String, in range: ClosedRange<Double>) -> Double? {
        Double.fromDatabaseValue(self[column] as DatabaseValue).flatMap { Bounds.check($0, in: range) }
    }

    /// A whole number within `range`, else nil.
    public func int(_ column: String, in range: ClosedRange<Int>) -> Int? {
        Int.fromDatabaseValue(self[column] as DatabaseValue).flatMap { range.contains($0) ? $0 : nil }
    }

    /// A text of at most `limit` characters, else nil.
    public func text(_ column: String, limit: Int = 4096) -> String? {
        String.fromDatabaseValue(self[column] as DatabaseValue).flatMap { $0.unicodeScalars.count <= limit ? $0 : nil }
    }

    /// The same by column index, for joins that repeat column names.
    public func double(at index: Int, in range: ClosedRange<Double>) -> Double? {
        Double.fromDatabaseValue(self[index] as DatabaseValue).flatMap { Bounds.check($0, in: range) }
    }

    public func int(at index: Int, in range: ClosedRange<Int>) -> Int? {
        Int.fromDatabaseValue(self[index] as DatabaseValue).flatMap { range.contains($0) ? $0 : nil }
    }

    public func text(at index: Int, limit: Int = 4096) -> String? {
        String.fromDatabaseValue(self[index] as DatabaseValue).flatMap { $0.unicodeScalars.count <= limit ? $0 : nil }
    }

    /// A time (seconds since 1970) within `Bounds.epochSeconds`, else nil.
    public func date(_ column: String) -> Date? {
        double(column, in: Bounds.epochSeconds).map(Date.init(timeIntervalSince1970:))
    }
}
