import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceBoundStreams

/// One part of a stream held in memory: filled from the stream, then sent (and re-sent on a
/// retry) as a `ByteSource`. Resident: a signed body hashes its chunks in place, so the part
/// is the only copy of its bytes in memory.
///
/// - Important: Memory: `capacity` bytes, allocated once and reused for later parts. It is
///   written only by `fill`, which waits until no reader is inside (`ReusedByteSource`: a
///   read-ahead counts itself in for each chunk it reads, a copy out for its duration) and
///   keeps new readers out (`EBUSY`) until it is done; the pool hands it out again only after
///   the requests that read it ended.
// @unchecked Sendable: the bytes in `storage` are written only by `fill`, with no reader
// inside; the pointer, the count and the readers live behind one lock, which every reader
// takes before it looks at the bytes (so each hand-over is ordered, whatever thread filled).
package final class S3PartBuffer: ResidentByteSource, ReusedByteSource, @unchecked Sendable {
    private struct State {
        package var storage: UnsafeMutableRawBufferPointer
        package var count = 0
        package var inside = 0
        package var refilling = false
    }

    private let state: Lock<State>

    package init(capacity: Int) {
        state = Lock(State(storage: .allocate(byteCount: max(1, capacity), alignment: 64)))
    }

    deinit { state.withLock { $0.storage.deallocate() } }

    package var capacity: Int { state.withLock { $0.storage.count } }
    package var length: Int64 { state.withLock { Int64($0.count) } }

    package func enterReader() throws {
        try state.withLock { state in
            guard !state.refilling else { throw ByteSourceError.system(operation: "read", path: "a stream part being refilled", errno: EBUSY) }
            state.inside += 1
        }
    }

    package func leaveReader() {
        state.withLockBroadcasting { $0.inside -= 1 }
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try whileReading {
            let (storage, count) = state.withLock { ($0.storage, $0.count) }
            guard offset >= 0, offset <= Int64(count) else { throw ByteSourceError.offsetOutOfRange(offset: offset, length: Int64(count)) }
            let n = min(buffer.count, count - Int(offset))
            if n > 0 { buffer.baseAddress!.copyMemory(from: storage.baseAddress! + Int(offset), byteCount: n) }
            return n
        }
    }

    package func residentBytes(at offset: Int64, count: Int) -> UnsafeRawBufferPointer {
        let (storage, held) = state.withLock { ($0.storage, $0.count) }
        precondition(offset >= 0 && Int(offset) + count <= held, "resident range outside the part")
        return UnsafeRawBufferPointer(rebasing: storage[Int(offset)..<Int(offset) + count])
    }

    /// Reads up to `size` bytes from `stream` (growing the buffer first if needed), once no
    /// reader is inside; stops early only at the end of the stream. A descriptor's stream
    /// (stdin, a pipe) is read only once it is readable, a wait that `interrupt` ends at once
    /// and that fails with `BoundStreamPair.ProducerStalled` after `stallTimeout` of silence.
    ///
    /// - Returns: The bytes held (0 at the end of the stream).
    /// - Throws: The stream's error; `ReadInterrupt.Interrupted`; `BoundStreamPair.ProducerStalled`.
    package func fill(from stream: any SequentialByteSource, size: Int, interrupt: ReadInterrupt? = nil, stallTimeout: Duration? = nil) throws -> Int {
        let storage = state.wait { state -> UnsafeMutableRawBufferPointer? in
            guard state.inside == 0 else { return nil }
            state.refilling = true
            state.count = 0
            if size > state.storage.count {
                state.storage.deallocate()
                state.storage = .allocate(byteCount: size, alignment: 64)
            }
            return state.storage
        }
        var count = 0
        defer {
            state.withLock { state in
                state.count = count
                state.refilling = false
            }
        }
        let descriptor = (stream as? FileDescriptorStream)?.fd
        while count < size {
            if let interrupt, let descriptor { try interrupt.waitReadable(descriptor, stallTimeout: stallTimeout) }
            let n = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: storage[count..<size]))
            if n == 0 { break }
            count += n
        }
        return count
    }
}
