import COpenSSL
import Foundation
import StateFiles

/// Why the cab view's password could not be checked or stored.
public struct PasswordError: Error, Sendable, Equatable, CustomStringConvertible {
    public var description: String
}

/// The cab view's password, kept only as a salted PBKDF2-HMAC-SHA256 hash in the state directory
/// (`web-password`, mode 0600): `pbkdf2-sha256$<iterations>$<salt hex>$<hash hex>`.
public struct PasswordFile: Sendable {
    public let path: String
    static let iterations = 120_000
    static let minimumLength = 8
    static let maximumLength = 256

    public init(directory: String) {
        path = directory + "/web-password"
    }

    public var exists: Bool { FileManager.default.fileExists(atPath: path) }

    /// Hashes and stores `password`, replacing any earlier one. The file is written whole or not at all.
    public func set(_ password: String) throws(PasswordError) {
        guard password.count >= Self.minimumLength else {
            throw PasswordError(
                description: "a password for the cab view needs at least \(Self.minimumLength) characters")
        }
        guard password.utf8.count <= Self.maximumLength else {
            throw PasswordError(description: "a password for the cab view has at most \(Self.maximumLength) bytes")
        }
        guard let salt = Self.randomBytes(16), let hash = Self.derive(password, salt: salt, iterations: Self.iterations)
        else {
            throw PasswordError(description: "the password could not be hashed (OpenSSL failed)")
        }
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw PasswordError(description: "cannot create \(directory): \(error.localizedDescription)")
        }
        let line = "pbkdf2-sha256$\(Self.iterations)$\(Self.hex(salt))$\(Self.hex(hash))\n"
        do {
            try StateFile.replace(path, with: Array(line.utf8))
        } catch {
            throw PasswordError(description: "cannot store the password: \(error.description)")
        }
    }

    /// Whether `password` matches the stored hash; false when there is none or it cannot be read.
    public func verify(_ password: String) -> Bool {
        guard password.utf8.count <= Self.maximumLength,
            let bytes = try? StateFile.read(path, limit: 1024), let text = String(validating: bytes, as: UTF8.self)
        else { return false }
        let parts = text.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: "$").map(String.init)
        guard parts.count == 4, parts[0] == "pbkdf2-sha256", let iterations = Int(parts[1]),
            (1000...10_000_000).contains(iterations),
            let salt = Self.bytes(hex: parts[2]), let stored = Self.bytes(hex: parts[3]), stored.count == 32,
            let hash = Self.derive(password, salt: salt, iterations: iterations)
        else { return false }
        return Self.equalInConstantTime(hash, stored)
    }

    static func derive(_ password: String, salt: [UInt8], iterations: Int) -> [UInt8]? {
        guard let rounds = Int32(exactly: iterations) else { return nil }
        var output = [UInt8](repeating: 0, count: 32)
        let length = Int32(clamping: password.utf8.count)
        let status = password.withCString { passwordBytes in
            salt.withUnsafeBufferPointer { saltBytes in
                output.withUnsafeMutableBufferPointer { out in
                    cssl_pbkdf2_sha256(
                        passwordBytes, length, saltBytes.baseAddress, Int32(clamping: salt.count), rounds,
                        Int32(clamping: out.count), out.baseAddress)
                }
            }
        }
        return status == 1 ? output : nil
    }

    /// Cryptographically random bytes from OpenSSL; nil if it fails (then nothing is made from them).
    static func randomBytes(_ count: Int) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: count)
        guard let length = Int32(exactly: count),
            bytes.withUnsafeMutableBufferPointer({ cssl_random_bytes($0.baseAddress, length) }) == 1
        else { return nil }
        return bytes
    }

    static func equalInConstantTime(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        guard left.count == right.count else { return false }
        return left.withUnsafeBytes { a in
            right.withUnsafeBytes { b in cssl_memcmp(a.baseAddress, b.baseAddress, a.count) == 0 }
        }
    }

    /// Lower-case hex. Not `String(format:)`: its C varargs go through dynamic casts, and the first
    /// of each kind scans the whole binary's conformances, a millisecond or more at every page's first session.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func bytes(hex: String) -> [UInt8]? {
        let characters = Array(hex.utf8)
        guard characters.count % 2 == 0, characters.count <= 256 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < characters.count {
            guard let high = Self.nibble(characters[index]), let low = Self.nibble(characters[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return character - UInt8(ascii: "a") + 10
        default: return nil
        }
    }
}
