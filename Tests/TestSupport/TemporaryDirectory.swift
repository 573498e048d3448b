import Foundation

/// A directory of one test's own under the system's temporary directory, made at once and removed
/// with everything in it when the test lets it go (made writable again first, for the tests that
/// take that away).
public final class TemporaryDirectory: Sendable {
    public let path: String

    /// `label` names the directory (agrigps-LABEL-UUID), so that one left by a crash says whose it is.
    public init(_ label: String = "test") {
        path = NSTemporaryDirectory() + "agrigps-\(label)-\(UUID().uuidString)"
        // Should it fail, the test fails at its first file, saying where.
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { remove() }

    /// A path inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }

    /// Writes `bytes` to `name` (its directories made as needed) and returns its path.
    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let target = file(name)
        try FileManager.default.createDirectory(
            atPath: (target as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: target))
        return target
    }

    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String { try write(name, Array(text.utf8)) }

    /// Removes it now, with what it holds.
    public func remove() {
        chmod(path, 0o755)
        try? FileManager.default.removeItem(atPath: path)
    }
}
