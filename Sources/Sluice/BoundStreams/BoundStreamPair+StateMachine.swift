extension BoundStreamPair {
    /// Both ends of the pair as one value: the ring, who is open, who finished, why it failed.
    ///
    /// Every method runs under the pair's lock and returns what to do once it is released.
    struct StateMachine: Sendable {
        enum End: Sendable, Equatable {
            case notOpen
            case open
            case closed
        }

        var ring: ByteRing
        var writer: End = .notOpen
        var reader: End = .notOpen
        /// Set once; both ends report it from then on.
        var failure: (any Error)?
        /// The writer's last write did not fit: tell it when space frees up.
        var writerWantsSpace = false
        /// A `hasSpaceAvailable` event is queued and not yet delivered.
        var spaceEventQueued = false
        /// Bytes written while the current `hasSpaceAvailable` event was being handled.
        var writtenDuringEvent = 0
        /// `endEncountered` was already sent to the writer.
        var writerToldOfEnd = false
        var totalWritten: Int64 = 0
        var totalRead: Int64 = 0

        init(ring: ByteRing) {
            self.ring = ring
        }

        /// Free bytes that wake a writer whose last write did not fit: half the ring.
        var spaceEventThreshold: Int { max(1, ring.capacity / 2) }

        /// What the writer's delegate should hear after a state change.
        enum WriterEvent: Sendable, Equatable {
            case none
            case hasSpaceAvailable
            case endEncountered
            case errorOccurred
        }

        mutating func openWriter() -> WriterEvent {
            guard writer == .notOpen else { return .none }
            writer = .open
            if failure != nil { return .errorOccurred }
            return queueSpaceEvent()
        }

        /// Hands the writer the free regions it may fill, at most `limit` bytes; nil when it
        /// may not write (closed, failed, or the reader went away).
        func reserveWrite(limit: Int) -> (UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer)? {
            guard writer == .open, failure == nil, reader != .closed else { return nil }
            return ring.writableRegions(limit: limit)
        }

        /// The writer filled `count` of the `asked` bytes it wanted to write; returns the event
        /// to send it.
        mutating func commitWrite(_ count: Int, asked: Int) -> WriterEvent {
            ring.commitWrite(count)
            totalWritten += Int64(count)
            writtenDuringEvent += count
            guard count < asked else { return .none }
            // The reader may have drained the ring while the bytes were copied, and seen no
            // writer waiting: then nothing else would wake it, so tell it now.
            if ring.freeSpace >= spaceEventThreshold && writer == .open {
                return queueSpaceEvent()
            }
            writerWantsSpace = true
            return .none
        }

        /// The writer closed its end: the reader sees the end once the ring drains.
        mutating func closeWriter() {
            if writer != .closed { writer = .closed }
            writerWantsSpace = false
        }

        /// Fails both ends with `error`; the first failure wins.
        mutating func fail(_ error: any Error) -> WriterEvent {
            guard failure == nil else { return .none }
            failure = error
            return writer == .open ? .errorOccurred : .none
        }

        mutating func openReader() {
            if reader == .notOpen { reader = .open }
        }

        /// What a reader gets: regions to copy from, or why there are none.
        enum ReadReservation {
            case bytes(UnsafeRawBufferPointer, UnsafeRawBufferPointer)
            case end
            case failed
            /// Nothing yet: wait for the writer.
            case wait
        }

        /// Hands the reader the oldest bytes, at most `limit`.
        func reserveRead(limit: Int) -> ReadReservation {
            if failure != nil || reader == .closed { return .failed }
            if limit <= 0 { return .bytes(UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(start: nil, count: 0)) }
            if !ring.isEmpty {
                let (first, second) = ring.readableRegions(limit: limit)
                return .bytes(first, second)
            }
            return writer == .closed ? .end : .wait
        }

        /// The reader copied `count` bytes out: returns the event to send the writer.
        mutating func commitRead(_ count: Int) -> WriterEvent {
            ring.commitRead(count)
            totalRead += Int64(count)
            // Hysteresis: wake a waiting writer once half the ring is free, not on every
            // read, so a reader taking small pieces does not cost a writer event each.
            if writerWantsSpace && writer == .open && ring.freeSpace >= spaceEventThreshold {
                writerWantsSpace = false
                return queueSpaceEvent()
            }
            return .none
        }

        /// Whether a reader may read without being told the end: `false` only at the true end.
        var readerHasBytesAvailable: Bool {
            if failure != nil || reader == .closed { return false }
            return !(writer == .closed && ring.isEmpty)
        }

        mutating func closeReader() -> WriterEvent {
            guard reader != .closed else { return .none }
            reader = .closed
            if writer == .open && failure == nil && !writerToldOfEnd {
                writerToldOfEnd = true
                return .endEncountered
            }
            return .none
        }

        private mutating func queueSpaceEvent() -> WriterEvent {
            guard !spaceEventQueued, ring.freeSpace > 0 else { return .none }
            spaceEventQueued = true
            return .hasSpaceAvailable
        }

        /// A queued `hasSpaceAvailable` is about to be handled.
        mutating func beginSpaceEvent() -> Bool {
            spaceEventQueued = false
            writtenDuringEvent = 0
            return writer == .open && failure == nil && reader != .closed
        }

        /// The handler returned: if it wrote, all of it fit, and space remains, it hears again.
        mutating func endSpaceEvent() -> WriterEvent {
            guard writer == .open, failure == nil, reader != .closed else { return .none }
            if writtenDuringEvent > 0 && !writerWantsSpace { return queueSpaceEvent() }
            return .none
        }
    }
}
