import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// A stream's part that fails for good while the producer waits for the next one (stdin not
/// yet full) ends the run at once: the producer runs beside the parts in the scheduler's group
/// and is cancelled with them (before: the scheduler awaited it inline, so the failure was
/// noticed only once the next part was full or the stall timeout fired; with the fix reverted
/// this test runs into its time limit).
@Suite(.hangGuard)
struct PartSchedulerProducerTests {
    /// Refuses every request for good, once the test lets it (`release`).
    struct Refusing: UploadTransport {
        let release: AsyncStream<Void>
        let sent: AsyncStream<Void>.Continuation
        func send(
            _ request: UploadRequest, body: UploadBody, options: UploadOptions, progress: @escaping @Sendable (Int64) -> Void
        ) async throws -> UploadResponse {
            sent.yield()
            for await _ in release { break }
            throw UploadError.invalidHeader("refused for good")
        }
    }

    @Test func aPartThatFailsForGoodCancelsAProducerThatWaits() async throws {
        let release = AsyncStream<Void>.makeStream()
        let sent = AsyncStream<Void>.makeStream()
        let calls = Lock(0)
        let waiting = AsyncStream<Void>.makeStream()
        let cancelled = Lock(false)
        var upload = ParallelUpload(parts: []) { part in
            PartRequest(request: try UploadRequest(url: "http://127.0.0.1:9/\(part.number)", method: "PUT"), body: .bytes(MemoryByteSource([1])))
        }
        upload.concurrency = 2
        let producer: @Sendable () async throws -> UploadPart? = {
            let call = calls.withLock { calls in
                calls += 1
                return calls
            }
            guard call > 1 else { return UploadPart(number: 1, offset: 0, length: 1) }
            // The next part's bytes never come (stdin silent): only a cancel ends this wait.
            let never = AsyncStream<Void>.makeStream()
            await withTaskCancellationHandler {
                waiting.continuation.yield()
                for await _ in never.stream {}
            } onCancel: {
                cancelled.withLock { $0 = true }
                never.continuation.finish()
            }
            throw CancellationError()
        }
        let scheduler = PartScheduler(upload, over: Refusing(release: release.stream, sent: sent.continuation))
        let run = Task { try await scheduler.run(.producer(producer), progress: nil) }
        var sentWaiter = sent.stream.makeAsyncIterator()
        _ = await sentWaiter.next()  // part 1 is in flight
        var waiter = waiting.stream.makeAsyncIterator()
        _ = await waiter.next()  // the producer waits for part 2's bytes
        release.continuation.yield()  // part 1 fails for good
        // The test's time limit cancels the run too (a regression ends there, not in a hang).
        let result = await withTaskCancellationHandler {
            await run.result
        } onCancel: {
            run.cancel()
        }
        guard case .failure(let error as UploadError) = result else {
            Issue.record("the run ended as \(result), not with part 1's failure")
            return
        }
        #expect(error.message.contains("part 1"), "\(error)")
        #expect((error.underlying as? PartFailure)?.part.number == 1)
        #expect(cancelled.withLock { $0 })
        #expect(calls.withLock { $0 } == 2)
    }
}
