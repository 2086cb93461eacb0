import Dispatch
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests

/// A sequential source whose reads fail with `BoundStreamPair.ProducerStalled` when the source
/// produces nothing for `timeout`: a FIFO without a writer, a silent stdin. Used where a
/// stream is read outside a transfer (S3's part buffers), which libcurl's stall clock does
/// not see.
///
/// Each read arms a timer; when it fires with the read still waiting, `interrupt` is called
/// (it must make the waiting read return, as `FileStreamSource.close()` does) and the read's
/// error is replaced by the stall.
///
/// - Important: One read at a time (a sequential source's contract). The timer is cancelled
///   when the read returns; nothing is left running.
package final class StallGuardedStream: SequentialByteSource {
    private let base: any SequentialByteSource
    private let timeout: Duration
    private let interrupt: @Sendable () -> Void
    /// The read in flight (a count of reads started), and whether the timer ended it.
    private let state = Lock(Watch())

    private struct Watch {
        package var read = 0
        package var waiting = false
        package var stalled = false
    }

    /// Arms a one-shot timer: runs `fire` after `delay` unless the returned cancel runs first.
    package typealias Timer = @Sendable (_ delay: Duration, _ fire: @escaping @Sendable () -> Void) -> @Sendable () -> Void
    private let timer: Timer

    /// A dispatch timer on the global queue (tests pass one they fire themselves).
    package static let dispatchTimer: Timer = { delay, fire in
        let cancelled = Lock(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.inSeconds) {
            if !cancelled.withLock({ $0 }) { fire() }
        }
        return { cancelled.withLock { $0 = true } }
    }

    package init(
        _ base: any SequentialByteSource, timeout: Duration, interrupt: @escaping @Sendable () -> Void,
        timer: @escaping Timer = StallGuardedStream.dispatchTimer
    ) {
        self.base = base
        self.timeout = timeout
        self.interrupt = interrupt
        self.timer = timer
    }

    package var length: BodyLength { base.length }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let read = state.withLock { (state: inout Watch) -> Int in
            state.read += 1
            state.waiting = true
            return state.read
        }
        let cancel = timer(timeout) { [state, interrupt] in
            let stalled = state.withLock { (state: inout Watch) -> Bool in
                guard state.read == read, state.waiting else { return false }
                state.stalled = true
                return true
            }
            if stalled { interrupt() }
        }
        defer { cancel() }
        let result = Result { try base.read(into: buffer) }
        let stalled = state.withLock { (state: inout Watch) -> Bool in
            state.waiting = false
            return state.stalled
        }
        if stalled { throw BoundStreamPair.ProducerStalled(timeout: timeout) }
        return try result.get()
    }
}
