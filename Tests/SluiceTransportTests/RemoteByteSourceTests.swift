import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// The remote source's rules that need no server: what pins a range, how an answer's range is
/// read, where the source's headers go after a redirect. The source against real servers
/// (nginx, the fault server's /source/) is Tests/e2e/test_remote_source.py.
struct RemoteByteSourceTests {
    @Test func aStrongETagPinsElseLastModifiedElseNothing() {
        let date = "Mon, 07 Dec 2026 00:00:00 GMT"
        #expect(RemoteValidator(fields: ["etag": "\"v1\"", "last-modified": date]) == .entityTag("\"v1\""))
        #expect(RemoteValidator(fields: ["etag": "W/\"v1\"", "last-modified": date]) == .lastModified(date))
        #expect(RemoteValidator(fields: ["etag": "W/\"v1\""]) == nil)
        #expect(RemoteValidator(fields: [:]) == nil)
        #expect(RemoteValidator.entityTag("\"v1\"").condition == HTTPHeader(name: "If-Match", value: "\"v1\""))
        #expect(RemoteValidator.lastModified(date).condition == HTTPHeader(name: "If-Unmodified-Since", value: date))
    }

    @Test func anAnswerOfAnotherVersionIsNamed() {
        let pinned = RemoteValidator.entityTag("\"v1\"")
        #expect(pinned.mismatch(in: ["etag": "\"v1\""]) == nil)
        #expect(pinned.mismatch(in: [:]) == nil)
        #expect(pinned.mismatch(in: ["etag": "\"v2\""]) == "its ETag is now \"v2\", was \"v1\"")
        #expect(RemoteValidator.lastModified("a").mismatch(in: ["last-modified": "b"]) != nil)
    }

    @Test func contentRangeIsReadStrictly() {
        #expect(RemoteRangeStream.contentRange("bytes 0-99/1000")! == (0, 99, 1000))
        #expect(RemoteRangeStream.contentRange("bytes 5-5/*")! == (5, 5, nil))
        for bad in [nil, "", "bytes 9-5/10", "bytes -5/10", "bytes 0-5", "items 0-5/10", "bytes a-b/c", "bytes 0-5/x"] {
            #expect(RemoteRangeStream.contentRange(bad) == nil, "\(bad ?? "nil")")
        }
    }

    @Test func theSourceHeadersStayWithItsOrigin() throws {
        let original = URL(string: "http://127.0.0.1:8080/a/file.bin")!
        let home = RemoteByteSource.Location(url: original, sendsHeaders: true)
        var options = RemoteSourceOptions()
        options.headers = [HTTPHeader(name: "X-Token", value: "secret")]
        let same = try RemoteByteSource.follow(from: home, fields: ["location": "/b/file.bin"], redirects: 1, original: original, options: options)
        #expect(same.sendsHeaders && same.url.absoluteString == "http://127.0.0.1:8080/b/file.bin")
        for elsewhere in ["http://localhost:8080/b", "https://127.0.0.1:8080/b", "http://127.0.0.1:8081/b"] {
            let away = try RemoteByteSource.follow(from: home, fields: ["location": elsewhere], redirects: 1, original: original, options: options)
            let sent = try RemoteByteSource.headers(for: away, method: "GET", adding: [], options: options)
            #expect(!away.sendsHeaders && sent.isEmpty, "\(elsewhere)")
            // Once away, back home does not bring them back within the same chain.
            let back = try RemoteByteSource.follow(from: away, fields: ["location": original.absoluteString], redirects: 2, original: original, options: options)
            #expect(!back.sendsHeaders)
        }
        #expect(throws: RemoteSourceError.self) {
            try RemoteByteSource.follow(from: home, fields: [:], redirects: 1, original: original, options: options)
        }
        #expect(throws: RemoteSourceError.self) {
            try RemoteByteSource.follow(from: home, fields: ["location": "/x"], redirects: 11, original: original, options: options)
        }
    }

    @Test func aSourceNobodyAnswersFailsWithATransportError() async throws {
        var options = RemoteSourceOptions()
        options.retry = RetryPolicy(retries: 0)
        // Port 1 on loopback: nothing listens there, the connection is refused at once.
        let error = await #expect(throws: RemoteSourceError.self) {
            try await RemoteByteSource.open(URL(string: "http://127.0.0.1:1/x")!, options: options)
        }
        #expect(error?.code == .transport)
        #expect(error?.url == "http://127.0.0.1:1/x")
    }
}
