import GRDB
import Glibc
import StateFiles

/// What went wrong with the spool's storage. SQLite's code and message are kept for the log.
public struct SpoolError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// SQLITE_FULL: the disk (or the database's page limit) is full.
        case diskFull = "disk_full"
        /// SQLITE_IOERR: the disk failed to read or write.
        case ioError = "io_error"
        /// SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM: the file or its directory cannot be written.
        case readOnly = "read_only"
        /// SQLITE_CORRUPT, SQLITE_NOTADB, or a failed quick_check.
        case corrupt
        /// Anything else SQLite reports.
        case database
        /// The file, or one SQLite keeps beside it, is not a regular file (a FIFO, a device, a link):
        /// refused before SQLite opens it. The message names it and what to do.
        case notRegular = "not_regular"
        /// The file holds schema steps this version does not know: a newer agrigps wrote it, and
        /// this one would misread it. Refused, never moved aside: the newer version reads it.
        case newerVersion = "newer_version"
    }

    /// The check of the spool's files before SQLite opens them failed: a file of the wrong kind
    /// (which the error names, with what to do), or one that cannot be looked at.
    init(checking error: StateFileError, path: String) {
        let wrongKind = error.notRegular || error.code == ELOOP
        self.init(kind: wrongKind ? .notRegular : .readOnly, sqliteCode: 0, message: error.description, path: path)
    }

    public var kind: Kind
    public var sqliteCode: Int32
    public var message: String
    public var path: String

    public init(kind: Kind, sqliteCode: Int32, message: String, path: String) {
        self.kind = kind
        self.sqliteCode = sqliteCode
        self.message = message
        self.path = path
    }

    init(_ error: DatabaseError, path: String) {
        let kind: Kind
        switch error.resultCode {
        case .SQLITE_FULL: kind = .diskFull
        case .SQLITE_IOERR: kind = .ioError
        case .SQLITE_READONLY, .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_AUTH: kind = .readOnly
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: kind = .corrupt
        default: kind = .database
        }
        self.init(
            kind: kind, sqliteCode: error.extendedResultCode.rawValue,
            message: error.message ?? "SQLite error \(error.extendedResultCode.rawValue)", path: path)
    }

    public var description: String {
        let advice: String
        switch kind {
        case .diskFull: advice = "free space on the disk that holds it"
        case .ioError: advice = "check the storage medium"
        case .readOnly: advice = "make the file and its directory writable by the agrigps user"
        case .corrupt: advice = "the file was moved aside and a new spool started"
        case .database: advice = "see the SQLite message"
        case .notRegular, .newerVersion: return message
        }
        return "spool \(path): \(message) (SQLite code \(sqliteCode)); \(advice)"
    }
}
