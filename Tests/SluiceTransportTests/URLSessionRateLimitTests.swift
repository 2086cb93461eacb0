import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// `--limit-rate` on URLSession's sized bodies (up to `URLSessionTransport.sizedBodyLimit`,
/// handed over as data with `Content-Length`): their bytes are drawn from the cap before they
/// go (before: no pump drew them, and `s3 cp`, `upload --parts` and `tus` ran uncapped).
/// Shown by the cap's own count of what it let through, not by a clock.
@Suite("URLSession sized bodies under a rate limit", .hangGuard)
struct URLSessionRateLimitTests {
    @Test("a sized body's bytes are taken from the cap, and it still goes with Content-Length")
    func sizedBodyDrawsFromTheCap() async throws {
        let receiver = try LoopbackReceiver(log: { _ in })
        defer { receiver.stop() }
        // A cap far above what the body needs: nothing waits, only the count is looked at.
        let limit = try RateLimit(bytesPerSecond: 1 << 30)
        var options = UploadOptions()
        options.rateLimit = limit
        options.prefersContentLength = true
        let source = SyntheticByteSource(length: 300_007, seed: 29)
        let request = try UploadRequest(url: receiver.url + "rated", method: "PUT")
        let response = try await URLSessionTransport().send(request, body: .bytes(source), options: options) { _ in }
        #expect(response.status == 200)
        let received = try #require(receiver.completed.last)
        #expect(received.contentLength == source.length && !received.chunked, "sent as a sized body")
        #expect(received.sha256 == (try Digest.sha256(of: source)))
        #expect(limit.bytesTaken == source.length, "the cap let through \(limit.bytesTaken) of \(source.length) bytes")
    }

    @Test("cancelled while it waits for the cap: the task ends and what it took goes back")
    func cancelledWhileWaiting() async throws {
        // One byte a second: 1,000 bytes cannot all be taken before the cancel.
        let limit = try RateLimit(bytesPerSecond: 1)
        let waiting = Task { try await limit.takeWhole(1_000) }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(limit.bytesTaken == 0)
    }
}
