import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// Sluice's signer against botocore's (`Tests/Peers/sigv4_botocore.py`): random requests,
/// identical canonical requests, strings to sign and Authorization headers; presigned URLs
/// identical to `S3SigV4QueryAuth`'s. The seed is printed; `SLUICE_TEST_SEED` replays it.
@Suite struct BotocoreSigV4Tests {
    static let pathPieces = [
        "a", "Key", "x.y", "~t_-", "sp ace", "plus+sign", "pct%41", "amp&", "eq=", "semi;", "colon:", "at@",
        "bang!", "dollar$", "quote'", "paren()", "star*", "comma,", "é", "ሴ", "😀", "ü-ß", "", ".", "..",
    ]
    static let s3OnlyPieces = ["q?", "hash#", "back\\slash", "br[]"]
    static let queryPieces = ["a", "B", "", "+", "a+b", "x y", "=", "&", "é", "~", "-_.", "%", "/", "ሴ=+", "1"]
    static let headerNames = ["My-Header", "X-Custom", "content-type", "X-Amz-Meta-Name", "Accept", "x-MIXED-case", "Range"]
    static let headerValues = ["v", "  padded  ", "inner   spaces  here", "tab\tinside", "MiXeD", "a,b", "\"quoted  value\"", "", "x=1; y=2"]
    static let methods = ["GET", "PUT", "POST", "DELETE", "HEAD", "PATCH", "OPTIONS"]

    struct Case {
        var rules: SigV4Signer.Rules
        var request: SigV4Request
        var payload: SigV4Payload
        var signer: SigV4Signer
        var timestamp: SigV4Timestamp
        /// The URL botocore sees: the path encoded by Python's quote (S3) or raw (normalising).
        var botocoreURL: String
    }

