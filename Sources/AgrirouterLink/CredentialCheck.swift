import COpenSSL
import Foundation

/// What can be learnt of a credential without using it: every check an onboarding answer must pass
/// before it may replace a working credential.
public struct CredentialFacts: Sendable, Equatable {
    /// The certificate's last valid moment.
    public var notAfter: Date
}

/// Why a credential cannot be used, in words that say what is wrong with it.
public enum CredentialProblem: Error, Sendable, Equatable, CustomStringConvertible {
    case keyDoesNotOpen
    case certificateUnreadable
    case keyDoesNotMatchCertificate
    case tooLarge
    case libcryptoUnavailable(String)

    public var description: String {
        switch self {
        case .keyDoesNotOpen: return "the secret does not open the private key, or the key block is damaged"
        case .certificateUnreadable: return "the certificate block is not a readable X.509 certificate"
        case .keyDoesNotMatchCertificate: return "the private key does not belong to the certificate"
        case .tooLarge: return "the credential is larger than any agrirouter issues"
        case .libcryptoUnavailable(let detail):
            return
                "OpenSSL's libcrypto cannot be loaded (\(detail)), so the credential cannot be checked; install the libssl3 package"
        }
    }
}

extension ClientCredentials {
    /// Opens the key with the secret (in memory only), reads the certificate, and checks that they
    /// belong together. libcrypto is the library libcurl will use with the same PEM later.
    public func check() throws(CredentialProblem) -> CredentialFacts {
        guard encryptedKeyPEM.utf8.count < 65_536, certificatePEM.utf8.count < 65_536, secret.utf8.count < 4096 else {
            throw .tooLarge
        }
        if let problem = cssl_problem() { throw .libcryptoUnavailable(String(cString: problem)) }
        defer { cssl_clear_error() }
        guard let key = Self.read(encryptedKeyPEM, { bio in secret.withCString { cssl_read_private_key(bio, $0) } })
        else { throw .keyDoesNotOpen }
        defer { cssl_key_free(key) }
        guard let certificate = Self.read(certificatePEM, { bio in cssl_read_certificate(bio) }) else {
            throw .certificateUnreadable
        }
        defer { cssl_certificate_free(certificate) }
        guard cssl_key_matches(certificate, key) == 1 else { throw .keyDoesNotMatchCertificate }
        var expiry = tm()
        guard cssl_not_after(certificate, &expiry) == 1 else { throw .certificateUnreadable }
        return CredentialFacts(notAfter: Date(timeIntervalSince1970: Double(timegm(&expiry))))
    }

    /// Runs `read` on a memory BIO over `pem`.
    private static func read<T>(_ pem: String, _ read: (OpaquePointer) -> T?) -> T? {
        var bytes = Array(pem.utf8)
        return bytes.withUnsafeMutableBytes { buffer -> T? in
            guard let length = Int32(exactly: buffer.count), let bio = cssl_memory_bio(buffer.baseAddress, length)
            else { return nil }
            defer { cssl_bio_free(bio) }
            return read(bio)
        }
    }
}
