import Foundation
import Testing

@testable import Sluice
@testable import SluicePrimitives
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// The blocking-call pool: bodies run on its own threads, never more than its count, queued
/// items a cancel takes back fail with `CancellationError` without running, shutdown ends it.
/// Gates, not clocks: a body holds its thread until the test opens it.
@Suite(.hangGuard)
struct BlockingPoolTests {
    /// A gate threads wait at (bounded by `patience`), and a count of the threads inside.
    final class ThreadGate: Sendable {
        private let state = Lock<(open: Bool, inside: Int)>((false, 0))

        /// Counts the caller in and waits until the gate opens; false if it never did.
        func pass() -> Bool {
            state.withLockBroadcasting { $0.inside += 1 }
            return state.wait(timeout: patienceSeconds) { $0.open ? true : nil } ?? false
        }

        /// Waits until `count` threads are inside; false if they never were.
        func awaitInside(_ count: Int) async -> Bool {
            await onThread { self.state.wait(timeout: patienceSeconds) { $0.inside >= count ? true : nil } ?? false }
        }

        func open() { state.withLockBroadcasting { $0.open = true } }
    }

    @Test func aBodyRunsOnAThreadOfThePoolAndItsResultAndErrorComeBack() async throws {
        let pool = BlockingPool(threadCount: 2)
        defer { pool.shutdown() }
        #expect(try await pool.run { pool.ownsCurrentThread })
        #expect(!pool.ownsCurrentThread)
        struct Failed: Error {}
        await #expect(throws: Failed.self) { try await pool.run { throw Failed() } }
        #expect(try await pool.run { 6 * 7 } == 42)
    }

    @Test func neverMoreThreadsThanItsCountTheRestWaitQueued() async throws {
        let pool = BlockingPool(threadCount: 2)
        defer { pool.shutdown() }
        let gate = ThreadGate()
        let tasks = (0..<5).map { index in Task { try await pool.run { gate.pass() ? index : -1 } } }
        #expect(await gate.awaitInside(2))
        // Two threads hold two items; the three others wait in the queue, no thread more.
        let queued = await onThread { pollUntil { pool.queued == 3 } }
        #expect(queued)
        #expect(pool.threads == 2)
        gate.open()
        var results: [Int] = []
        for task in tasks { results.append(try await task.value) }
        #expect(results == [0, 1, 2, 3, 4])
        #expect(pool.threads == 2)
    }

    @Test func aQueuedItemWhoseTaskIsCancelledFailsWithoutRunning() async throws {
        let pool = BlockingPool(threadCount: 1)
        defer { pool.shutdown() }
        let gate = ThreadGate()
        let ran = Lock(false)
        let holder = Task { try await pool.run { gate.pass() } }
        #expect(await gate.awaitInside(1))
        let waiting = Task { try await pool.run { ran.withLock { $0 = true } } }
        #expect(await onThread { pollUntil { pool.queued == 1 } })
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(pool.queued == 0)
        gate.open()
        #expect(try await holder.value)
        // The thread is free again, and the cancelled body never ran.
        #expect(try await pool.run { 1 } == 1)
        #expect(!ran.withLock { $0 })
    }

    @Test func aStartedItemRunsToItsEndWhenItsTaskIsCancelled() async throws {
        let pool = BlockingPool(threadCount: 1)
        defer { pool.shutdown() }
        let gate = ThreadGate()
        let task = Task { try await pool.run { gate.pass() } }
        #expect(await gate.awaitInside(1))
        task.cancel()
        gate.open()
        #expect(try await task.value)
    }

