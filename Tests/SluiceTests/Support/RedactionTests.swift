import Testing
@testable import Sluice

/// `Redaction.passwords(in:)`: the one rule every message, progress line and error
/// description uses for URLs that carry a password.
struct RedactionTests {
    @Test(arguments: [
        ("server answered 307 to http://user:SECRETPW@127.0.0.1:8080/sink after 3 bytes",
         "server answered 307 to http://user:***@127.0.0.1:8080/sink after 3 bytes"),
        ("more than 10 redirects, the last to https://a:b@h", "more than 10 redirects, the last to https://a:***@h"),
        // A password holding '@' and ':': the authority's last '@' ends the user information.
        ("http://u:p@ss:w@rd@host/x?y=http://v:q@other/", "http://u:***@host/x?y=http://v:***@other/"),
        // No password, no user information, no URL: unchanged.
        ("http://user@host/a", "http://user@host/a"),
        ("http://host:8080/a@b", "http://host:8080/a@b"),
        ("no url here: a@b", "no url here: a@b"),
        ("[upload http://x:y@h/files/1]", "[upload http://x:***@h/files/1]"),
        ("ends with ://", "ends with ://"),
    ])
    func passwordsAreShownAsStars(text: String, expected: String) {
        #expect(Redaction.passwords(in: text) == expected)
    }

    @Test func errorDescriptionsHideThePassword() {
        let upload = UploadError(.notReplayable, "server answered 307 to http://me:hunter2@h/x", bytesSent: 5)
        #expect(!upload.description.contains("hunter2") && upload.description.contains("me:***@h"))
        let tus = TusError(.httpStatus, "failed", uploadURL: "http://me:hunter2@h/files/1")
        #expect(!tus.description.contains("hunter2") && tus.description.contains("me:***@h"))
        let s3 = S3Error(.server, "redirected (307) to http://me:hunter2@h/b/k")
        #expect(!s3.description.contains("hunter2"))
    }
}
