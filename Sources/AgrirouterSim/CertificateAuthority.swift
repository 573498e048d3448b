import Crypto
import Foundation
import SwiftASN1
import X509

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
    func issueServerCertificate(alsoFor host: String? = nil) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey) {
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

    private func issue(subject: DistinguishedName, usage: ExtendedKeyUsage.Usage,
                       names: [GeneralName]) throws -> (certificate: Certificate, key: P256.Signing.PrivateKey) {
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
    /// The key as an `ENCRYPTED PRIVATE KEY` (PKCS#8, PBES2 with AES-256-CBC), as agrirouter delivers it.
    /// swift-crypto has no PKCS#8 encryption, so the openssl command line does this one step; the
    /// secret travels through the environment, never the command line.
    static func encryptedPEM(_ key: P256.Signing.PrivateKey, secret: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["pkcs8", "-topk8", "-v2", "aes-256-cbc", "-passout", "env:AGRIROUTER_SIM_KEY_SECRET"]
        process.environment = ["AGRIROUTER_SIM_KEY_SECRET": secret, "PATH": "/usr/bin:/bin"]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        input.fileHandleForWriting.write(Data(key.pemRepresentation.utf8))
        try input.fileHandleForWriting.close()
        let pem = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0, let text = String(data: pem, encoding: .utf8),
              text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") else {
            throw SimError.keyEncryptionFailed
        }
        return text
    }
}

enum SimError: Error {
    case keyEncryptionFailed
}