    @Test func aTaskCancelledBeforeItAsksRunsNothing() async throws {
        let pool = BlockingPool(threadCount: 1)
        defer { pool.shutdown() }
        let ran = Lock(false)
        let task = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return try await pool.run { ran.withLock { $0 = true } }
        }
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(!ran.withLock { $0 })
        #expect(pool.threads == 0)
    }

    @Test func afterShutdownQueuedItemsStillRunAndNewOnesFail() async throws {
        let pool = BlockingPool(threadCount: 1)
        let gate = ThreadGate()
        let first = Task { try await pool.run { gate.pass() } }
        #expect(await gate.awaitInside(1))
        let second = Task { try await pool.run { 2 } }
        #expect(await onThread { pollUntil { pool.queued == 1 } })
        pool.shutdown()
        await #expect(throws: BlockingPool.ShutDown.self) { try await pool.run { 3 } }
        gate.open()
        #expect(try await first.value)
        #expect(try await second.value == 2)
        // The thread ends once the queue is empty.
        #expect(await onThread { pollUntil { pool.threads == 0 } })
        pool.shutdown()
    }

    // MARK: The state machine, transition by transition.

    func item(_ id: UInt64) -> BlockingPool.Item { BlockingPool.Item(id: id, run: {}, fail: { _ in }) }

    @Test func submitStartsAThreadOnlyWhenNoneIsIdleAndThereIsRoom() {
        var state = BlockingPool.State(threadLimit: 2)
        #expect(state.submit(item(1), cancelled: false) == .queuedStartThread)
        #expect((state.threads, state.idle, state.queued) == (1, 1, 1))
        // The new thread has not taken the first item: the second needs a thread of its own.
        #expect(state.submit(item(2), cancelled: false) == .queuedStartThread)
        #expect((state.threads, state.idle, state.queued) == (2, 2, 2))
        // At the limit: queued only.
        #expect(state.submit(item(3), cancelled: false) == .queued)
        #expect((state.threads, state.idle, state.queued) == (2, 2, 3))
        guard case .run(let first) = state.next(), case .run(let second) = state.next() else {
            Issue.record("the threads took nothing")
            return
        }
        #expect((first.id, second.id) == (1, 2))
        #expect((state.idle, state.queued) == (0, 1))
        // A thread ends its item and takes the next; then finds nothing and waits.
        state.ended()
        guard case .run(let third) = state.next() else {
            Issue.record("the third item was not taken")
            return
        }
        #expect(third.id == 3)
        state.ended()
        guard case .wait = state.next() else {
            Issue.record("an idle thread did not wait")
            return
        }
        #expect((state.threads, state.idle) == (2, 1))
        // An idle thread takes the next item: no thread started.
        #expect(state.submit(item(4), cancelled: false) == .queued)
    }

    @Test func cancelTakesBackOnlyAQueuedItem() {
        var state = BlockingPool.State(threadLimit: 1)
        #expect(state.submit(item(1), cancelled: false) == .queuedStartThread)
        #expect(state.submit(item(2), cancelled: false) == .queued)
        #expect(state.cancel(2)?.id == 2)
        #expect(state.queued == 1)
        // Taken by a thread, or never queued: nothing to take back.
        guard case .run = state.next() else {
            Issue.record("the thread took nothing")
            return
        }
        #expect(state.cancel(1) == nil)
        #expect(state.cancel(9) == nil)
        // A task cancelled before it submits queues nothing.
        #expect(state.submit(item(3), cancelled: true) == .cancelled)
        #expect(state.queued == 0)
    }

    @Test func shutdownRefusesNewItemsAndEndsThreadsOnceTheQueueIsEmpty() {
        var state = BlockingPool.State(threadLimit: 1)
        #expect(state.submit(item(1), cancelled: false) == .queuedStartThread)
        state.shutDown()
        #expect(state.submit(item(2), cancelled: false) == .shutDown)
        // The item queued before still runs.
        guard case .run(let first) = state.next() else {
            Issue.record("the queued item was dropped")
            return
        }
        #expect(first.id == 1)
        state.ended()
        guard case .exit = state.next() else {
            Issue.record("the thread did not end")
            return
        }
        #expect((state.threads, state.idle) == (0, 0))
    }

    @Test func aLongQueueIsCompactedAsItGoes() {
        var state = BlockingPool.State(threadLimit: 1)
        for id in 1...200 { _ = state.submit(item(UInt64(id)), cancelled: false) }
        for id in 1...200 {
            guard case .run(let taken) = state.next() else {
                Issue.record("item \(id) was not taken")
                return
            }
            #expect(taken.id == UInt64(id))
            state.ended()
        }
        #expect(state.queued == 0)
        #expect(state.queue.count < 64)
    }
}

/// Checks `condition` until it holds, up to `patience`, yielding the thread between checks
/// (a wait for a state of another thread with no event to wait on, never a window).
func pollUntil(_ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.afterPatience
    while !condition() {
        guard DispatchTime.now() < deadline else { return false }
        sched_yield()
        usleep(200)
    }
    return true
}
