import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `RequestBudget`: never more permits out than its limit, waiters served in order, a
/// cancelled waiter leaves at once and takes no permit.
struct RequestBudgetTests {
    @Test func neverMoreThanTheLimit() async throws {
        let budget = RequestBudget(limit: 3)
        let inside = Lock(0)
        let most = Lock(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<40 {
                group.addTask {
                    try await budget.withPermit {
                        let now = inside.withLock {
                            $0 += 1; return $0
                        }
                        most.withLock { $0 = max($0, now) }
                        try await Task.sleep(for: .milliseconds(2))
                        inside.withLock { $0 -= 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(most.withLock { $0 } <= 3)
        #expect(budget.mostInFlight <= 3 && budget.mostInFlight >= 1)
    }

    @Test func waitersAreServedInOrderAndACancelledOneLeaves() async throws {
        let budget = RequestBudget(limit: 1)
        try await budget.acquire()
        let order = Lock<[Int]>([])
        let queued = AsyncStream<Int>.makeStream()
        var tasks: [Task<Void, any Error>] = []
        var iterator = queued.stream.makeAsyncIterator()
        for index in 0..<4 {
            tasks.append(
                Task {
                    queued.continuation.yield(index)
                    try await budget.acquire()
                    order.withLock { $0.append(index) }
                    budget.release()
                })
            // Each waiter is in line before the next one starts.
            _ = await iterator.next()
            while budget.waiting < index + 1 { await Task.yield() }
        }
        tasks[1].cancel()
        await #expect(throws: CancellationError.self) { try await tasks[1].value }
        budget.release()
        for (index, task) in tasks.enumerated() where index != 1 { try await task.value }
        #expect(order.withLock { $0 } == [0, 2, 3])
        #expect(budget.waiting == 0)
    }
}
