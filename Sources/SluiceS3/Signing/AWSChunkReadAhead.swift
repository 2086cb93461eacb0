import Dispatch
@_spi(Floors) import SluicePrimitives
import SluiceByteSources

/// Reads and hashes the next chunks of an aws-chunked body on another core while the
/// transport sends the current one, so that SHA-256 (about 2 GB/s with SHA-NI) does not
/// stand in the send path.
///
/// A ring of `slotCount` chunk buffers: the producer, a Dispatch work item started by the
/// consumer's progress, fills slots in chunk order (source bytes and their SHA-256) while
/// the slot is free; the consumer takes chunk `i` from its slot, which stays valid until it
/// takes the next chunk. The work item never waits for the consumer: it stops when the ring
/// is full and is started again by the next `take`.
///
/// A consumer that must not wait (a loop thread) takes with a `wake` closure: it gets
/// `.notReady` at once, and `wake` is called once, from the producer, when the chunk is ready
/// (or failed). `end` cancels the producer and runs its closure once the producer has
/// stopped (at once when it is not running): the request that reads the body calls it when it
/// ends, so no read of the source outlives the request. After `end`, `take` says `.ended`.
///
/// - Important: Memory: `slotCount × chunkSize` (at most the `limit` given, 2 MiB by default), none for a
///   `ResidentByteSource` (hashed in place, its bytes handed out as they are). One consumer at a
///   time (`AWSChunkedBody` serialises its reads).
package final class AWSChunkReadAhead: @unchecked Sendable {
    // @unchecked: the slot memory is written only by the producer for a slot it claimed, and
    // read only by the consumer for a slot marked ready, ownership passing under `state`'s lock.
    package typealias Slot = AWSChunkReadAheadState.Slot

    /// What `take` found.
    package enum Taken {
        /// The chunk's bytes (valid until the next `take` or `restart`) and SHA-256.
        case chunk(UnsafeRawBufferPointer, hash: [UInt8])
        /// Not read yet: the `wake` given is called when it is.
        case notReady
        /// `end` was called: read the chunk without the read-ahead.
        case ended
    }

    package let source: any ByteSource
    package let encoding: AWSChunkedEncoding
    package let slotCount: Int
    /// `slotCount` chunk buffers; nil for a resident source.
    private let memory: UnsafeMutableRawBufferPointer?
    /// The state machine (`AWSChunkReadAheadState`); the lock only guards it.
    private let state: Lock<AWSChunkReadAheadState>

    /// The default ring: 2 MiB, 32 chunks of the default 64 KiB.
    package static let defaultBytes = 2 << 20

    /// Read-ahead for `encoding` in a ring of at most `limit` bytes (at most 16 chunks), or nil
    /// when it would not pay: fewer than 4 chunks, or room for fewer than 2 in the ring.
    package static func make(source: any ByteSource, encoding: AWSChunkedEncoding, limit: Int = defaultBytes) -> AWSChunkReadAhead? {
        let slots = min(16, limit / encoding.chunkSize)
        guard encoding.dataChunkCount >= 4, slots >= 2 else { return nil }
        // No memory for the ring: the body is read in place instead (slower, never wrong).
        return try? AWSChunkReadAhead(source: source, encoding: encoding, slotCount: slots)
    }

    private init(source: any ByteSource, encoding: AWSChunkedEncoding, slotCount: Int) throws(PageMemory.AllocationFailed) {
        self.source = source
        self.encoding = encoding
        self.slotCount = slotCount
        // A resident source is hashed in place: the slots hold only hashes. The ring comes and
        // goes with each request: whole pages, given back to the kernel at the end.
        memory = source is any ResidentByteSource ? nil : try PageMemory.allocate(byteCount: slotCount * encoding.chunkSize)
        state = Lock(AWSChunkReadAheadState(slotCount: slotCount, dataChunkCount: encoding.dataChunkCount))
    }

    deinit { memory.map(PageMemory.deallocate) }

    /// Bytes of chunk buffers this read-ahead holds (0 for a resident source).
    package var slotMemoryBytes: Int { memory?.count ?? 0 }

    private func chunkRange(_ chunk: Int64) -> (offset: Int64, size: Int) {
        let offset = chunk * Int64(encoding.chunkSize)
        return (offset, Int(min(Int64(encoding.chunkSize), encoding.decodedLength - offset)))
    }

    private func slotMemory(_ chunk: Int64, size: Int) -> UnsafeMutableRawBufferPointer {
        let start = Int(chunk % Int64(slotCount)) * encoding.chunkSize
        return UnsafeMutableRawBufferPointer(rebasing: memory![start..<start + size])
    }

    /// Chunk `chunk`'s bytes and SHA-256.
    ///
    /// Chunks are taken in order (`chunk` is the previous one + 1, or 0 after `restart`).
    ///
    /// - Parameter wake: nil to wait for the producer if it is on the chunk; else `.notReady`
    ///   comes back at once and `wake` is called once, from the producer's thread, when the
    ///   chunk is ready or failed.
    /// - Throws: The source's error for that chunk.
    package func take(_ chunk: Int64, wake: (@Sendable () -> Void)? = nil) throws -> Taken {
        if case .launch = state.withLockBroadcasting({ $0.event(.take(chunk)) }) { launch() }
        let look = { (state: inout AWSChunkReadAheadState) -> Result<Taken, any Error>? in
            switch state.event(.look(chunk, waker: wake)) {
            case .ended: return .success(.ended)
            case .chunk(let bytes, let hash): return .success(.chunk(bytes, hash: hash))
            case .failed(let error): return .failure(error)
            case .notReady: return .success(.notReady)
            default: return nil
            }
        }
        guard wake != nil else { return try state.wait(look).get() }
        return try state.withLock { try look(&$0)?.get() ?? .notReady }
    }

    /// Stops the producer: it claims no chunk after this, and `then` runs once it has stopped
    /// (on its thread), or at once on the caller's when it is not running. Idempotent.
    package func end(then: @escaping @Sendable () -> Void) {
        if case .run(let now) = state.withLockBroadcasting({ $0.event(.end(then: then)) }) { for then in now { then() } }
    }

    /// Whether the producer is at work.
    package var isRunning: Bool { state.withLock { $0.running } }

    /// Whether `end` was called.
    package var isEnded: Bool { state.withLock { $0.ended } }

    /// Forgets every chunk read ahead: the consumer starts again from chunk 0.
    package func restart() {
        _ = state.withLockBroadcasting { $0.event(.restart) }
    }

    private func launch() {
        DispatchQueue.global(qos: .userInitiated).async { self.produce() }
    }

    /// The producer: claims the next chunk's slot while one is free (the next two when two
    /// are free and left), reads them and hashes them (two together: `SigningCrypto.sha256(_:_:)`).
    private func produce() {
        while true {
            let claim: AWSChunkReadAheadState.Claim
            switch state.withLock({ $0.event(.claim) }) {
            case .read(let claimed): claim = claimed
            case .run(let stopped):
                state.broadcast()
                for then in stopped { then() }
                return
            default: return
            }
            var slots = (0..<claim.count).map { Slot(chunk: claim.first + Int64($0), ready: true) }
            // Counted as a reader of the source (a pooled part buffer is not refilled
            // meanwhile): the bytes are read and hashed inside. A chunk that fails takes the
            // ones after it in the claim with it (they are read again after the retry); after
            // `end`, the second chunk is not read (the request that ended waits for this).
            var read = 0
            var endedBetween = false
            do {
                try source.whileReading {
                    for index in slots.indices {
                        if index > 0, state.withLock({ $0.ended }) {
                            endedBetween = true
                            break
                        }
                        let (offset, size) = chunkRange(slots[index].chunk)
                        do {
                            slots[index].bytes = try source.bytes(at: offset, count: size) { slotMemory(slots[index].chunk, size: size) }
                            read += 1
                        } catch {
                            for failed in index..<slots.count { slots[failed].error = error }
                            break
                        }
                    }
                    for (index, hash) in SigningCrypto.sha256(eachOf: slots[..<read].map(\.bytes)).enumerated() {
                        slots[index].hash = hash
                    }
                }
            } catch {
                // Only entering the source as a reader throws here: nothing was read.
                for index in slots.indices { slots[index].error = error }
            }
            // A chunk not read stays unready in its slot.
            if endedBetween { slots.removeLast(slots.count - read) }
            if case .wake(let waker) = state.withLock({ $0.event(.read(claim, slots: slots)) }) {
                state.broadcast()
                waker?()
            }
        }
    }
}
