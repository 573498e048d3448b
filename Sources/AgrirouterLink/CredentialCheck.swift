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

    public var description: String {
        switch self {
        case .keyDoesNotOpen: return "the secret does not open the private key, or the key block is damaged"
        case .certificateUnreadable: return "the certificate block is not a readable X.509 certificate"
        case .keyDoesNotMatchCertificate: return "the private key does not belong to the certificate"
        case .tooLarge: return "the credential is larger than any agrirouter issues"
        }
    }
}

extension ClientCredentials {
    /// Opens the key with the secret (in memory only), reads the certificate, and checks that they
    /// belong together. libcrypto is the library libcurl will use with the same PEM later.
    public func check() throws(CredentialProblem) -> CredentialFacts {
        guard encryptedKeyPEM.utf8.count < 65_536, certificatePEM.utf8.count < 65_536, secret.utf8.count < 4096 else { throw .tooLarge }
        defer { ERR_clear_error() }
        guard let key = Self.read(encryptedKeyPEM, { bio in secret.withCString { PEM_read_bio_PrivateKey(bio, nil, nil, UnsafeMutableRawPointer(mutating: $0)) } })
        else { throw .keyDoesNotOpen }
        defer { EVP_PKEY_free(key) }
        guard let certificate = Self.read(certificatePEM, { bio in PEM_read_bio_X509(bio, nil, nil, nil) }) else { throw .certificateUnreadable }
        defer { X509_free(certificate) }
        guard X509_check_private_key(certificate, key) == 1 else { throw .keyDoesNotMatchCertificate }
        var expiry = tm()
        guard let notAfter = X509_get0_notAfter(certificate), ASN1_TIME_to_tm(notAfter, &expiry) == 1 else { throw .certificateUnreadable }
        return CredentialFacts(notAfter: Date(timeIntervalSince1970: Double(timegm(&expiry))))
    }

    /// Runs `read` on a memory BIO over `pem`.
    private static func read<T>(_ pem: String, _ read: (OpaquePointer) -> T?) -> T? {
        var bytes = Array(pem.utf8)
        return bytes.withUnsafeMutableBytes { buffer -> T? in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return read(bio)
        }
    }
}
