import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// An IPv4 endpoint written another way is signed as libcurl sends it (issue 18.9).
struct CanonicalHostTests {
    @Test(arguments: [
        ("127.1", "127.0.0.1"), ("0x7f000001", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"), ("2130706433", "127.0.0.1"),
        ("127.0.1", "127.0.0.1"), ("10.0x10.1", "10.16.0.1"), ("127.0.0.1", "127.0.0.1"), ("1234", "0.0.4.210"),
        ("example.com", "example.com"), ("256.1", "256.1"), ("1.2.3.4.5", "1.2.3.4.5"), ("1.2.3.256", "1.2.3.256"),
        ("0x", "0x"), ("1..2", "1..2"), ("08.1", "08.1"), ("s3.amazonaws.com", "s3.amazonaws.com"),
    ])
    func canonicalIPv4(written: String, sent: String) {
        #expect(HTTPSyntax.canonicalIPv4(written) == sent)
    }

    @Test func theSignedHostIsTheSentHost() throws {
        let request = try SigV4Request(method: "PUT", endpoint: URL(string: "http://127.1:8333")!, path: "/b/k")
        #expect(request.host == "127.0.0.1:8333")
        #expect(request.url.absoluteString == "http://127.0.0.1:8333/b/k")
        let presigned = try SigV4Request(method: "GET", url: "http://0x7f000001:9000/b/k?x=1")
        #expect(presigned.host == "127.0.0.1:9000")
        #expect(try SigV4Request(method: "GET", url: "http://[::1]:9000/b").host == "[::1]:9000")
    }
}
