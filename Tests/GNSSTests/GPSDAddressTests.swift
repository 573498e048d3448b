import Testing

@testable import GNSS

@Suite struct GPSDAddressTests {
    @Test(
        "valid addresses",
        arguments: [
            ("127.0.0.1:2947", "127.0.0.1", 2947),
            ("localhost", "localhost", 2947),
            ("gps-box.local:3000", "gps-box.local", 3000),
            ("[::1]:2948", "::1", 2948),
            ("[::1]", "::1", 2947),
        ])
    func parses(text: String, host: String, port: Int) throws {
        let address = try GPSDAddress(parsing: text)
        #expect(address.host == host)
        #expect(Int(address.port) == port)
    }

    @Test(
        "invalid addresses say what is wrong",
        arguments: [
            ("", GPSDAddressError.empty),
            (":2947", .missingHost(":2947")),
            ("127.0.0.1:0", .invalidPort("0")),
            ("127.0.0.1:70000", .invalidPort("70000")),
            ("127.0.0.1:abc", .invalidPort("abc")),
            ("999.1.1.1:2947", .invalidHost("999.1.1.1")),
            ("bad host:2947", .invalidHost("bad host")),
            ("::1:2947", .bareIPv6("::1:2947")),
            ("[::1", .malformed("[::1")),
        ])
    func rejects(text: String, expected: GPSDAddressError) {
        #expect(throws: expected) { try GPSDAddress(parsing: text) }
        #expect(!expected.description.isEmpty && !expected.description.contains("\n"))
    }

    @Test func describesIPv6WithBrackets() {
        #expect(GPSDAddress(host: "::1", port: 2947).description == "[::1]:2947")
        #expect(GPSDAddress(host: "127.0.0.1", port: 1).description == "127.0.0.1:1")
    }
}
