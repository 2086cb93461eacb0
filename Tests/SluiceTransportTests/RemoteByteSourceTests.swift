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
    /// `--limit-rate` reaches the source: every byte its GETs receive is drawn from the cap
    /// (counted by the limiter; no clock asserted), over three GETs against the fault server's
    /// /source/ (a cap of 4 MiB per second makes the GETs wait for grants).
    @Test func theSourceGETsDrawEveryByteFromTheRateLimit() async throws {
        let server = try TusPeerProcess(["python3", peersDirectory + "/fault_server.py", "--port", "0"], portPattern: #"^(\d+)\n"#)
        defer { server.stop() }
        let length: Int64 = (2 << 20) + 77
        var options = RemoteSourceOptions()
        options.window = 1 << 20
        let limit = try RateLimit(bytesPerSecond: 4 << 20)
        options.rateLimit = limit
        let source = try await RemoteByteSource.open(URL(string: "http://127.0.0.1:\(server.port)/source/rated?size=\(length)")!, options: options)
        defer { source.close() }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 71 << 10, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < length {
            let count = try source.read(into: buffer, at: offset)
            #expect(count > 0)
            if count == 0 { break }
            offset += Int64(count)
        }
        #expect(offset == length)
        #expect(limit.bytesTaken == length)
    }
}
