import Foundation

/// One part of a stream held in memory: filled from the stream, then sent (and re-sent on a
/// retry) as a `ByteSource`. Resident: a signed body hashes its chunks in place, so the part
/// is the only copy of its bytes in memory.
///
/// - Important: Memory: `capacity` bytes, allocated once and reused for later parts. It is
///   written only by `fill`, which waits until no reader is inside (`ReusedByteSource`: a
///   read-ahead counts itself in for each chunk it reads, a copy out for its duration) and
///   keeps new readers out (`EBUSY`) until it is done; the pool hands it out again only after
///   the requests that read it ended.
// @unchecked Sendable: `storage` and `count` change only in `fill`, with no reader inside;
// `readers` (a lock) orders every hand-over.
final class S3PartBuffer: ResidentByteSource, ReusedByteSource, @unchecked Sendable {
    private struct Readers {
        var inside = 0
        var refilling = false
    }

    private(set) var storage: UnsafeMutableRawBufferPointer
    private(set) var count = 0
    private let readers = Lock(Readers())

    init(capacity: Int) {
        storage = .allocate(byteCount: max(1, capacity), alignment: 64)
    }

    deinit { storage.deallocate() }

    var capacity: Int { storage.count }
    var length: Int64 { Int64(count) }

    func enterReader() throws {
        try readers.withLock { readers in
            guard !readers.refilling else { throw ByteSourceError.system(operation: "read", path: "a stream part being refilled", errno: EBUSY) }
            readers.inside += 1
        }
    }

    func leaveReader() {
        readers.withLockBroadcasting { $0.inside -= 1 }
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        try whileReading { try copy(into: buffer, at: offset) }
    }

    private func copy(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= Int64(count) else { throw ByteSourceError.offsetOutOfRange(offset: offset, length: Int64(count)) }
        let n = min(buffer.count, count - Int(offset))
        if n > 0 { buffer.baseAddress!.copyMemory(from: storage.baseAddress! + Int(offset), byteCount: n) }
        return n
    }

    func residentBytes(at offset: Int64, count: Int) -> UnsafeRawBufferPointer {
        precondition(offset >= 0 && Int(offset) + count <= self.count, "resident range outside the part")
        return UnsafeRawBufferPointer(rebasing: storage[Int(offset)..<Int(offset) + count])
    }

    /// Reads up to `size` bytes from `stream` (growing the buffer first if needed), once no
    /// reader is inside; stops early only at the end of the stream. A descriptor's stream
    /// (stdin, a pipe) is read only once it is readable, a wait that `interrupt` ends at once.
    ///
    /// - Returns: The bytes held (0 at the end of the stream).
    /// - Throws: The stream's error; `ReadInterrupt.Interrupted`.
    func fill(from stream: any SequentialByteSource, size: Int, interrupt: ReadInterrupt? = nil) throws -> Int {
        readers.wait { readers -> Void? in
            guard readers.inside == 0 else { return nil }
            readers.refilling = true
            return ()
        }
        defer { readers.withLock { $0.refilling = false } }
        if size > storage.count {
            storage.deallocate()
            storage = .allocate(byteCount: size, alignment: 64)
        }
        count = 0
        let descriptor = (stream as? FileDescriptorStream)?.fd
        while count < size {
            if let interrupt, let descriptor { try interrupt.waitReadable(descriptor) }
            let n = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: storage[count..<size]))
            if n == 0 { break }
            count += n
        }
        return count
    }
}
