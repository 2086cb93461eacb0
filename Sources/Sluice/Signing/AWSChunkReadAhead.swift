import Dispatch

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
final class AWSChunkReadAhead: @unchecked Sendable {
    // @unchecked: the slot memory is written only by the producer for a slot it claimed, and
    // read only by the consumer for a slot marked ready, ownership passing under `state`'s lock.
    struct Slot {
        var chunk: Int64 = -1
        var ready = false
        var hash: [UInt8] = []
        /// The chunk's bytes: in the slot's memory, or in place in a resident source.
        var bytes = UnsafeRawBufferPointer(start: nil, count: 0)
        var error: (any Error)?
    }

    struct State {
        var slots: [Slot]
        /// The next chunk the producer will read.
        var produced: Int64 = 0
        /// The chunk the consumer holds; slots of earlier chunks are free.
        var consumed: Int64 = -1
        var running = false
        /// Bumped on restart; a chunk claimed in an older generation is dropped.
        var generation = 0
        /// The consumer sleeps until this chunk is ready (or the producer stops or fails): it
        /// waits for a batch of chunks, not for each one, so the two threads do not trade a
        /// wake-up per chunk. nil when the consumer is not waiting.
        var wakeAt: Int64?
        /// Called instead of a broadcast for a consumer that does not wait (set by `take`).
        var waker: (@Sendable () -> Void)?
        /// `end` was called: nothing is produced any more.
        var ended = false
        /// Run once the producer has stopped after `end`.
        var whenStopped: [@Sendable () -> Void] = []
    }

    /// What `take` found.
    enum Taken {
        /// The chunk's bytes (valid until the next `take` or `restart`) and SHA-256.
        case chunk(UnsafeRawBufferPointer, hash: [UInt8])
        /// Not read yet: the `wake` given is called when it is.
        case notReady
        /// `end` was called: read the chunk without the read-ahead.
        case ended
    }

    let source: any ByteSource
    let encoding: AWSChunkedEncoding
    let slotCount: Int
    /// `slotCount` chunk buffers; nil for a resident source.
    private let memory: UnsafeMutableRawBufferPointer?
    private let state: Lock<State>

    /// The default ring: 2 MiB, 32 chunks of the default 64 KiB.
    static let defaultBytes = 2 << 20

    /// Read-ahead for `encoding` in a ring of at most `limit` bytes (at most 16 chunks), or nil
    /// when it would not pay: fewer than 4 chunks, or room for fewer than 2 in the ring.
    static func make(source: any ByteSource, encoding: AWSChunkedEncoding, limit: Int = defaultBytes) -> AWSChunkReadAhead? {
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
        state = Lock(State(slots: Array(repeating: Slot(), count: slotCount)))
    }

    deinit { memory.map(PageMemory.deallocate) }

    /// Bytes of chunk buffers this read-ahead holds (0 for a resident source).
    var slotMemoryBytes: Int { memory?.count ?? 0 }

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
    func take(_ chunk: Int64, wake: (@Sendable () -> Void)? = nil) throws -> Taken {
        let start = state.withLockBroadcasting { state -> Bool in
            guard !state.ended else { return false }
            state.consumed = chunk
            if state.produced < chunk { state.produced = chunk }
            return startProducerLocked(&state)
        }
        if start { launch() }
        let found = { (state: inout State) -> Result<Taken, any Error>? in
            if state.ended { return .success(.ended) }
            let slot = state.slots[Int(chunk % Int64(self.slotCount))]
            guard slot.chunk == chunk, slot.ready else {
                // Chunks are produced in order: wait for half a ring past this one.
                state.wakeAt =
                    min(
                        chunk + Int64(self.slotCount / 2), self.encoding.dataChunkCount,
                        state.consumed + Int64(self.slotCount)) - 1
                return nil
            }
            state.wakeAt = nil
            state.waker = nil
            if let error = slot.error {
                // Forget what was read ahead: the next take of this chunk reads it again.
                state.generation += 1
                state.produced = chunk
                for index in state.slots.indices { state.slots[index] = Slot() }
                return .failure(error)
            }
            return .success(.chunk(slot.bytes, hash: slot.hash))
        }
        guard let wake else { return try state.wait(found).get() }
        return try state.withLock { state -> Result<Taken, any Error> in
            if let taken = found(&state) { return taken }
            state.waker = wake
            return .success(.notReady)
        }.get()
    }

