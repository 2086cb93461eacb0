@_spi(Floors) import SluicePrimitives

/// How many requests may be in flight at once across everything that shares it: the parts of
/// every upload of a job draw from one budget, so `--concurrency N` means N requests, however
/// many files are open.
///
/// A request holds a permit only while it is sent (its backoff before a retry holds none), and
/// waiters are served in the order they asked.
///
/// - Important: Thread-safe. A wait is cancelled with its task (`CancellationError`).
public final class RequestBudget: Sendable {
    /// The most requests in flight at once.
    public let limit: Int

    private struct Waiter {
        package var id: UInt64
        package var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        package var available: Int
        package var waiters: [Waiter] = []
        package var nextID: UInt64 = 0
        package var inFlight: Int = 0
        package var mostInFlight: Int = 0
    }

    private let state: Lock<State>

    /// A budget of `limit` requests (at least 1).
    public init(limit: Int) {
        self.limit = max(1, limit)
        state = Lock(State(available: max(1, limit)))
    }

    /// Tasks waiting for a permit now.
    public var waiting: Int { state.withLock { $0.waiters.count } }

    /// The most permits that were out at once (for tests and measurements).
    public var mostInFlight: Int { state.withLock { $0.mostInFlight } }

    /// Waits for a permit; pair it with one `release()`.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits.
    public func acquire() async throws {
        try Task.checkCancellation()
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let granted = state.withLock { state -> Bool in
                    if state.available > 0 && state.waiters.isEmpty {
                        state.available -= 1
                        state.inFlight += 1
                        state.mostInFlight = max(state.mostInFlight, state.inFlight)
                        return true
                    }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return false
                }
                if granted { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns a permit: the longest waiter gets it.
    public func release() {
        let next = state.withLock { state -> Waiter? in
            state.inFlight -= 1
            guard !state.waiters.isEmpty else {
                state.available += 1
                return nil
            }
            state.inFlight += 1
            state.mostInFlight = max(state.mostInFlight, state.inFlight)
            return state.waiters.removeFirst()
        }
        next?.continuation.resume()
    }

    /// Runs `body` holding a permit.
    public func withPermit<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await acquire()
        defer { release() }
        return try await body()
    }
}
