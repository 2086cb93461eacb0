#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests

/// A wait for a descriptor's next bytes that another thread ends at once: the wait polls the
/// descriptor and a pipe that `interrupt()` writes to, as the engine's producer does, and
/// gives up when the descriptor stays silent for the stall timeout. No slices: a cancel (Ctrl-C)
/// ends the wait at once.
///
/// - Important: `interrupt()` may be called from any thread, any number of times, before or
///   during a wait, and after `close()`. `waitReadable` and `close()` belong to the one thread
///   that reads; `close()` is called once, when that thread is done.
package final class ReadInterrupt: Sendable {
    /// The wait was interrupted.
    package struct Interrupted: Error, CustomStringConvertible {
        package var description: String { "interrupted while waiting for the stream" }
    }

    private struct State {
        /// The pipe: poll its read end, write to its write end; nil once closed.
        package var pipe: (read: Int32, write: Int32)?
        package var interrupted = false
    }

    private let state: Lock<State>

    /// - Throws: `ByteSourceError.system` when no pipe can be made (descriptors exhausted).
    package init() throws(ByteSourceError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { throw ByteSourceError.system(operation: "pipe", path: "a wake-up pipe", errno: errno) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        state = Lock(State(pipe: (fds[0], fds[1])))
    }

    /// Ends the current wait and every later one.
    package func interrupt() {
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
    /// - Parameter stallTimeout: How long the descriptor may stay silent; nil waits for ever.
    /// - Throws: `Interrupted` when `interrupt()` was called, before or during the wait;
    ///   `BoundStreamPair.ProducerStalled` when nothing came for `stallTimeout`.
    package func waitReadable(_ fd: Int32, stallTimeout: Duration? = nil) throws {
        guard let wake = state.withLock({ $0.interrupted ? nil : $0.pipe?.read }) else { throw Interrupted() }
        var entries = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        let deadline = stallTimeout.map { ContinuousClock.now + $0 }
        while true {
            var wait: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                if left <= .zero { throw BoundStreamPair.ProducerStalled(timeout: stallTimeout!) }
                wait = Int32(left.wholeUnits(of: .milliseconds(1), atMost: .seconds(3600)))
            }
            let ready = poll(&entries, 2, wait)
            if ready < 0, errno == EINTR { continue }
            if ready == 0 { continue }  // the deadline is checked above
            if entries[1].revents != 0 { throw Interrupted() }
            // Readable, at its end, failed, or poll itself failed: the read now returns at once.
            return
        }
    }

    /// Closes the pipe.
    package func close() {
        state.withLock { state in
            guard let pipe = state.pipe else { return }
            _ = systemClose(pipe.read)
            _ = systemClose(pipe.write)
            state.pipe = nil
        }
    }
}
