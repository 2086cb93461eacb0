import Testing
@testable import Sluice
import SluiceTestSupport

/// `Redaction.secrets(in:)`: the one rule every message, progress line and error
/// description uses for URLs that carry a password.
struct RedactionTests {
    @Test(arguments: [
        (
            "server answered 307 to http://user:SECRETPW@127.0.0.1:8080/sink after 3 bytes",
            "server answered 307 to http://user:***@127.0.0.1:8080/sink after 3 bytes"
        ),
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
        #expect(Redaction.secrets(in: text) == expected)
    }

    @Test func errorDescriptionsHideThePassword() {
        let upload = UploadError(.notReplayable, "server answered 307 to http://me:hunter2@h/x", bytesSent: 5)
        #expect(!upload.description.contains("hunter2") && upload.description.contains("me:***@h"))
        let tus = TusError(.httpStatus, "failed", uploadURL: "http://me:hunter2@h/files/1")
        #expect(!tus.description.contains("hunter2") && tus.description.contains("me:***@h"))
        let s3 = S3Error(.server, "redirected (307) to http://me:hunter2@h/b/k")
        #expect(!s3.description.contains("hunter2"))
    }

    /// A password holding a delimiter (`#`, `/`, `?`, a space) still ends at the `@` before the
    /// host: before, 11 of these 12 were printed in clear in `tus`'s and `s3 cp --endpoint-url`'s
    /// "invalid URL" line.
    @Test(arguments: [
        "http://u:pa#ss@h/x", "http://u:pa/ss@h/x", "http://u:pa?ss@h/x", "http://u:pa ss@h/x",
        "http://u:#pass@h/x", "http://u:/pass@h/x", "http://u:?pass@h/x", "http://u: pass@h/x",
        "http://u:pa%20ss@h/x", "https://u:p#a/s?s w@h:9000/x", "invalid URL \"http://u:pa ss@h:1/files/\": it holds a space",
        "http://u:pass@h/x",
        // An '@' before the delimiter too (issue 29 follow-up): before, `u:***@ss#word@h/x`.
        "http://u:pa@ss#word@h/x", "http://u:pa@ss/word@h/x", "http://u:pa@ss?word@h/x", "http://u:pa@ss wo rd@h/x",
        "invalid URL \"http://u:pa@ss#wo rd@h:1/x\": it holds a space", "tus: OPTIONS http://u:pa@ss#word@h:1/x failed",
    ])
    func malformedPasswordsAreShownAsStars(text: String) {
        let shown = Redaction.secrets(in: text)
        #expect(!shown.contains("pa") || !shown.contains("ss"), "\(shown)")
        #expect(!shown.contains("pass") && shown.contains("u:***@h"), "\(shown)")
    }

    @Test("a port, an IPv6 literal and an address in the path are no passwords")
    func notPasswords() {
        for text in ["http://host:8080/a@b", "http://[::1]:8080/x by me@example.com", "http://host:/path", "s3://b/k@2"] {
            #expect(Redaction.secrets(in: text) == text)
        }
    }

    /// A refused redirect's `Location` during `upload --parts` carried a usable presigned URL.
    @Test func signaturesAndTokensInQueriesAreShownAsStars() {
        let line =
            "server answered 307 to http://127.0.0.1:9/b/k?partNumber=2&uploadId=U&X-Amz-Algorithm=AWS4-HMAC-SHA256"
            + "&X-Amz-Credential=AKID%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z"
            + "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Security-Token=SESSIONTOKEN&X-Amz-Signature=abcdef0123 (5 bytes sent)"
        let shown = Redaction.secrets(in: line)
        #expect(!shown.contains("SESSIONTOKEN") && !shown.contains("abcdef0123"), "\(shown)")
        #expect(shown.contains("X-Amz-Security-Token=***&X-Amz-Signature=*** (5 bytes sent)"), "\(shown)")
        #expect(shown.contains("partNumber=2&uploadId=U&"), "the rest says where: \(shown)")
        #expect(Redaction.secrets(in: "https://h/f?sig=S1&se=2030&token=T2#x") == "https://h/f?sig=***&se=2030&token=***#x")
        let error = UploadError(.tooManyRedirects, "redirect to http://h/k?X-Amz-Signature=SECRETSIG refused")
        #expect(!error.description.contains("SECRETSIG"))
    }

    /// A secret a request carried is hidden wherever a server's words hold it (issue 37.6); one
    /// too short to be told from common words is left to the other rules.
    @Test func registeredSecretsAreShownAsStarsWherever() {
        Redaction.register("registered-secret-37-a")
        Redaction.register("short")
        #expect(Redaction.secrets(in: "echo: registered-secret-37-a; again registered-secret-37-a.") == "echo: ***; again ***.")
        #expect(Redaction.secrets(in: "a short line") == "a short line")
        #expect(
            Redaction.secrets(in: "Authorization: AWS4-HMAC-SHA256 Credential=A/x, Signature=0123abcd; next")
                == "Authorization: AWS4-HMAC-SHA256 Credential=A/x, Signature=***; next")
        #expect(UploadOptions.Credentials(user: "u", password: "registered-password-37").password.isEmpty == false)
        #expect(Redaction.secrets(in: "401: bad password registered-password-37") == "401: bad password ***")
    }

    /// A `~/.aws/credentials` line without `=` (a secret key or a token pasted alone) was
    /// echoed whole by `s3 cp`, `s3 presign` and `s3 abort`.
    @Test func credentialFileLinesAreNotEchoed() {
        for text in [
            "[default]\nwJalrXUtnFEMIK7MDENGbPxRfiCYSECRET\n", "wJalrXUtnFEMIK7MDENGbPxRfiCYSECRET\n[default]\n",
            "[default]\ns3 =\n  wJalrXUtnFEMIK7MDENGbPxRfiCYSECRET\n",
        ] {
            let error = #expect(throws: S3Error.self) { _ = try S3ConfigFile(parsing: text, path: "/home/me/.aws/credentials") }
            #expect(
                error.map { !"\($0)".contains("SECRET") && "\($0)".contains("/home/me/.aws/credentials") } == true,
                "\(String(describing: error))")
        }
    }
}