    /// Stops the producer: it claims no chunk after this, and `then` runs once it has stopped
    /// (on its thread), or at once on the caller's when it is not running. Idempotent.
    func end(then: @escaping @Sendable () -> Void) {
        let now = state.withLockBroadcasting { state -> Bool in
            state.ended = true
            state.waker = nil
            guard state.running else { return true }
            state.whenStopped.append(then)
            return false
        }
        if now { then() }
    }

    /// Whether the producer is at work.
    var isRunning: Bool { state.withLock { $0.running } }

    /// Whether `end` was called.
    var isEnded: Bool { state.withLock { $0.ended } }

    /// Forgets every chunk read ahead: the consumer starts again from chunk 0.
    func restart() {
        state.withLockBroadcasting { state in
            state.generation += 1
            state.produced = 0
            state.consumed = -1
            for index in state.slots.indices { state.slots[index] = Slot() }
        }
    }

    /// Marks the producer running when there is a free slot and a chunk left; true when the
    /// caller must launch it.
    private func startProducerLocked(_ state: inout State) -> Bool {
        guard !state.running, !state.ended, state.produced < encoding.dataChunkCount,
            state.produced < state.consumed + Int64(slotCount)
        else { return false }
        state.running = true
        return true
    }

    private func launch() {
        DispatchQueue.global(qos: .userInitiated).async { self.produce() }
    }

    /// The producer: claims the next chunk's slot while one is free (the next two when two
    /// are free and left), reads them and hashes them (two together: `SigningCrypto.sha256(_:_:)`).
    private func produce() {
        while true {
            let claim = state.withLock { state -> (first: Int64, count: Int, generation: Int)? in
                let chunk = state.produced
                guard !state.ended, chunk < encoding.dataChunkCount, chunk < state.consumed + Int64(slotCount),
                    chunk >= max(state.consumed, 0)
                else {
                    state.running = false
                    return nil
                }
                let count = chunk + 1 < encoding.dataChunkCount && chunk + 1 < state.consumed + Int64(slotCount) ? 2 : 1
                for claimed in chunk..<chunk + Int64(count) {
                    state.slots[Int(claimed % Int64(slotCount))] = Slot(chunk: claimed)
                }
                state.produced += Int64(count)
                return (chunk, count, state.generation)
            }
            guard let claim else {
                let stopped = state.withLockBroadcasting { state -> [@Sendable () -> Void] in
                    defer { state.whenStopped = [] }
                    return state.whenStopped
                }
                for then in stopped { then() }
                return
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
            let waker = state.withLock { state -> (@Sendable () -> Void)?? in
                for slot in slots {
                    let index = Int(slot.chunk % Int64(slotCount))
                    if state.generation == claim.generation, state.slots[index].chunk == slot.chunk { state.slots[index] = slot }
                }
                guard let wakeAt = state.wakeAt else { return nil }
                // The batch is ready, a chunk failed, or this claim ends what the producer may
                // claim now (the ring is full or the body ends): the consumer goes on.
                let newest = claim.first + Int64(claim.count) - 1
                let last = min(encoding.dataChunkCount, state.consumed + Int64(slotCount)) - 1
                guard newest >= wakeAt || newest >= last || slots.contains(where: { $0.error != nil }) || state.generation != claim.generation else {
                    return nil
                }
                state.wakeAt = nil
                defer { state.waker = nil }
                return .some(state.waker)
            }
            if let waker {
                state.broadcast()
                waker?()
            }
        }
    }
}
