import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// The AWS Signature Version 4 test suite (`shared/vectors/aws4_testsuite`): canonical request,
/// string to sign and Authorization header of every case, byte for byte.
///
/// The suite signs for a generic service (`service`), so it runs with `.normalizing` rules:
/// its `normalize-path` cases need dot-segment and `//` removal, which S3 never does (S3 signs
/// `a//b/../c` as sent; `SigV4SignerTests` proves that separately).
@Suite struct AWSTestSuiteTests {
    static let credentials = S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    static let token =
        "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="

    /// Every directory holding a `.req`.
    static var cases: [String] {
        guard let root = sharedVectorsDirectory.map({ $0 + "/aws4_testsuite" }),
            let walker = FileManager.default.enumerator(atPath: root)
        else { return [] }
        return walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".req") }
            .map { root + "/" + ($0 as NSString).deletingLastPathComponent }.sorted()
    }

    @Test func theSuiteIsThere() throws {
        #expect(Self.cases.count == 34, "\(Self.cases.count) cases under \(sharedVectorsDirectory ?? "(no shared/vectors)")")
    }

    @Test(arguments: cases)
    func suiteCase(_ directory: String) throws {
        let name = (directory as NSString).lastPathComponent
        func file(_ suffix: String) throws -> String {
            try String(contentsOfFile: "\(directory)/\(name).\(suffix)", encoding: .utf8)
        }
        var (request, body) = try Self.parse(try file("req"))
        // The security token: signed when the case's canonical request lists it; the
        // header-after case adds it only after signing.
        let expectedCanonical = try file("creq")
        var credentials = Self.credentials
        let tokenHeader = request.headers.first { $0.name.lowercased() == "x-amz-security-token" }
        if name == "get-vanilla-with-session-token" {
            credentials.sessionToken = "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"
        } else if let tokenHeader, expectedCanonical.contains("x-amz-security-token") {
            credentials.sessionToken = tokenHeader.value
            request.headers.removeAll { $0.name.lowercased() == "x-amz-security-token" }
        } else if name == "post-sts-header-after" {
            request.headers.removeAll { $0.name.lowercased() == "x-amz-security-token" }
        }
        let date = try #require(request.headers.first { $0.name.lowercased() == "x-amz-date" }?.value)
        let signer = SigV4Signer(credentials: credentials, region: "us-east-1", service: "service", rules: .normalizing)
        let signature = signer.sign(request, payload: .sha256(of: Array(body.utf8)), at: try #require(SigV4Timestamp(amzDate: date)))
        #expect(signature.canonicalRequest == expectedCanonical)
        #expect(signature.stringToSign == (try file("sts")))
        #expect(signature.authorization == (try file("authz")))
        #expect(signature.header("Authorization") == (try file("authz")))
    }

    /// Parses a `.req`: request line (the path may hold spaces), headers with folded
    /// continuation lines, a blank line, the body.
    static func parse(_ text: String) throws -> (SigV4Request, String) {
        var lines = text.components(separatedBy: "\n")
        let requestLine = lines.removeFirst()
        let method = String(requestLine.prefix { $0 != " " })
        var target = String(requestLine.dropFirst(method.count + 1))
        if target.hasSuffix(" HTTP/1.1") { target = String(target.dropLast(" HTTP/1.1".count)) }
        var headers: [SigV4Header] = []
        var body = ""
        while !lines.isEmpty {
            let line = lines.removeFirst()
            if line.isEmpty {
                body = lines.joined(separator: "\n")
                break
            }
            if line.first == " " || line.first == "\t", !headers.isEmpty {
                headers[headers.count - 1].value += "\n" + line
                continue
            }
            let colon = try #require(line.firstIndex(of: ":"))
            headers.append(SigV4Header(String(line[..<colon]), String(line[line.index(after: colon)...])))
        }
        let host = try #require(headers.first { $0.name.lowercased() == "host" }?.value)
        let question = target.firstIndex(of: "?")
        let path = String(question.map { target[..<$0] } ?? target[...])
        let query = try question.map { try SigV4Encoding.parseQuery(String(target[target.index(after: $0)...])) } ?? []
        return (SigV4Request(method: method, scheme: "https", host: host, path: path, query: query, headers: headers), body)
    }
}
