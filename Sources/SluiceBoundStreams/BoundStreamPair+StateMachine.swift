import Foundation

extension BoundStreamPair {
    /// Both ends of the pair as one value: the ring's bytes and one `State` that says who is
    /// open, who closed, whether the pair failed, and where the writer's space event is.
    ///
    /// Every mutating method runs under the pair's lock and returns the action to perform
    /// once the lock is released (the event to send the writer), in the style of
    /// AsyncHTTPClient's `Transaction.StateMachine`. There are no independent flags: every
    /// combination the pair can be in is one case below.
    ///
    /// The writer's contract is Apple's: after `open`, and after any write, full or partial,
    /// the writer hears `hasSpaceAvailable` again once there is space (here: once at least
    /// `spaceEventThreshold` bytes are free, so a reader taking small pieces does not cost a
    /// writer event each). An event whose handler did not write is not repeated.
    package struct StateMachine: Sendable {
        /// Whether the reading end was opened (it may be opened late, or never).
        package enum ReaderOpen: Sendable, Equatable {
            case notOpen
            case open
        }

        /// Where the writer's `hasSpaceAvailable` is, while both ends may still move bytes.
        package enum SpaceEvent: Sendable, Equatable {
            /// Told, and has not written since: nothing is owed.
            case idle
            /// Owed an event (it opened or wrote), but too little space is free yet: the
            /// reader's drain queues it.
            case waitingForSpace
            /// An event is on its way to the delegate.
            case queued
            /// The delegate is handling an event; `wrote` if it wrote during it.
            case handling(wrote: Bool)
        }

        /// Whether the writer had opened when the reader closed (it hears `endEncountered` once
        /// it is open).
        package enum WriterOpen: Sendable, Equatable {
            case notOpen
            case open
        }

        /// The writer's end once the pair failed: a later `open` must hear `errorOccurred`,
        /// a closed writer never opens again.
        package enum FailedWriter: Sendable, Equatable {
            case notOpen
            case open
            case closed
        }

        package enum State: Sendable {
            /// The writer has not opened; nothing can be written yet.
            case writerNotOpen(reader: ReaderOpen)
            /// Both ends may move bytes.
            case streaming(reader: ReaderOpen, space: SpaceEvent)
            /// The writer closed: the reader takes the rest, then sees the end.
            case writerClosed(reader: ReaderOpen)
            /// The reader closed first: writes fail; the writer was told `endEncountered` if open.
            case readerClosed(writer: WriterOpen)
            /// Both ends closed after a clean end.
            case finished
            /// Failed or cancelled: both ends report `error` from now on.
            case failed(any Error, writer: FailedWriter)
        }

        /// What the writer's delegate must hear once the lock is released.
        package enum Action: Sendable, Equatable {
            case none
            case hasSpaceAvailable
            case endEncountered
            case errorOccurred
        }

        package private(set) var state: State = .writerNotOpen(reader: .notOpen)
        package private(set) var ring: ByteRing
        package private(set) var totalWritten: Int64 = 0
        package private(set) var totalRead: Int64 = 0

        package init(ring: ByteRing) {
            self.ring = ring
        }

        /// Free bytes that wake a writer owed an event: half the ring.
        package var spaceEventThreshold: Int { max(1, ring.capacity / 2) }

        // MARK: Writer

        package mutating func openWriter() -> Action {
            switch state {
            case .writerNotOpen(let reader):
                return owe(reader: reader)
            case .readerClosed(.notOpen):
                state = .readerClosed(writer: .open)
                return .endEncountered
            case .failed(let error, writer: .notOpen):
                state = .failed(error, writer: .open)
                return .errorOccurred
            case .streaming, .writerClosed, .readerClosed(.open), .finished, .failed(_, writer: .open), .failed(_, writer: .closed):
                return .none
            }
        }

        /// The free regions the writer may fill, at most `limit` bytes; nil when it may not
        /// write (not open, closed, failed, or the reader went away).
        package func reserveWrite(limit: Int) -> (UnsafeMutableRawBufferPointer, UnsafeMutableRawBufferPointer)? {
            guard case .streaming = state else { return nil }
            return ring.writableRegions(limit: limit)
        }

        /// The writer filled `count` bytes of the regions it reserved. Any write, even of 0
        /// bytes, makes the writer owed a space event.
        package mutating func commitWrite(_ count: Int) -> Action {
            // The reserved regions are the writer's until committed, whatever happened meanwhile.
            ring.commitWrite(count)
            totalWritten += Int64(count)
            guard case .streaming(let reader, let space) = state else { return .none }
            switch space {
            case .handling:
                state = .streaming(reader: reader, space: .handling(wrote: true))
                return .none
            case .queued:
                return .none
            case .idle, .waitingForSpace:
                return owe(reader: reader)
            }
        }

        /// Whether a write now would move at least one byte.
        package var writerHasSpaceAvailable: Bool {
            guard case .streaming = state else { return false }
            return ring.freeSpace > 0
        }

        /// The writer closed its end: the reader sees the end once the ring drains.
        package mutating func closeWriter() {
            switch state {
            case .writerNotOpen(let reader), .streaming(let reader, _):
                state = .writerClosed(reader: reader)
            case .readerClosed:
                state = .finished
            case .failed(let error, _):
                state = .failed(error, writer: .closed)
            case .writerClosed, .finished:
                break
            }
        }

        /// A queued `hasSpaceAvailable` is about to be handled: whether to call the delegate.
        package mutating func beginSpaceEvent() -> Bool {
            guard case .streaming(let reader, .queued) = state else { return false }
            state = .streaming(reader: reader, space: .handling(wrote: false))
            return true
        }

        /// The delegate returned from `hasSpaceAvailable`: if it wrote, it is owed the next one.
        package mutating func endSpaceEvent() -> Action {
            guard case .streaming(let reader, .handling(let wrote)) = state else { return .none }
            guard wrote else {
                state = .streaming(reader: reader, space: .idle)
                return .none
            }
            return owe(reader: reader)
        }

        /// The writer is owed a space event: queue it now if enough space is free, else let
        /// the reader's drain queue it.
        private mutating func owe(reader: ReaderOpen) -> Action {
            if ring.freeSpace >= spaceEventThreshold {
                state = .streaming(reader: reader, space: .queued)
                return .hasSpaceAvailable
            }
            state = .streaming(reader: reader, space: .waitingForSpace)
            return .none
        }

        // MARK: Reader

        package mutating func openReader() {
            switch state {
            case .writerNotOpen(.notOpen):
                state = .writerNotOpen(reader: .open)
            case .streaming(.notOpen, let space):
                state = .streaming(reader: .open, space: space)
            case .writerClosed(.notOpen):
                state = .writerClosed(reader: .open)
            case .writerNotOpen(.open), .streaming(.open, _), .writerClosed(.open), .readerClosed, .finished, .failed:
                break
            }
        }

        /// What a reader gets: regions to copy from, or why there are none.
        package enum ReadReservation {
            case bytes(UnsafeRawBufferPointer, UnsafeRawBufferPointer)
            case end
            case failed
            /// Nothing yet: wait for the writer.
            case wait
        }

        /// Hands the reader the oldest bytes, at most `limit`.
        package func reserveRead(limit: Int) -> ReadReservation {
            switch state {
            case .failed, .readerClosed, .finished:
                return .failed
            case .writerNotOpen, .streaming, .writerClosed:
                if limit <= 0 { return .bytes(UnsafeRawBufferPointer(start: nil, count: 0), UnsafeRawBufferPointer(start: nil, count: 0)) }
                if !ring.isEmpty {
                    let (first, second) = ring.readableRegions(limit: limit)
                    return .bytes(first, second)
                }
                if case .writerClosed = state { return .end }
                return .wait
            }
        }

        /// The reader copied `count` bytes out: wakes a writer owed an event once enough is free.
        package mutating func commitRead(_ count: Int) -> Action {
            ring.commitRead(count)
            totalRead += Int64(count)
            guard case .streaming(let reader, .waitingForSpace) = state, ring.freeSpace >= spaceEventThreshold else { return .none }
            state = .streaming(reader: reader, space: .queued)
            return .hasSpaceAvailable
        }

        /// Whether a reader may read without being told the end: `false` only at the true end
        /// (or after a failure or its own close).
        package var readerHasBytesAvailable: Bool {
            switch state {
            case .readerClosed, .finished: return false
            case .writerClosed: return !ring.isEmpty
            // A failed pair too: a reader that asks only while bytes are "available" (as
            // FoundationNetworking does) must read the -1, not take `false` for the end.
            case .writerNotOpen, .streaming, .failed: return true
            }
        }

        package mutating func closeReader() -> Action {
            switch state {
            case .writerNotOpen:
                state = .readerClosed(writer: .notOpen)
                return .none
            case .streaming:
                state = .readerClosed(writer: .open)
                return .endEncountered
            case .writerClosed:
                state = .finished
                return .none
            case .readerClosed, .finished, .failed:
                return .none
            }
        }

        // MARK: Either side

        /// Fails both ends with `error`; the first failure wins.
        package mutating func fail(_ error: any Error) -> Action {
            switch state {
            case .failed:
                return .none
            case .streaming, .readerClosed(.open):
                state = .failed(error, writer: .open)
                return .errorOccurred
            case .writerNotOpen, .readerClosed(.notOpen):
                state = .failed(error, writer: .notOpen)
                return .none
            case .writerClosed, .finished:
                state = .failed(error, writer: .closed)
                return .none
            }
        }

        /// The error the pair failed with, if any.
        package var failure: (any Error)? {
            if case .failed(let error, _) = state { return error }
            return nil
        }

        package var readerStatus: Stream.Status {
            switch state {
            case .failed: return .error
            case .readerClosed, .finished: return .closed
            case .writerNotOpen(.notOpen), .streaming(.notOpen, _), .writerClosed(.notOpen): return .notOpen
            case .writerClosed(.open): return ring.isEmpty ? .atEnd : .open
            case .writerNotOpen(.open), .streaming(.open, _): return .open
            }
        }

        package var writerStatus: Stream.Status {
            switch state {
            case .failed: return .error
            case .writerNotOpen, .readerClosed(.notOpen): return .notOpen
            case .streaming: return .open
            case .readerClosed(.open): return .atEnd
            case .writerClosed, .finished: return .closed
            }
        }
    }
}
