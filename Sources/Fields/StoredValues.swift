import GRDB

/// The fields' store read back as untrusted input: SQLite keeps a value of any type in any column
/// (a file edited by hand, restored from elsewhere, damaged), and GRDB's converting subscripts
/// (`row["name"] as String?`) stop the process on a value they cannot convert.
extension Row {
    /// The value of `column` as `T` where GRDB converts it (text from valid UTF-8, a number from an
    /// integer or a real); nil when NULL, absent, or of a type that does not convert.
    func checked<T: DatabaseValueConvertible>(_ column: String, as type: T.Type = T.self) -> T? {
        guard let value = try? decode(DatabaseValue.self, forColumn: column) else { return nil }
        return T.fromDatabaseValue(value)
    }
}
