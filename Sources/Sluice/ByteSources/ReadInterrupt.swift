#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A wait for a descriptor's next bytes that another thread ends at once: the wait polls the
/// descriptor and a pipe that `interrupt()` writes to, as the engine's producer does. No slices,
/// no timer: a stdin that stays silent costs nothing, and Ctrl-C ends the wait at once.
///
/// - Important: `interrupt()` may be called from any thread, any number of times, before or
///   during a wait, and after `close()`. `waitReadable` and `close()` belong to the one thread
///   that reads; `close()` is called once, when that thread is done.
final class ReadInterrupt: Sendable {
    /// The wait was interrupted.
    struct Interrupted: Error, CustomStringConvertible {
        var description: String { "interrupted while waiting for the stream" }
    }

    private struct State {
        /// The pipe: poll its read end, write to its write end; nil once closed.
        var pipe: (read: Int32, write: Int32)?
        var interrupted = false
    }

    private let state: Lock<State>

    /// - Throws: `ByteSourceError.system` when no pipe can be made (descriptors exhausted).
    init() throws(ByteSourceError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw ByteSourceError.system(operation: "pipe", path: "a wake-up pipe", errno: errno) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        state = Lock(State(pipe: (fds[0], fds[1])))
    }

    /// Ends the current wait and every later one.
    func interrupt() {
        state.withLock { state in
            guard !state.interrupted else { return }
            state.interrupted = true
            guard let pipe = state.pipe else { return }
            var byte: UInt8 = 1
            _ = write(pipe.write, &byte, 1)
        }
    }

    /// Returns when `fd` has bytes, is at its end or failed (the next `read` says which).
    ///
    /// - Parameter timeout: The longest wait; nil waits until one of those happens.
    /// - Returns: false when `timeout` passed with none of them (the source is silent).
    /// - Throws: `Interrupted` when `interrupt()` was called, before or during the wait.
    @discardableResult
    func waitReadable(_ fd: Int32, timeout: Duration? = nil) throws(Interrupted) -> Bool {
        guard let wake = state.withLock({ $0.interrupted ? nil : $0.pipe?.read }) else { throw Interrupted() }
        var entries = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            let left = deadline.map { max(0, ($0 - ContinuousClock.now).wholeUnits(of: .milliseconds(1), atMost: .seconds(3600))) } ?? -1
            let ready = poll(&entries, 2, Int32(left))
            if ready < 0, errno == EINTR { continue }
            if entries[1].revents != 0 { throw Interrupted() }
            if ready == 0 {
                // Nothing yet: silent for the whole timeout, or woken early (re-check the clock).
                if let deadline, ContinuousClock.now >= deadline { return false }
                continue
            }
            // Readable, at its end, failed, or poll itself failed: the read now returns at once.
            return true
        }
    }

    /// Closes the pipe.
    func close() {
        state.withLock { state in
            guard let pipe = state.pipe else { return }
            _ = systemClose(pipe.read)
            _ = systemClose(pipe.write)
            state.pipe = nil
        }
    }
}
