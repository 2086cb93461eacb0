import Dispatch
import Foundation
import Synchronization
@_spi(Floors) import SluicePrimitives
import SluiceRequests

/// Linux's missing `Stream.getBoundStreams(withBufferSize:inputStream:outputStream:)`:
/// an `InputStream` and an `OutputStream` joined by one fixed-capacity ring.
///
/// Bytes written to `outputStream` are read from `inputStream` in order. Memory is
/// bounded by `capacity` bytes, allocated once.
///
/// The output side never blocks: `write` copies what fits and returns the count. Its delegate
/// hears `hasSpaceAvailable` after `open`, and after any write, full or partial, once half
/// the ring is free (Apple's contract: a writer that writes once per event, whatever the
/// size, is always called again); an event whose handler did not write is not repeated.
/// It hears `endEncountered` when the reader closed first, and `errorOccurred` when the pair
/// failed. Events go to the run loop the stream is scheduled in (which, as with Apple's
/// streams, keeps running while the stream is scheduled there and open: `RunLoop.run()` waits
/// for its events), or to the dispatch queue given to `deliverOutputEvents(on:)`. The state
/// behind it is one enum (`StateMachine`).
///
/// The input side is built for `URLRequest.httpBodyStream` on Linux: `hasBytesAvailable` is
/// `false` and `read` returns 0 only after the writer closed and every byte was read; until
/// then `read` waits. It returns -1 with the real `streamError` after `fail(_:)` or
/// `cancel()`, and wakes at once when either happens; `hasBytesAvailable` stays `true` then,
/// so FoundationNetworking (which reads only while it is `true`, and ends the body when it is
/// `false`) reads the -1 and aborts the request instead of ending a short body cleanly.
///
/// - Important: `cancel()` and `fail(_:)` may be called from any thread, any number of
///   times; the first failure wins. `close()` of either stream is idempotent.
public final class BoundStreamPair: @unchecked Sendable {
    // @unchecked: the streams are Foundation classes marked non-Sendable; ours keep all
    // their state behind locks, so any thread may call them.
    /// The end the request reads; hand it to `URLRequest.httpBodyStream` unopened.
    public let inputStream: InputStream
    /// The end the producer writes.
    public let outputStream: OutputStream
    /// The ring's size in bytes: the most the writer can be ahead of the reader.
    public let capacity: Int

    /// Internal for tests, which look at the state without waiting.
    package let core: Core
    /// The delegate `InputStreamSource` pumps through, kept here: the stream holds it weakly.
    package let pumpDelegate = Lock<ClosureStreamDelegate?>(nil)

    /// A pair over a ring of `capacity` bytes.
    ///
    /// - Parameters:
    ///   - capacity: The ring's size in bytes, at least 1.
    ///   - readerStallTimeout: When set, a reader that waited this long for a byte
    ///     fails the pair with `ProducerStalled` instead of waiting on: its thread (URLSession's
    ///     shared queue on Linux) is never held longer by a producer that stopped.
    public init(capacity: Int, readerStallTimeout: Duration? = nil) {
        precondition(capacity > 0, "capacity must be positive")
        let core = Core(capacity: capacity, readerStallTimeout: readerStallTimeout.map { max(.milliseconds(1), $0) })
        self.core = core
        self.capacity = capacity
        let output = BoundOutputStream(core: core)
        self.outputStream = output
        self.inputStream = BoundInputStream(core: core)
        core.output = output
    }

    /// Fails both ends with `error`: the reader's next `read` returns -1 and its
    /// `streamError` is `error`; the writer's delegate hears `errorOccurred`.
    public func fail(_ error: any Error) {
        core.fail(error)
    }

    /// Cancels the pair: `fail(_:)` with `CancellationError()`.
    public func cancel() {
        core.fail(CancellationError())
    }

    /// Delivers the output stream's events on `queue`, in addition to any run loop it is
    /// scheduled in. Pass nil to stop.
    public func deliverOutputEvents(on queue: DispatchQueue?) {
        (outputStream as? BoundOutputStream)?.deliverEvents(on: queue)
    }

    /// Hands each output event to `enqueue` instead of a queue or run loop, for tests that
    /// deliver events themselves in an order they choose.
    package func deliverOutputEvents(using enqueue: (@Sendable (@escaping @Sendable () -> Void) -> Void)?) {
        (outputStream as? BoundOutputStream)?.deliverEvents(using: enqueue)
    }

    /// Writes into the ring's free space straight from `body`, which gets the first free
    /// region (at most `limit` bytes, possibly empty when the ring is full) and returns how
    /// many bytes it put there: a `write` without a staging buffer, with the same events.
    ///
    /// - Returns: The bytes committed, or -1 when the writer may not write (as `write`).
    package func fill(limit: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> Int {
        (outputStream as? BoundOutputStream)?.fill(limit: limit, body) ?? -1
    }

    /// The number of bytes the reader has taken out so far.
    public var bytesRead: Int64 { core.lock.withLock { $0.totalRead } }

    /// The error the pair failed with, if any.
    public var failure: (any Error)? { core.lock.withLock { $0.failure } }
}

extension BoundStreamPair {
    /// The reader waited `timeout` and the writer produced nothing (see `readerStallTimeout`).
    public struct ProducerStalled: Error, Sendable, CustomStringConvertible {
        /// How long the reader waited with nothing written.
        public var timeout: Duration
        /// Creates the error for a reader that waited `timeout` for the writer.
        public init(timeout: Duration) { self.timeout = timeout }
        public var description: String { "the body source produced nothing for \(String(format: "%g", timeout.inSeconds)) s" }
    }

    /// Shared by both streams: the state behind a condition lock, and event delivery.
    package final class Core: @unchecked Sendable {
        // @unchecked: `output` is set once in BoundStreamPair.init before the pair is shared;
        // `lock` guards all mutable state; `storage` is freed in deinit only.
        package let lock: Lock<StateMachine>
        package let readerStallTimeout: Duration?
        /// How many times a reader went to wait (found no byte, no end, no failure): a probe
        /// for tests that must know a reader is blocked before they wake it.
        package let readerWaits = Atomic<Int>(0)
        private let storage: UnsafeMutableRawBufferPointer
        package weak var output: BoundOutputStream?

        package init(capacity: Int, readerStallTimeout: Duration?) {
            self.readerStallTimeout = readerStallTimeout
            storage = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
            lock = Lock(StateMachine(ring: ByteRing(storage: storage)))
        }

        deinit { storage.deallocate() }

        package func fail(_ error: any Error) {
            let event = lock.withLockBroadcasting { $0.fail(error) }
            output?.deliver(event)
        }
    }
}
