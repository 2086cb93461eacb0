#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Sluice's one lock: a value guarded by a mutex, with a condition variable to wait for it
/// to change.
///
/// `Synchronization.Mutex` cannot wait; the bound stream's reader must, so this box pairs a
/// pthread mutex with a condition variable. It is also the plain lock everywhere else:
/// ThreadSanitizer on Linux (Swift 6.3.1) does not see `Mutex`'s futex and reports every
/// access under it as a race, while it understands pthread mutexes.
///
/// It is `Sendable` when its value is (as swift-nio's `NIOLockedValueBox`): a lock cannot
/// make a non-`Sendable` value safe to share, because `withLock` could hand it out.
///
/// - Important: `wait(_:)` sleeps until a `broadcast()` (or `withLockBroadcasting`, or `withLockSignalling` for one waiter) makes its
///   condition true; `wait(timeout:_:)` also gives up at its deadline. Every state change a
///   waiter may be waiting for must broadcast.
@_spi(Floors) public final class Lock<State> {
    // Inlinable (its fields usable from inlined code): each module's calls are specialized
    // for their state, not made through the generic entry point with its witness calls.
    @usableFromInline var state: State
    @usableFromInline let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    @usableFromInline let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    /// A lock guarding `state`.
    public init(_ state: State) {
        self.state = state
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        #if os(Linux)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        condition.deallocate()
    }

    /// Runs `body` with the lock held.
    @inlinable
    public func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }

    /// Waits until `body` returns a value, re-running it each time the state changes.
    ///
    /// `body` runs with the lock held and returns `nil` to keep waiting.
    @inlinable
    public func wait<R>(_ body: (inout State) throws -> R?) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let result = try body(&state) { return result }
            pthread_cond_wait(condition, mutex)
        }
    }

    /// Like `wait(_:)`, but gives up after `seconds`: returns nil if `body` still returned nil.
    public func wait<R>(timeout seconds: Double, _ body: (inout State) throws -> R?) rethrows -> R? {
        var deadline = timespec()
        #if os(Linux)
        clock_gettime(CLOCK_MONOTONIC, &deadline)
        #else
        clock_gettime(CLOCK_REALTIME, &deadline)
        #endif
        let whole = min(seconds.rounded(.down), Double(Int32.max))
        deadline.tv_sec += Int(whole)
        deadline.tv_nsec += Int((min(seconds, Double(Int32.max)) - whole) * 1e9)
        if deadline.tv_nsec >= 1_000_000_000 {
            deadline.tv_sec += 1
            deadline.tv_nsec -= 1_000_000_000
        }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while true {
            if let result = try body(&state) { return result }
            if pthread_cond_timedwait(condition, mutex, &deadline) == ETIMEDOUT { return try body(&state) }
        }
    }

    /// Wakes every waiter so it re-checks the state.
    public func broadcast() {
        pthread_mutex_lock(mutex)
        pthread_cond_broadcast(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` with the lock held, then wakes every waiter.
    @inlinable
    public func withLockBroadcasting<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try withLock(waking: false, body)
    }

    /// Runs `body` with the lock held, then wakes one waiter: for waiters that all wait for the
    /// same thing, when the change serves one of them (an item queued for a pool's threads).
    /// Waking them all made each wait for the lock in turn only to find the item taken.
    /// The signal comes after the unlock, so the woken thread does not block at once on the
    /// mutex its waker still holds.
    @inlinable
    public func withLockSignalling<R>(_ body: (inout State) throws -> R) rethrows -> R {
        try withLock(waking: true, body)
    }

    @inlinable
    func withLock<R>(waking one: Bool, _ body: (inout State) throws -> R) rethrows -> R {
        pthread_mutex_lock(mutex)
        defer {
            if one {
                pthread_mutex_unlock(mutex)
                pthread_cond_signal(condition)
            } else {
                pthread_cond_broadcast(condition)
                pthread_mutex_unlock(mutex)
            }
        }
        return try body(&state)
    }
}

// @unchecked: `state` is only touched with `mutex` held.
extension Lock: @unchecked Sendable where State: Sendable {}
