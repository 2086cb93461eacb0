import Foundation
import Synchronization
import Testing
@testable import Sluice
import SluiceTestSupport

/// A cancel (SIGINT, SIGTERM) ends the wait for a listing page that does not come at once
/// (issue 37.8): before, the page's own task was not cancelled, and the wait lasted until the
/// request's retries ran out. The suite's time limit is the hang's guard.
@Suite(.timeLimit(.minutes(1)))
struct S3ListingCancelTests {
    /// Never answers; ends a request when its task is cancelled, as the transports do, and
    /// says so.
    final class Silent: UploadTransport {
        let asked: AsyncStream<Void>.Continuation
        let cancelled: AsyncStream<Void>.Continuation

        init(asked: AsyncStream<Void>.Continuation, cancelled: AsyncStream<Void>.Continuation) {
            (self.asked, self.cancelled) = (asked, cancelled)
        }

        func send(
            _ request: UploadRequest, body: UploadBody, options: UploadOptions,
            progress: @escaping @Sendable (Int64) -> Void
        ) async throws -> UploadResponse {
            asked.yield()
            let (stream, forever) = AsyncStream<Void>.makeStream()
            await withTaskCancellationHandler {
                for await _ in stream {}
            } onCancel: {
                forever.finish()
            }
            cancelled.yield()
            throw UploadError(.cancelled, "cancelled")
        }
    }

    @Test func aCancelEndsTheWaitForAPageThatDoesNotCome() async throws {
        let (asked, askedContinuation) = AsyncStream<Void>.makeStream()
        let (cancelled, cancelledContinuation) = AsyncStream<Void>.makeStream()
        var options = S3Options()
        options.retries = 3
        let client = S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"), endpoint: URL(string: "http://127.0.0.1:9")!),
            options: options, transport: Silent(asked: askedContinuation, cancelled: cancelledContinuation))
        let listing = Task {
            var objects = client.listObjects(bucket: "bucket", prefix: "")
            return try await objects.next()
        }
        // The gate: the page was asked for.
        var askedIterator = asked.makeAsyncIterator()
        _ = await askedIterator.next()
        listing.cancel()
        var cancelledIterator = cancelled.makeAsyncIterator()
        _ = await cancelledIterator.next()
        let result = await listing.result
        #expect(throws: S3Error.self) { try result.get() }
        #expect((try? result.get()) == nil)
        if case .failure(let error as S3Error) = result { #expect(error.code == .cancelled, "\(error)") }
    }
}