    static func randomCase(_ generator: inout SeededGenerator) -> Case {
        let rules: SigV4Signer.Rules = Bool.random(using: &generator) ? .s3 : .normalizing
        var pieces = pathPieces
        if rules == .s3 { pieces += s3OnlyPieces }
        let segments = (0..<Int.random(in: 0...5, using: &generator)).map { _ in
            (0..<Int.random(in: 1...3, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
        }
        var path = "/" + segments.joined(separator: "/")
        if Bool.random(using: &generator) { path += "/" }
        if Int.random(in: 0..<4, using: &generator) == 0 { path = path.replacingOccurrences(of: "/", with: "//") }
        let query = (0..<Int.random(in: 0...5, using: &generator)).map { _ in
            SigV4QueryItem(
                queryPieces.randomElement(using: &generator)! + queryPieces.randomElement(using: &generator)!,
                Int.random(in: 0..<4, using: &generator) == 0 ? "" : queryPieces.randomElement(using: &generator)!)
        }
        // Repeated keys with different values.
        let repeated = query.first.map { [SigV4QueryItem($0.name, "second+" + $0.value)] } ?? []
        let headers = (0..<Int.random(in: 0...5, using: &generator)).map { _ in
            SigV4Header(headerNames.randomElement(using: &generator)!, headerValues.randomElement(using: &generator)!)
        }
        let host = ["example.amazonaws.com", "127.0.0.1:8333", "s3.eu-west-1.amazonaws.com", "[::1]:9000"].randomElement(using: &generator)!
        let method = methods.randomElement(using: &generator)!
        let request = SigV4Request(method: method, scheme: "http", host: host, path: path, query: query + repeated, headers: headers)
        let token = Bool.random(using: &generator) ? "FQoGZXIvYXdzE//token+/=" : nil
        let signer = SigV4Signer(
            credentials: S3Credentials(
                accessKeyID: "AKID\(Int.random(in: 0...999, using: &generator))", secretAccessKey: "secret/+\(Int.random(in: 0...9, using: &generator))", sessionToken: token),
            region: ["us-east-1", "eu-central-1", "auto"].randomElement(using: &generator)!,
            service: rules == .s3 ? "s3" : "service", rules: rules)
        let payloads: [SigV4Payload] =
            rules == .s3
            ? [.unsigned, .empty, .sha256(of: Array("body".utf8)), .streamingSigned, .streamingUnsignedTrailer, .streamingSignedTrailer]
            : [.empty]
        let seconds = Double(Int.random(in: 1_400_000_000...1_900_000_000, using: &generator))
        let botocorePath = rules == .s3 ? pythonQuote(path) : path
        return Case(
            rules: rules, request: request, payload: payloads.randomElement(using: &generator)!, signer: signer,
            timestamp: SigV4Timestamp(Date(timeIntervalSince1970: seconds)), botocoreURL: "http://\(host)\(botocorePath)")
    }

    /// Python's `urllib.parse.quote(path, safe='/~')`, as botocore's serializer encodes S3 keys.
    /// Written independently of `SigV4Encoding` (a percent-escape of every byte not allowed).
    static func pythonQuote(_ path: String) -> String {
        let allowed = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~/".utf8)
        return path.utf8.map { allowed.contains($0) ? String(UnicodeScalar($0)) : String(format: "%%%02X", $0) }.joined()
    }

    static func json(_ testCase: Case, kind: String, expires: Int = 0) -> [String: Any] {
        [
            "kind": kind, "rules": testCase.rules == .s3 ? "s3" : "normalizing", "method": testCase.request.method,
            "url": testCase.botocoreURL, "params": testCase.request.query.map { [$0.name, $0.value] },
            "headers": testCase.request.headers.map { [$0.name, $0.value] }, "amz_date": testCase.timestamp.amzDate,
            "access_key": testCase.signer.credentials.accessKeyID, "secret_key": testCase.signer.credentials.secretAccessKey,
            "token": testCase.signer.credentials.sessionToken as Any, "region": testCase.signer.region,
            "service": testCase.signer.service, "payload": testCase.payload.contentSHA256, "expires": expires,
        ]
    }

    @Test(.hangGuard) func canonicalRequestsMatchBotocore() async throws {
        let seed = testSeed("sigv4 vs botocore")
        var generator = SeededGenerator(seed: seed)
        let cases = (0..<400).map { _ in Self.randomCase(&generator) }
        let answers = try #require(try await runPythonPeer("sigv4_botocore.py", input: cases.map { Self.json($0, kind: "header") }) as? [[String: String]])
        #expect(answers.count == cases.count)
        var mismatches = 0
        for (testCase, answer) in zip(cases, answers) {
            let signed = testCase.signer.sign(testCase.request, payload: testCase.payload, at: testCase.timestamp)
            let same =
                signed.canonicalRequest == answer["canonical_request"] && signed.stringToSign == answer["string_to_sign"]
                && signed.authorization == answer["authorization"]
            if !same, mismatches < 3 {
                mismatches += 1
                Issue.record(
                    "seed \(seed): \(testCase.request.method) \(testCase.botocoreURL) differs:\nsluice:\n\(signed.canonicalRequest)\nbotocore:\n\(answer["canonical_request"] ?? "-")"
                )
            }
        }
    }

    @Test(.hangGuard) func presignedURLsMatchBotocore() async throws {
        let seed = testSeed("presign vs botocore")
        var generator = SeededGenerator(seed: seed)
        var cases: [(Case, Int)] = []
        for _ in 0..<100 {
            var testCase = Self.randomCase(&generator)
            // A presigned URL is for S3, carries no operation query here (botocore re-parses it
            // with parse_qs, which reads '+' as a space) and signs only Host.
            testCase.rules = .s3
            testCase.signer.rules = .s3
            testCase.signer.service = "s3"
            testCase.request.query = []
            testCase.request.headers = []
            testCase.botocoreURL = "http://\(testCase.request.host)\(Self.pythonQuote(testCase.request.path))"
            cases.append((testCase, Int.random(in: 1...604_800, using: &generator)))
        }
        let answers = try #require(try await runPythonPeer("sigv4_botocore.py", input: cases.map { Self.json($0.0, kind: "presign", expires: $0.1) }) as? [[String: String]])
        #expect(answers.count == cases.count)
        for ((testCase, expires), answer) in zip(cases, answers) {
            let presigned = try testCase.signer.presign(testCase.request, expires: expires, at: testCase.timestamp)
            #expect(presigned.url == answer["url"], "seed \(seed)")
        }
    }
}
