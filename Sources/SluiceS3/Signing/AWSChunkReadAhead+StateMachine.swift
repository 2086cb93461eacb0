/// `AWSChunkReadAhead`'s state machine: which ring slots hold which chunks, what the producer
/// may claim next, the consumer's wake-up, the end. Every change is an `event` that says what
/// the caller does next (`Action`); no lock, no thread, no read of the source.
///
/// The read-ahead holds it in its lock and does what the action says with the lock released:
/// launch the producer, read and hash the chunks claimed, run the closures owed once the
/// producer stopped, call the consumer's wake-up.
package struct AWSChunkReadAheadState {
    /// One slot of the ring: the chunk it holds, whether read, its hash, bytes or error.
    package struct Slot {
        package var chunk: Int64 = -1
        package var ready = false
        package var hash: [UInt8] = []
        /// The chunk's bytes: in the slot's memory, or in place in a resident source.
        package var bytes = UnsafeRawBufferPointer(start: nil, count: 0)
        package var error: (any Error)?
    }

    /// Chunks the producer claimed, to read: `count` (1 or 2) from `first`, in `generation`.
    package struct Claim: Equatable {
        package var first: Int64
        package var count: Int
        package var generation: Int
    }

    /// What happened.
    package enum Event {
        /// The consumer is about to take `chunk` (the previous one + 1, or 0 after `restart`):
        /// the chunks before it are free.
        case take(Int64)
        /// The consumer looks for `chunk`; with a `waker` it does not wait (it is called once
        /// when the chunk is ready or failed), without one it waits for the lock's broadcast.
        case look(Int64, waker: (@Sendable () -> Void)?)
        /// The request ended: nothing more is claimed; `then` runs once the producer stopped.
        case end(then: @Sendable () -> Void)
        /// Forget every chunk read ahead: the consumer starts again from chunk 0.
        case restart
        /// The producer is free: it claims the next chunks, or stops.
        case claim
        /// The producer read (or failed to read) the chunks of `claim`: `slots`, ready.
        case read(Claim, slots: [Slot])
    }

    /// What the caller does next.
    package enum Action {
        /// Nothing.
        case none
        /// Start the producer (it was marked running).
        case launch
        /// The chunk's bytes (valid until the next take or restart) and SHA-256.
        case chunk(UnsafeRawBufferPointer, hash: [UInt8])
        /// The chunk failed to read: throw this (the ring was forgotten; a retry reads it again).
        case failed(any Error)
        /// `end` was called: read the chunk without the read-ahead.
        case ended
        /// Not read yet, and the consumer does not wait: its waker is called when it is.
        case notReady
        /// Not read yet: wait for a change and look again.
        case wait
        /// Run these closures now (the producer is not running, or has stopped).
        case run([@Sendable () -> Void])
        /// Read and hash the chunks claimed, then send `.read`.
        case read(Claim)
        /// Wake the consumer: broadcast, then call its waker if it has one.
        case wake((@Sendable () -> Void)?)
    }

    package let slotCount: Int
    package let dataChunkCount: Int64
    package private(set) var slots: [Slot]
    /// The next chunk the producer will read.
    package private(set) var produced: Int64 = 0
    /// The chunk the consumer holds; slots of earlier chunks are free.
    package private(set) var consumed: Int64 = -1
    /// The producer is at work (launched and not stopped).
    package private(set) var running = false
    /// Bumped on restart and on a failed chunk; a chunk claimed in an older generation is dropped.
    package private(set) var generation = 0
    /// The consumer sleeps until this chunk is ready (or the producer stops or fails): it
    /// waits for a batch of chunks, not for each one, so the two threads do not trade a
    /// wake-up per chunk. nil when the consumer is not waiting.
    package private(set) var wakeAt: Int64?
    /// Called instead of a broadcast for a consumer that does not wait (set by `look`).
    package private(set) var waker: (@Sendable () -> Void)?
    /// `end` was called: nothing is produced any more.
    package private(set) var ended = false
    /// Run once the producer has stopped after `end`.
    package private(set) var whenStopped: [@Sendable () -> Void] = []

    /// A ring of `slotCount` slots for a body of `dataChunkCount` chunks.
    package init(slotCount: Int, dataChunkCount: Int64) {
        self.slotCount = slotCount
        self.dataChunkCount = dataChunkCount
        slots = Array(repeating: Slot(), count: slotCount)
    }

    private func index(_ chunk: Int64) -> Int { Int(chunk % Int64(slotCount)) }

    package mutating func event(_ event: Event) -> Action {
        switch event {
        case .take(let chunk):
            guard !ended else { return .none }
            consumed = chunk
            if produced < chunk { produced = chunk }
            guard !running, produced < dataChunkCount, produced < consumed + Int64(slotCount) else { return .none }
            running = true
            return .launch
        case .look(let chunk, let newWaker):
            if ended { return .ended }
            let slot = slots[index(chunk)]
            guard slot.chunk == chunk, slot.ready else {
                // Chunks are produced in order: wait for half a ring past this one.
                wakeAt = min(chunk + Int64(slotCount / 2), dataChunkCount, consumed + Int64(slotCount)) - 1
                guard let newWaker else { return .wait }
                waker = newWaker
                return .notReady
            }
            wakeAt = nil
            waker = nil
            if let error = slot.error {
                // Forget what was read ahead: the next take of this chunk reads it again.
                generation += 1
                produced = chunk
                slots = Array(repeating: Slot(), count: slotCount)
                return .failed(error)
            }
            return .chunk(slot.bytes, hash: slot.hash)
        case .end(let then):
            ended = true
            waker = nil
            guard running else { return .run([then]) }
            whenStopped.append(then)
            return .none
        case .restart:
            generation += 1
            produced = 0
            consumed = -1
            slots = Array(repeating: Slot(), count: slotCount)
            return .none
        case .claim:
            let chunk = produced
            guard running, !ended, chunk < dataChunkCount, chunk < consumed + Int64(slotCount), chunk >= max(consumed, 0) else {
                running = false
                defer { whenStopped = [] }
                return .run(whenStopped)
            }
            let count = chunk + 1 < dataChunkCount && chunk + 1 < consumed + Int64(slotCount) ? 2 : 1
            for claimed in chunk..<chunk + Int64(count) { slots[index(claimed)] = Slot(chunk: claimed) }
            produced += Int64(count)
            return .read(Claim(first: chunk, count: count, generation: generation))
        case .read(let claim, let read):
            for slot in read where generation == claim.generation && slots[index(slot.chunk)].chunk == slot.chunk {
                slots[index(slot.chunk)] = slot
            }
            guard let wakeAt else { return .none }
            // The batch is ready, a chunk failed, or this claim ends what the producer may
            // claim now (the ring is full or the body ends): the consumer goes on.
            let newest = claim.first + Int64(claim.count) - 1
            let last = min(dataChunkCount, consumed + Int64(slotCount)) - 1
            guard newest >= wakeAt || newest >= last || read.contains(where: { $0.error != nil }) || generation != claim.generation else {
                return .none
            }
            self.wakeAt = nil
            defer { waker = nil }
            return .wake(waker)
        }
    }
}
