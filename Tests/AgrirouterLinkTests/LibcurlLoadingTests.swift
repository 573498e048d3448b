import Foundation
import Testing
import TestSupport
@testable import AgrirouterLink

/// libcurl and its TLS, Kerberos and LDAP chain stay out of a process until it makes a request.
@Suite(.timeLimit(.minutes(1)))
struct LibcurlLoadingTests {
    @Test("libcurl is mapped at the first request, not at start or when a client is made")
    func libcurlIsOpenedAtTheFirstRequest() async {
        // In a process of its own: other tests in this one have made requests.
        await #expect(processExitsWith: .success) {
            #expect(mappedFiles(named: "libcurl").isEmpty, "libcurl mapped at start: \(mappedFiles(named: "libcurl"))")
            let client = HTTPSClient(connectTimeout: 2, totalTimeout: 3)
            #expect(mappedFiles(named: "libcurl").isEmpty, "making a client mapped libcurl")
            #expect(mappedFiles(named: "libgnutls").isEmpty)
            // Port 1 on loopback: nothing listens, so the request fails at connect, after libcurl opened.
            let thrown = #expect(throws: TransportError.self) {
                _ = try client.perform(method: "GET", url: "https://127.0.0.1:1/")
            }
            if case .cannotConnect = thrown {} else { Issue.record("expected cannotConnect, got \(String(describing: thrown))") }
            #expect(mappedFiles(named: "libcurl.so.4").count == 1)
            #expect(mappedFiles(named: "libgnutls").count == 1)
        }
    }

    @Test func anUnloadableLibcurlSaysWhatToInstall() {
        let error = TransportError.libcurlUnavailable("libcurl.so.4: cannot open shared object file: No such file or directory")
        #expect(error.description.contains("install the libcurl4 package"))
        #expect(error.description.contains("No such file"))
    }
}
