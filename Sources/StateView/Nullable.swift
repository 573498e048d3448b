import Foundation

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
