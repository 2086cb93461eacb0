import Foundation

/// The fixed buffer between a producer thread (a sequential source or an `InputStream`,
/// whose reads may block) and curl's read callback, which never blocks.
///
/// The producer reads into its own `chunkSize` buffer, then copies into the ring as space
/// frees up; curl's read callback copies out of the ring and asks curl to pause when it is
/// empty. Memory: `capacity` bytes of ring plus `min(capacity, 64 KiB)` of read buffer.
///
/// - Important: `pull(into:)` is called from the curl thread only; the producer runs on its
///   own thread. `cancel()` may be called from any thread, returns at once and never waits
///   for a producer blocked in a read: that thread ends by itself when its read returns.
final class CurlBodyPipe: @unchecked Sendable {
    // @unchecked: `storage` is only reached through `ring`, which lives in `state` behind its lock;
    // `wake` is set once before the producer starts.

    /// What feeds the pipe.
    enum Producer: Sendable {
        case sequential(any SequentialByteSource)
        case stream(@Sendable () -> InputStream)
    }

    /// What the consumer gets from one pull.
    enum Pull {
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
        var ring: ByteRing
        var end: End?
        var cancelled = false
        var consumerWaiting = false
    }

    let length: BodyLength
    private let storage: UnsafeMutableRawBufferPointer
    private let state: ConditionLock<State>
    private let wake: @Sendable () -> Void

    /// - Parameters:
    ///   - capacity: The ring's size in bytes.
    ///   - length: The declared length; the producer fails when it delivers fewer or more.
    ///   - wake: Called from the producer thread when bytes or the end arrive after an `.empty` pull.
    init(capacity: Int, length: BodyLength, wake: @escaping @Sendable () -> Void) {
        storage = .allocate(byteCount: max(1, capacity), alignment: 16)
        state = ConditionLock(State(ring: ByteRing(storage: storage)))
        self.length = length
        self.wake = wake
    }

    deinit { storage.deallocate() }

    /// Starts the producer thread.
    func start(_ producer: Producer) {
        let thread = Thread { [self] in
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
    func pull(into buffer: UnsafeMutableRawBufferPointer) -> Pull {
        state.withLockBroadcasting { state -> Pull in
            let count = state.ring.read(into: buffer)
            if count > 0 { return .bytes(count) }
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
    var isReadable: Bool {
        state.withLock { !$0.ring.isEmpty || $0.end != nil }
    }

    /// Whether the producer finished cleanly and every byte was pulled.
    var isDrained: Bool {
        state.withLock { state in
            guard case .finished = state.end else { return false }
            return state.ring.isEmpty
        }
    }

    /// Stops the producer at its next step; returns at once.
    func cancel() {
        state.withLockBroadcasting { $0.cancelled = true }
    }

    private func produce(_ read: (UnsafeMutableRawBufferPointer) throws -> Int) {
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: min(storage.count, 64 << 10), alignment: 16)
        defer { chunk.deallocate() }
        var produced: Int64 = 0
        while true {
            let count: Int
            do {
                count = try read(chunk)
            } catch {
                finish(.failed(UploadError(
                    .sourceFailed, "the source failed at byte \(produced): \(error)",
                    totalBytes: length.value, offset: produced, underlying: error)))
                return
            }
            if count == 0 {
                if let expected = length.value, produced < expected {
                    let cause = ByteSourceError.endedEarly(offset: produced, expected: expected)
                    finish(.failed(UploadError(
                        .sourceFailed, "the source ended early: \(cause)",
                        totalBytes: expected, offset: produced, underlying: cause)))
                } else {
                    finish(.finished)
                }
                return
            }
            if let expected = length.value, produced + Int64(count) > expected {
                finish(.failed(UploadError(
                    .sourceFailed, "the source holds more than its declared \(expected) bytes",
                    totalBytes: expected, offset: expected)))
                return
            }
            guard deliver(UnsafeRawBufferPointer(rebasing: chunk[..<count])) else { return }
            produced += Int64(count)
        }
    }

    /// Copies `bytes` into the ring as space frees up; false when cancelled.
    private func deliver(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var written = 0
        while written < bytes.count {
            let (proceed, wakeConsumer) = state.wait { state -> (Bool, Bool)? in
                if state.cancelled { return (false, false) }
                guard state.ring.freeSpace > 0 else { return nil }
                written += state.ring.write(UnsafeRawBufferPointer(rebasing: bytes[written...]))
                defer { state.consumerWaiting = false }
                return (true, state.consumerWaiting)
            }
            guard proceed else { return false }
            if wakeConsumer { wake() }
        }
        return true
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
