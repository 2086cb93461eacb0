import Foundation

/// A small fixed pool of threads for blocking system calls (as swift-nio's `NIOThreadPool`):
/// `fsync` and the writes of records, `readdir` and `stat` of a directory walk, a small file's
/// read before it is hashed. Swift's cooperative pool has one thread per core, and two such
/// calls stall every task of the process; here they wait on threads of their own.
///
/// `run(_:)` queues a work item and suspends its task until a thread of the pool ran it. The
/// threads (`sluice-blocking-N`, at most `threadCount`) start as work comes and nothing is
/// waiting for it, and wait for more work once started, until `shutdown()`.
///
/// - Important: The queue is not bounded by a count: each item is awaited by the task that
///   queued it (suspended, holding no thread), so the queue holds at most one item per task
///   awaiting `run`, and those tasks are bounded by their callers' own limits (a job's
///   `--concurrency` files and its walk, one record per upload). An item is a closure and a
///   continuation. A cancelled task's item that has not started is taken off the queue and
///   fails with `CancellationError`; one that has started runs to its end (a blocking call
///   cannot be interrupted) and its result is returned.
package final class BlockingPool: Sendable {
    /// The pool Sluice's blocking calls go to: four threads (they wait on disks, not cores).
    package static let shared = BlockingPool(threadCount: 4)

    /// Submitted after `shutdown()`.
    package struct ShutDown: Error, Sendable, CustomStringConvertible {
        package var description: String { "the blocking-call pool was shut down" }
    }

    /// One queued call: `run` calls the body and resumes its task; `fail` resumes it with an
    /// error instead. Exactly one of them is called, by whoever took the item off the queue.
    package struct Item: Sendable {
        package var id: UInt64
        package var run: @Sendable () -> Void
        package var fail: @Sendable (any Error) -> Void
    }

    /// The pool's state machine: the queue, the threads started and idle, shut down. Every
    /// change is a `mutating` call that says what the caller does next; no lock, no thread.
    package struct State: Sendable {
        /// What `submit` asks of the caller.
        package enum Submitted: Equatable, Sendable {
            /// Queued; an idle thread takes it.
            case queued
            /// Queued; start a thread (the pool had none idle and room for one).
            case queuedStartThread
            /// Not queued: the task was cancelled.
            case cancelled
            /// Not queued: the pool is shut down.
            case shutDown
        }

        /// What a thread of the pool does next.
        package enum Next: Sendable {
            /// Run this item.
            case run(Item)
            /// Nothing queued: wait for a change.
            case wait
            /// The pool is shut down and its queue empty: the thread ends.
            case exit
        }

        package let threadLimit: Int
        package private(set) var queue: [Item] = []
        /// Where the queue starts in `queue` (taken items are dropped in batches).
        package private(set) var head = 0
        package private(set) var threads = 0
        package private(set) var idle = 0
        package private(set) var isShutDown = false
        package private(set) var nextID: UInt64 = 0

        package init(threadLimit: Int) { self.threadLimit = max(1, threadLimit) }

        /// Items queued and not taken.
        package var queued: Int { queue.count - head }

        /// An id for the next item.
        package mutating func makeID() -> UInt64 {
            nextID += 1
            return nextID
        }

        /// A task asks for `item` to run; `cancelled` is its task's cancellation, read under
        /// the same lock as `cancel` so that a cancel is never missed.
        package mutating func submit(_ item: Item, cancelled: Bool) -> Submitted {
            if isShutDown { return .shutDown }
            if cancelled { return .cancelled }
            queue.append(item)
            guard queued > idle, threads < threadLimit else { return .queued }
            threads += 1
            idle += 1
            return .queuedStartThread
        }

        /// The task of item `id` was cancelled: the item if it was still queued (the caller
        /// fails it), nil when a thread took it or it was never queued.
        package mutating func cancel(_ id: UInt64) -> Item? {
            guard let index = queue[head...].firstIndex(where: { $0.id == id }) else { return nil }
            return queue.remove(at: index)
        }

        /// A thread of the pool is free (it started, or ended an item or a wait).
        package mutating func next() -> Next {
            if head < queue.count {
                let item = queue[head]
                head += 1
                if head >= 64, head * 2 >= queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
                idle -= 1
                return .run(item)
            }
            guard !isShutDown else {
                idle -= 1
                threads -= 1
                return .exit
            }
            return .wait
        }

        /// A thread ended an item: it is idle again.
        package mutating func ended() { idle += 1 }

        /// No item is taken after this; threads end once the queue is empty.
        package mutating func shutDown() { isShutDown = true }
    }

    /// Threads at most.
    package let threadCount: Int
    private let state: Lock<State>

    /// A pool of at most `threadCount` threads, started as work comes.
    package init(threadCount: Int) {
        self.threadCount = max(1, threadCount)
        state = Lock(State(threadLimit: threadCount))
    }

    /// Runs `body` on a thread of the pool and returns what it returns.
    ///
    /// - Parameters:
    ///   - ignoringCancellation: Run `body` whether or not the task is cancelled (a record of
    ///     what was done, its close: skipping it would lose what the server already holds).
    ///   - body: The blocking call(s); it must not wait for the cooperative pool.
    /// - Returns: `body`'s result.
    /// - Throws: `body`'s error; `CancellationError` when the task was cancelled before a
    ///   thread took the item (unless `ignoringCancellation`); `ShutDown` after `shutdown()`.
    package func run<T: Sendable>(ignoringCancellation: Bool = false, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        let id = state.withLock { $0.makeID() }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let item = Item(
                    id: id, run: { continuation.resume(with: Result { try body() }) },
                    fail: { continuation.resume(throwing: $0) })
                // One item: one idle thread woken, not every one (each woken thread took the
                // lock in turn to find the queue empty: futex calls for nothing).
                let submitted = state.withLockSignalling { $0.submit(item, cancelled: !ignoringCancellation && Task.isCancelled) }
                switch submitted {
                case .queued: break
                case .queuedStartThread: startThread()
                case .cancelled: item.fail(CancellationError())
                case .shutDown: item.fail(ShutDown())
                }
            }
        } onCancel: {
            guard !ignoringCancellation else { return }
            state.withLock { $0.cancel(id) }?.fail(CancellationError())
        }
    }

    private static let poolKey = "sluice.BlockingPool"

    /// Whether the caller runs on a thread of this pool.
    package var ownsCurrentThread: Bool {
        Thread.current.threadDictionary[Self.poolKey] as? ObjectIdentifier == ObjectIdentifier(self)
    }

    /// Items queued and not started (for tests).
    package var queued: Int { state.withLock { $0.queued } }

    /// Threads started and not ended (for tests).
    package var threads: Int { state.withLock { $0.threads } }

    /// Ends the pool: items queued still run, a later `run` fails with `ShutDown`, and each
    /// thread ends once the queue is empty. Idempotent; does not wait for the threads.
    package func shutdown() {
        state.withLockBroadcasting { $0.shutDown() }
    }

    private func startThread() {
        let name = "sluice-blocking-\(state.withLock { $0.threads })"
        Thread { [self] in
            Thread.current.name = name
            Thread.current.threadDictionary[Self.poolKey] = ObjectIdentifier(self)
            work()
        }.start()
    }

    private func work() {
        while true {
            let next = state.wait { state -> State.Next? in
                let next = state.next()
                if case .wait = next { return nil }
                return next
            }
            switch next {
            case .run(let item):
                item.run()
                state.withLock { $0.ended() }
            case .wait, .exit:
                return
            }
        }
    }
}
