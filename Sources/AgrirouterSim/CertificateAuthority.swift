import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

/// The simulator's own CA. It signs the server certificate (for 127.0.0.1 and localhost) and one
/// client certificate per onboarding, whose common name is the endpoint's deviceAlternateId.
struct CertificateAuthority: Sendable {
    let name: DistinguishedName
    /// Kept as bytes: swift-crypto's key type is not Sendable.
    private let keyBytes: Data
    let certificate: Certificate

    private var key: P256.Signing.PrivateKey {
        // The bytes came from a valid key, so this cannot fail.
        (try? P256.Signing.PrivateKey(rawRepresentation: keyBytes)) ?? P256.Signing.PrivateKey()
    }

    init(commonName: String = "agrirouter-sim CA") throws {
        name = try DistinguishedName {
            CommonName(commonName)
            OrganizationName("agrirouter-sim")
        }
        let key = P256.Signing.PrivateKey()
        keyBytes = key.rawRepresentation
        let now = Date()
        certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
            issuer: name, subject: name, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            },
            issuerPrivateKey: .init(key))
    }

    var certificatePEM: String {
        (try? certificate.serializeAsPEM().pemString) ?? ""
    }

    /// A certificate for the simulator's TLS server: localhost and 127.0.0.1, and `host` (an IPv4
    /// address or a DNS name) when clients reach it by another name.
    func issueServerCertificate(alsoFor host: String? = nil) throws -> (
        certificate: Certificate, key: P256.Signing.PrivateKey
    ) {
        var names: [GeneralName] = [.dnsName("localhost"), .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1]))]
        if let host, host != "localhost", host != "127.0.0.1" {
            names.append(Self.ipv4(host).map { .ipAddress(ASN1OctetString(contentBytes: $0[...])) } ?? .dnsName(host))
        }
        return try issue(subject: DistinguishedName { CommonName("localhost") }, usage: .serverAuth, names: names)
    }

    /// The four bytes of a dotted IPv4 address, or nil for anything else.
    static func ipv4(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        let bytes = parts.compactMap { UInt8($0) }
        return parts.count == 4 && bytes.count == 4 ? bytes : nil
    }

    /// A client certificate for an endpoint, valid 10 years as agrirouter's are.
    func issueClientCertificate(endpointID: String) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey) {
        try issue(subject: DistinguishedName { CommonName(endpointID) }, usage: .clientAuth, names: [])
    }

    private func issue(
        subject: DistinguishedName, usage: ExtendedKeyUsage.Usage,
        names: [GeneralName]
    ) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey) {
        let key = P256.Signing.PrivateKey()
        let now = Date()
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
            issuer: name, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([usage])
                if !names.isEmpty { SubjectAlternativeNames(names) }
            },
            issuerPrivateKey: .init(self.key))
        return (certificate, key)
    }
}

enum KeyEncryption {
    /// The key as an `ENCRYPTED PRIVATE KEY` (PKCS#8 EncryptedPrivateKeyInfo, RFC 5958), as
    /// agrirouter delivers it: PBES2 (RFC 8018) with PBKDF2-HMAC-SHA256 and AES-256-CBC, the scheme
    /// `openssl pkcs8 -topk8 -v2 aes-256-cbc` writes. Done here rather than by that command, so that
    /// onboarding waits on no child process in the simulator's actor (a thread of Swift's pool).
    static func encryptedPEM(_ key: P256.Signing.PrivateKey, secret: String, rounds: Int = 2048) throws -> String {
        let salt = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        let iv = (0..<16).map { _ in UInt8.random(in: .min ... .max) }
        let derived = try KDF.Insecure.PBKDF2.deriveKey(
            from: Array(secret.utf8), salt: salt, using: .sha256, outputByteCount: 32,
            unsafeUncheckedRounds: rounds)
        let encrypted = try AES._CBC.encrypt(key.derRepresentation, using: derived, iv: AES._CBC.IV(ivBytes: iv))
        var der = DER.Serializer()
        try der.appendConstructedNode(identifier: .sequence) { info in
            try info.appendConstructedNode(identifier: .sequence) { algorithm in
                try algorithm.serialize(ASN1ObjectIdentifier.pbes2)
                try algorithm.appendConstructedNode(identifier: .sequence) { parameters in
                    try parameters.appendConstructedNode(identifier: .sequence) { derivation in
                        try derivation.serialize(ASN1ObjectIdentifier.pbkdf2)
                        try derivation.appendConstructedNode(identifier: .sequence) { pbkdf2 in
                            try pbkdf2.serialize(ASN1OctetString(contentBytes: salt[...]))
                            try pbkdf2.serialize(rounds)
                            try pbkdf2.serialize(32)
                            try pbkdf2.appendConstructedNode(identifier: .sequence) { prf in
                                try prf.serialize(ASN1ObjectIdentifier.hmacWithSHA256)
                                try prf.serialize(ASN1Null())
                            }
                        }
                    }
                    try parameters.appendConstructedNode(identifier: .sequence) { scheme in
                        try scheme.serialize(ASN1ObjectIdentifier.aes256CBC)
                        try scheme.serialize(ASN1OctetString(contentBytes: iv[...]))
                    }
                }
            }
            try info.serialize(ASN1OctetString(contentBytes: Array(encrypted)[...]))
        }
        let base64 = Data(der.serializedBytes).base64EncodedString()
        let lines = stride(from: 0, to: base64.count, by: 64).map { offset in
            let start = base64.index(base64.startIndex, offsetBy: offset)
            return String(
                base64[start..<(base64.index(start, offsetBy: 64, limitedBy: base64.endIndex) ?? base64.endIndex)])
        }
        return "-----BEGIN ENCRYPTED PRIVATE KEY-----\n" + lines.joined(separator: "\n")
            + "\n-----END ENCRYPTED PRIVATE KEY-----\n"
    }
}

extension ASN1ObjectIdentifier {
    /// RFC 8018's and NIST's identifiers for what an encrypted PKCS#8 key names.
    static let pbes2: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 5, 13]
    static let pbkdf2: ASN1ObjectIdentifier = [1, 2, 840, 113549, 1, 5, 12]
    static let hmacWithSHA256: ASN1ObjectIdentifier = [1, 2, 840, 113549, 2, 9]
    static let aes256CBC: ASN1ObjectIdentifier = [2, 16, 840, 1, 101, 3, 4, 1, 42]
}
