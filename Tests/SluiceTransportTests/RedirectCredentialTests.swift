import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// Credentials and a redirect to another origin: two loopback sinks on two ports, both transports.
@Suite("Credentials across redirects", .serialized, .hangGuard)
struct RedirectCredentialTests {
    static let credentialHeaders = [
        ("Authorization", "Bearer X"), ("Cookie", "s=X"), ("Proxy-Authorization", "Basic cHJveHk6c2VjcmV0"),
    ]

    private func send(
        _ transport: TransportKind, from url: String, options: UploadOptions = UploadOptions(),
        extraHeaders: [(String, String)] = credentialHeaders
    ) async throws -> (UploadResponse, CurlSink.Report?) {
        let source = SyntheticByteSource(length: 100_003, seed: 12)
        var headers = extraHeaders.map { HTTPHeader(name: $0.0, value: $0.1) }
        headers.append(HTTPHeader(name: "X-Other", value: "kept"))
        let request = try UploadRequest(url: url, method: "PUT", headers: headers)
        let response = try await Uploader(transport: transport, options: options).upload(request, body: .bytes(source))
        let report = try? CurlSink.report(response)
        if let report, response.status == 200 {
            #expect(report.count == source.length)
            #expect(report.sha256 == (try Digest.sha256(of: source)))
        }
        return (response, report)
    }

    private static func redirect(_ first: CurlSink, to target: String) -> String {
        first.url("/redirect307?to=" + target.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
    }

    @Test(
        "another port: Authorization, Cookie and Proxy-Authorization are dropped, other headers kept",
        arguments: TransportKind.allCases)
    func crossOriginDropsCredentialHeaders(transport: TransportKind) async throws {
        let first = try CurlSink(), second = try CurlSink()
        defer { first.stop(); second.stop() }
        let (response, report) = try await send(transport, from: Self.redirect(first, to: second.url("/sink/final")))
        #expect(response.status == 200)
        let seen = try #require(report)
        #expect(seen.path == "/sink/final")
        #expect(seen.headers["authorization"] == nil)
        #expect(seen.headers["cookie"] == nil)
        #expect(seen.headers["proxy-authorization"] == nil)
        #expect(seen.headers["x-other"] == "kept")
    }

    @Test("same origin: every header follows the redirect", arguments: TransportKind.allCases)
    func sameOriginKeepsCredentialHeaders(transport: TransportKind) async throws {
        let first = try CurlSink()
        defer { first.stop() }
        let (response, report) = try await send(transport, from: Self.redirect(first, to: first.url("/sink/final")))
        #expect(response.status == 200)
        let seen = try #require(report)
        #expect(seen.path == "/sink/final")
        #expect(seen.headers["authorization"] == "Bearer X")
        #expect(seen.headers["cookie"] == "s=X")
        #expect(seen.headers["proxy-authorization"] == "Basic cHJveHk6c2VjcmV0")
    }

    @Test("keepsCredentialsAcrossOrigins: the headers go to the other origin", arguments: TransportKind.allCases)
    func trustedRedirectKeepsCredentialHeaders(transport: TransportKind) async throws {
        let first = try CurlSink(), second = try CurlSink()
        defer { first.stop(); second.stop() }
        var options = UploadOptions()
        options.keepsCredentialsAcrossOrigins = true
        let (response, report) = try await send(transport, from: Self.redirect(first, to: second.url("/sink/final")), options: options)
        #expect(response.status == 200)
        let seen = try #require(report)
        #expect(seen.headers["authorization"] == "Bearer X")
        #expect(seen.headers["cookie"] == "s=X")
    }

    @Test("credentials do not answer the other origin's 401; trusted, they do", arguments: TransportKind.allCases)
    func crossOriginChallengeIsNotAnswered(transport: TransportKind) async throws {
        let first = try CurlSink(), second = try CurlSink()
        defer { first.stop(); second.stop() }
        var options = UploadOptions()
        options.credentials = .init(user: "user", password: "secret")
        let url = Self.redirect(first, to: second.url("/auth"))
        let (refused, _) = try await send(transport, from: url, options: options, extraHeaders: [])
        #expect(refused.status == 401)
        options.keepsCredentialsAcrossOrigins = true
        let (answered, report) = try await send(transport, from: url, options: options, extraHeaders: [])
        #expect(answered.status == 200)
        #expect(report?.headers["authorization"] != nil)
    }

    @Test("credentials in the URL stay with their origin", arguments: TransportKind.allCases)
    func urlCredentialsStayWithTheirOrigin(transport: TransportKind) async throws {
        let first = try CurlSink(), second = try CurlSink()
        defer { first.stop(); second.stop() }
        let url = Self.redirect(first, to: second.url("/auth")).replacingOccurrences(of: "http://", with: "http://user:secret@")
        let (response, report) = try await send(transport, from: url, extraHeaders: [])
        #expect(response.status == 401)
        #expect(report == nil)  // the 401's body is not the sink's report: nothing was accepted
    }

    @Test func originComparison() throws {
        let request = try UploadRequest(url: "http://Example.test/a")
        #expect(request.isSameOrigin(URL(string: "http://example.test:80/b")!))
        #expect(!request.isSameOrigin(URL(string: "https://example.test/a")!))
        #expect(!request.isSameOrigin(URL(string: "http://example.test:8080/a")!))
        #expect(!request.isSameOrigin(URL(string: "http://other.test/a")!))
        let secure = try UploadRequest(url: "https://example.test/a")
        #expect(secure.isSameOrigin(URL(string: "https://example.test:443/")!))
    }
}
