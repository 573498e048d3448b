import Foundation
import TestSupport
import Testing

@testable import AgrirouterLink

/// The libraries that bring TLS with them stay out of a process until it needs them: libcurl (and
/// its TLS, Kerberos and LDAP chain) until a request, libmosquitto (and libssl) until an MQTT link,
/// libcrypto until a credential is checked.
@Suite(.timeLimit(.minutes(1)))
struct LibraryLoadingTests {
    @Test("libcurl is mapped at the first request, not at start or when a client is made")
    func libcurlIsOpenedAtTheFirstRequest() async {
        // In a process of its own: other tests in this one have made requests.
        await #expect(processExitsWith: .success) {
            #expect(mappedFiles(named: "libcurl").isEmpty, "libcurl mapped at start: \(mappedFiles(named: "libcurl"))")
            let client = HTTPSClient(connectTimeout: 2, totalTimeout: 3)
            #expect(mappedFiles(named: "libcurl").isEmpty, "making a client mapped libcurl")
            #expect(mappedFiles(named: "libgnutls").isEmpty)
            // Port 1 on loopback: nothing listens, so the request fails at connect, after libcurl opened.
            let thrown = await #expect(throws: TransportError.self) {
                _ = try await client.send(method: "GET", url: "https://127.0.0.1:1/")
            }
            if case .cannotConnect = thrown {
            } else {
                Issue.record("expected cannotConnect, got \(String(describing: thrown))")
            }
            #expect(mappedFiles(named: "libcurl.so.4").count == 1)
            #expect(mappedFiles(named: "libgnutls").count == 1)
        }
    }

    @Test("libcrypto is mapped at the first credential check, and a bad credential is still refused")
    func libcryptoIsOpenedAtTheFirstCheck() async {
        await #expect(processExitsWith: .success) {
            for name in ["libcrypto", "libssl", "libmosquitto"] {
                #expect(mappedFiles(named: name).isEmpty, "\(name) mapped at start: \(mappedFiles(named: name))")
            }
            let credentials = ClientCredentials(
                certificatePEM: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
                encryptedKeyPEM: "not a key", secret: "secret")
            #expect(throws: CredentialProblem.keyDoesNotOpen) { try credentials.check() }
            #expect(mappedFiles(named: "libcrypto.so.3").count == 1)
            #expect(mappedFiles(named: "libssl").isEmpty && mappedFiles(named: "libmosquitto").isEmpty)
        }
    }

    @Test func unloadableLibrariesSayWhatToInstall() {
        let mosquitto = MQTTSetupError.libmosquittoUnavailable(
            "libmosquitto.so.1: cannot open shared object file: No such file or directory")
        #expect(
            mosquitto.description.contains("install Debian's libmosquitto1")
                && mosquitto.description.contains("No such file"))
        let crypto = CredentialProblem.libcryptoUnavailable(
            "libcrypto.so.3: cannot open shared object file: No such file or directory")
        #expect(
            crypto.description.contains("install the libssl3 package") && crypto.description.contains("No such file"))
    }

    @Test func anUnloadableLibcurlSaysWhatToInstall() {
        let error = TransportError.libcurlUnavailable(
            "libcurl.so.4: cannot open shared object file: No such file or directory")
        #expect(error.description.contains("install the libcurl4 package"))
        #expect(error.description.contains("No such file"))
    }
}
