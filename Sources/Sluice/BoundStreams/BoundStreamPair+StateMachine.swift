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

        /// Writes as much as fits; returns the count (or -1) and the event to send.
        mutating func write(_ bytes: UnsafeRawBufferPointer) -> (Int, WriterEvent) {
            guard writer == .open, failure == nil else { return (-1, .none) }
            if reader == .closed { return (-1, .none) }
            let count = ring.write(bytes)
            totalWritten += Int64(count)
            writtenDuringEvent += count
            if count < bytes.count { writerWantsSpace = true }
            return (count, .none)
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

        enum ReadResult: Sendable, Equatable {
            case bytes(Int)
            case end
            case failed
            /// Nothing yet: wait for the writer.
            case wait
        }

        mutating func read(into buffer: UnsafeMutableRawBufferPointer) -> (ReadResult, WriterEvent) {
            if failure != nil { return (.failed, .none) }
            if reader == .closed { return (.failed, .none) }
            if buffer.isEmpty { return (.bytes(0), .none) }
            if !ring.isEmpty {
                let count = ring.read(into: buffer)
                totalRead += Int64(count)
                var event = WriterEvent.none
                // Hysteresis: wake a waiting writer once half the ring is free, not on every
                // read, so a reader taking small pieces does not cost a writer event each.
                if writerWantsSpace && writer == .open && ring.freeSpace >= spaceEventThreshold {
                    writerWantsSpace = false
                    event = queueSpaceEvent()
                }
                return (.bytes(count), event)
            }
            if writer == .closed { return (.end, .none) }
            return (.wait, .none)
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
