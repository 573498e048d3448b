import Clocks
import Foundation
import GNSS

/// An optional that JSON writes as `null` rather than leaving its key out: the documents we print for
/// scripts keep every key, and say "unknown" as null, never as a stand-in value. Synthesized
/// encoding encodes the wrapper itself, which is never absent.
@propertyWrapper
public struct Nullable<Value: Encodable & Sendable>: Encodable, Sendable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) {
        self.wrappedValue = wrappedValue
    }

    public func encode(to encoder: any Encoder) throws {
        var single = encoder.singleValueContainer()
        if let wrappedValue { try single.encode(wrappedValue) } else { try single.encodeNil() }
    }
}

extension Nullable: Equatable where Value: Equatable {}

/// One line of JSON with sorted keys and plain slashes, as every document agrigps prints is written.
public enum JSONLine {
    /// A time as the documents write it (ISO 8601, UTC, milliseconds); nil stays nil, for `null`.
    public static func time(_ date: Date?) -> String? {
        date.map { ISO8601UTC.string(from: $0) }
    }

    public static func encode(_ value: some Encodable) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }
}
