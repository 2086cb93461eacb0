import Foundation
import Testing

@testable import SluicePrimitives
import SluiceTestSupport

/// `ProgressSequence`, the one implementation of every client's `…WithProgress`: the reports
/// in order, and the sequence finished exactly when the work ends, whether it returned, threw
/// or was cancelled.
@Suite(.hangGuard)
struct ProgressSequenceTests {
    struct Failed: Error {}

    @Test func theReportsThenTheEndWhenTheWorkReturns() async throws {
        let (progress, task) = ProgressSequence.run { report in
            for count in 1...5 { report(count) }
            return "done"
        }
        var seen: [Int] = []
        for await count in progress { seen.append(count) }
        #expect(seen == [1, 2, 3, 4, 5])
        #expect(try await task.value == "done")
    }

    @Test func theSequenceEndsWhenTheWorkThrows() async {
        let (progress, task) = ProgressSequence.run { (report: @Sendable (Int) -> Void) async throws -> Int in
            report(1)
            throw Failed()
        }
        var seen: [Int] = []
        for await count in progress { seen.append(count) }
        #expect(seen == [1])
        await #expect(throws: Failed.self) { try await task.value }
    }

    /// Cancelled while it waits (on a gate that only cancellation opens): the work ends with
    /// `CancellationError` and the sequence finishes after the report made before.
    @Test func aCancelEndsTheWorkAndTheSequence() async {
        let started = AsyncStream<Void>.makeStream()
        let (progress, task) = ProgressSequence.run { (report: @Sendable (Int) -> Void) async throws -> Int in
            report(1)
            started.continuation.yield()
            let never = AsyncStream<Void>.makeStream()
            for await _ in never.stream {}  // ends only when the task is cancelled
            try Task.checkCancellation()
            return 0
        }
        var iterator = started.stream.makeAsyncIterator()
        _ = await iterator.next()
        task.cancel()
        var seen: [Int] = []
        for await count in progress { seen.append(count) }
        #expect(seen == [1])
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
