import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// `ResponseBodyHandling.collectOrFail`: how S3 and tus read answers. A body within the limit
/// is kept whole; one past it fails the request at once (`responseTooLarge`), on both transports.
@Suite("Bounded answers", .serialized, .hangGuard)
struct BoundedAnswerTests {
    private func upload(_ transport: TransportKind, _ url: String, limit: Int) async throws -> UploadResponse {
        var options = UploadOptions()
        options.responseBody = .collectOrFail(limit: limit)
        let request = try UploadRequest(url: url, method: "PUT")
        return try await Uploader(transport: transport, options: options).upload(request, body: .bytes(MemoryByteSource("hello")))
    }

    @Test(arguments: TransportKind.allCases)
    func aBodyPastTheLimitFailsTheRequest(transport: TransportKind) async throws {
        let sink = try CurlSink()
        defer { sink.stop() }
        let kept = try await upload(transport, sink.url("/large?bytes=1000003&seed=3"), limit: 1_000_003)
        #expect(kept.body.count == 1_000_003 && !kept.isBodyTruncated)
        // 64 MiB against a 1 MiB limit: fails, having read about the limit, not the body.
        let error = await #expect(throws: UploadError.self) {
            try await upload(transport, sink.url("/large?bytes=\(64 << 20)&seed=3"), limit: ResponseBodyHandling.answerLimit)
        }
        #expect(error?.code == .responseTooLarge)
        #expect(error?.status == 200)
        #expect(error?.message.contains("longer than 1 MiB") == true)
    }

    @Test func theReceiverThrowsAsSoonAsTheLimitIsPassed() throws {
        let receiver = ResponseBodyReceiver(.collectOrFail(limit: 5))
        receiver.begin(status: 500)
        try Array("01234".utf8).withUnsafeBytes { try receiver.receive($0) }
        #expect(throws: UploadError.self) { try Array("5".utf8).withUnsafeBytes { try receiver.receive($0) } }
    }

    /// A request with no body (a listing's GET) refused for its answer says nothing of bytes
    /// sent; one with a body keeps the count.
    @Test func aRequestWithNoBodyDoesNotCountBytesSent() {
        let listing = UploadError(.responseTooLarge, "the answer is too long", status: 200, bytesSent: 0, totalBytes: 0)
        #expect(listing.description == "the answer is too long")
        let part = UploadError(.responseTooLarge, "the answer is too long", status: 200, bytesSent: 0, totalBytes: 5)
        #expect(part.description == "the answer is too long (0 of 5 bytes sent)")
    }
}
