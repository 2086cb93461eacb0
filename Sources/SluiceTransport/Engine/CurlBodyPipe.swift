import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceBoundStreams

/// The fixed buffer between a producer thread (a sequential source or an `InputStream`,
/// whose reads may block) and curl's read callback, which never blocks.
///
/// A ring of `capacity` bytes: the producer reserves the free span after the filled part,
/// reads into it with the lock released (only the producer writes there, only the consumer
/// reads the filled part), then commits the count; curl's read callback copies out of the
/// filled part and asks curl to pause when it is empty. Memory: `capacity` bytes.
///
/// - Important: `pull(into:)` is called from the curl thread only; the producer runs on its
///   own thread. `cancel()` may be called from any thread and returns at once: an
///   `AsyncSequence` body (`AsyncSequenceSource`) is cancelled, which wakes its read at once;
///   any other producer blocked in a read ends by itself when its read returns. (A descriptor,
///   stdin or a pipe, never comes here: the transfer reads it itself, `CurlTransfer.Reader.descriptor`.)
package final class CurlBodyPipe: @unchecked Sendable {
    // @unchecked: `storage` is split by `state.ring` (behind its lock) into a filled span that
    // only the consumer reads and a free span that only the single producer writes.

    /// What feeds the pipe.
    package enum Producer: Sendable {
        case sequential(any SequentialByteSource)
        case stream(@Sendable () -> InputStream)
    }

    /// What the consumer gets from one pull.
    package enum Pull {
        case bytes(Int)
        case end
        /// The ring is empty and the producer is still reading; the producer calls `wake` when
        /// bytes arrive.
        case empty
        case failed(UploadError)
    }

    private enum End {
        case finished
        case failed(UploadError)
    }

    private struct State {
        /// The filled bytes, in `storage`.
        package var ring: ByteRing
        package var end: End?
        package var cancelled = false
        package var consumerWaiting = false
        /// An async sequence body, cancelled with the pipe.
        package var interrupt: AsyncSequenceSource?
    }

    package let length: BodyLength
    private let storage: UnsafeMutableRawBufferPointer
    private let state: Lock<State>
    private let wake: @Sendable () -> Void

    /// - Parameters:
    ///   - capacity: The ring's size in bytes.
    ///   - length: The declared length; the producer fails when it delivers fewer or more.
    ///   - wake: Called from the producer thread when bytes or the end arrive after an `.empty` pull.
    package init(capacity: Int, length: BodyLength, wake: @escaping @Sendable () -> Void) {
        storage = .allocate(byteCount: max(1, capacity), alignment: 16)
        state = Lock(State(ring: ByteRing(storage: storage)))
        self.length = length
        self.wake = wake
    }

    deinit { storage.deallocate() }

    /// Starts the producer thread (call once).
    package func start(_ producer: Producer) {
        if case .sequential(let source as AsyncSequenceSource) = producer {
            state.withLock { $0.interrupt = source }
        }
        let thread = Thread { [self] in
            #if canImport(CCurl)
            nameCurrentThread("sluice-producer")
            #endif
            switch producer {
            case .sequential(let source):
                produce { try source.read(into: $0) }
            case .stream(let make):
                let stream = make()
                stream.open()
                produce { buffer in
                    guard let base = buffer.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return 0 }
                    let count = stream.read(base, maxLength: buffer.count)
                    if count < 0 {
                        throw stream.streamError ?? UploadError(.sourceFailed, "the input stream failed without saying why")
                    }
                    return count
                }
                stream.close()
            }
        }
        thread.name = "sluice-curl-producer"
        thread.start()
    }

    /// Copies bytes for curl; never blocks.
    package func pull(into buffer: UnsafeMutableRawBufferPointer) -> Pull {
        state.withLockBroadcasting { state -> Pull in
            let total = state.ring.read(into: buffer)
            if total > 0 { return .bytes(total) }
            switch state.end {
            case .finished: return .end
            case .failed(let error): return .failed(error)
            case nil:
                state.consumerWaiting = true
                return .empty
            }
        }
    }

    /// Whether a pull would return something other than `.empty`.
    package var isReadable: Bool {
        state.withLock { !$0.ring.isEmpty || $0.end != nil }
    }

    /// Whether the whole body was pulled: every byte, and the producer finished cleanly; or,
    /// for a known length, every declared byte while the producer has not failed (it may still
    /// be confirming the end: libcurl asks for no byte past the length, and the server can
    /// answer first, which an async sequence's last round trip often loses).
    package func isComplete(pulled: Int64) -> Bool {
        state.withLock { state in
            guard state.ring.isEmpty else { return false }
            switch state.end {
            case .finished?: return true
            case .failed?: return false
            case nil: return length.value == pulled
            }
        }
    }

    /// Stops the producer at its next step; returns at once.
    package func cancel() {
        let interrupt = state.withLockBroadcasting { state in
            state.cancelled = true
            return state.interrupt
        }
        // An async sequence's read waits for its iterating task: cancel both.
        interrupt?.cancel()
    }

    private func produce(_ read: (UnsafeMutableRawBufferPointer) throws -> Int) {
        var produced: Int64 = 0
        while true {
            guard let span = reserve() else { return }
            var wanted = span.count
            if let expected = length.value, expected - produced < Int64(wanted) {
                // One byte past the declared length is enough to notice a source that holds more.
                wanted = Int(expected - produced) + 1
            }
            let count: Int
            do {
                count = try read(UnsafeMutableRawBufferPointer(rebasing: span[..<wanted]))
            } catch {
                finish(.failed(.sourceFailed(error, at: produced, totalBytes: length.value)))
                return
            }
            if count == 0 {
                if let expected = length.value, produced < expected {
                    finish(.failed(.sourceEndedEarly(at: produced, expected: expected, totalBytes: expected)))
                } else {
                    finish(.finished)
                }
                return
            }
            if let expected = length.value, produced + Int64(count) > expected {
                let kept = Int(expected - produced)
                if kept > 0 { commit(kept) }
                finish(
                    .failed(
                        UploadError(
                            .sourceFailed, "the source holds more than its declared \(expected) bytes",
                            totalBytes: expected, offset: expected)))
                return
            }
            commit(count)
            produced += Int64(count)
        }
    }

    /// Waits for free space and returns the contiguous free span after the filled part; nil when cancelled.
    private func reserve() -> UnsafeMutableRawBufferPointer? {
        state.wait { state -> UnsafeMutableRawBufferPointer?? in
            if state.cancelled { return .some(nil) }
            guard !state.ring.isFull else { return nil }
            // The first free region; the producer fills it with the lock released.
            return .some(state.ring.writableRegions(limit: state.ring.freeSpace).0)
        }
    }

    /// Publishes `count` bytes written into the reserved span, waking a waiting consumer.
    private func commit(_ count: Int) {
        let wakeConsumer = state.withLockBroadcasting { state -> Bool in
            state.ring.commitWrite(count)
            defer { state.consumerWaiting = false }
            return state.consumerWaiting
        }
        if wakeConsumer { wake() }
    }

    private func finish(_ end: End) {
        let wakeConsumer = state.withLockBroadcasting { state -> Bool in
            state.end = end
            defer { state.consumerWaiting = false }
            return state.consumerWaiting
        }
        if wakeConsumer { wake() }
    }
}
