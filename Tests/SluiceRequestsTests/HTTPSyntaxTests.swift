import Foundation
import Testing
@testable import SluiceRequests

/// `HTTPSyntax.namesMatch`: header names equal ignoring case, as `caseInsensitiveCompare` says,
/// whatever path (the ASCII loop or Foundation) answers.
struct HTTPSyntaxTests {
    @Test("header names match ignoring ASCII case, and exactly as caseInsensitiveCompare says for every pair")
    func namesMatchAsFoundationSays() {
        let names = [
            "ETag", "etag", "ETAG", "ETa", "ETagx", "", "x-amz-request-id", "X-Amz-Request-Id", "x-amz-request-iD",
            "Content-Length", "content-length", "content_length", "[", "{", "@", "`", "Straße", "STRASSE", "straße",
            "Ünicode", "ünicode", "e\u{301}", "\u{e9}",
        ]
        for a in names {
            for b in names {
                #expect(HTTPSyntax.namesMatch(a, b) == (a.caseInsensitiveCompare(b) == .orderedSame), "\(a) vs \(b)")
            }
        }
        #expect(HTTPSyntax.namesMatch("ETag", "etag"))
        #expect(!HTTPSyntax.namesMatch("[", "{"))  // 0x5B | 0x20 == 0x7B: not letters, not equal
    }
}
