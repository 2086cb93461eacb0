import Dispatch
import Foundation
@_spi(Floors) import SluicePrimitives

/// The writing side `InputStreamSource` pumps into, and the input stream the request reads.
///
/// Two kinds: Sluice's `BoundStreamPair` (Linux, where Foundation has no bound pair: the
/// source is read straight into the ring), and `FoundationStreamChannel` (Foundation's own
/// `Stream.getBoundStreams` through its public API: Apple platforms, and tested on Linux).
///
/// - Important: Every call but `fail`, `cancel`, `failure` and `bytesRead` comes from the
///   pump's serial queue.
package protocol PumpChannel: AnyObject, Sendable {
    var inputStream: InputStream { get }
    /// Starts delivering the writer's events to `handler`, one at a time on `queue`, and opens it.
    func open(on queue: DispatchQueue, handler: @escaping @Sendable (Stream.Event) -> Void)
    /// Puts up to `limit` bytes that `body` writes into its region into the channel.
    ///
    /// - Returns: The bytes `body` produced and the channel took (0 when it has no room now:
    ///   the next space event continues), or -1 when the writer may not write.
    func fill(limit: Int, _ body: (UnsafeMutableRawBufferPointer) -> Int) -> Int
    /// Hands over bytes taken but not yet written. True when none are left; false to wait for
    /// the next space event; nil when the writer may not write.
    func flush() -> Bool?
    /// Ends the body after the last byte (the reader sees the end once it read everything).
    func finish()
    /// Fails the channel for good: the writer stops, and the reader gets an error (Sluice's
    /// pair) or is left for the request's owner to cancel (Foundation's): never the end of a
    /// short body. `queue` is the pump's.
    func abandon(with error: any Error, queue: DispatchQueue)
    /// Makes a reader still draining the channel stop, also after a successful finish.
    func cancelReader()
    var failure: (any Error)? { get }
    /// Bytes handed to the reader's side so far.
    var bytesRead: Int64 { get }
    /// The reader's stall timeout, when the channel has one (Sluice's pair only).
    var readerStallTimeout: Duration? { get }
}

extension BoundStreamPair: PumpChannel {
    package func open(on queue: DispatchQueue, handler: @escaping @Sendable (Stream.Event) -> Void) {
        let delegate = ClosureStreamDelegate(handler)
        pumpDelegate.withLock { $0 = delegate }  // the stream holds its delegate weakly
        deliverOutputEvents(on: queue)
        outputStream.delegate = delegate
        outputStream.open()
    }

    package func flush() -> Bool? { true }

    package func finish() { outputStream.close() }

    package func abandon(with error: any Error, queue: DispatchQueue) {
        fail(error)
        queue.async { self.outputStream.close() }
    }

    package func cancelReader() { cancel() }

    package var readerStallTimeout: Duration? { core.readerStallTimeout }
}

/// A stream delegate that calls a closure.
package final class ClosureStreamDelegate: NSObject, StreamDelegate, Sendable {
    private let handler: @Sendable (Stream.Event) -> Void

    package init(_ handler: @escaping @Sendable (Stream.Event) -> Void) {
        self.handler = handler
    }

    package func stream(_ aStream: Stream, handle eventCode: Stream.Event) {
        handler(eventCode)
    }
}
