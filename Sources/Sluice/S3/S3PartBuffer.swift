import Foundation

/// One part of a stream held in memory: filled from the stream, then sent (and re-sent on a
/// retry) as a `ByteSource`. Resident: a signed body hashes its chunks in place, so the part
/// is the only copy of its bytes in memory.
///
/// - Important: Memory: `capacity` bytes, allocated once and reused for later parts. It is
///   written only by `fill`, before the part is handed to a request, and only read while the
///   request runs; the pool never hands it out again before the request ended.
// @unchecked Sendable: the fill-then-read hand-over above orders every access.
final class S3PartBuffer: ResidentByteSource, @unchecked Sendable {
    private(set) var storage: UnsafeMutableRawBufferPointer
    private(set) var count = 0

    init(capacity: Int) {
        storage = .allocate(byteCount: max(1, capacity), alignment: 64)
    }

    deinit { storage.deallocate() }

    var capacity: Int { storage.count }
    var length: Int64 { Int64(count) }

    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= Int64(count) else { throw ByteSourceError.offsetOutOfRange(offset: offset, length: Int64(count)) }
        let n = min(buffer.count, count - Int(offset))
        if n > 0 { buffer.baseAddress!.copyMemory(from: storage.baseAddress! + Int(offset), byteCount: n) }
        return n
    }

    func residentBytes(at offset: Int64, count: Int) -> UnsafeRawBufferPointer {
        precondition(offset >= 0 && Int(offset) + count <= self.count, "resident range outside the part")
        return UnsafeRawBufferPointer(rebasing: storage[Int(offset)..<Int(offset) + count])
    }

    /// Reads up to `size` bytes from `stream` (growing the buffer first if needed); stops
    /// early only at the end of the stream. A descriptor's stream (stdin, a pipe) is read only
    /// once it is readable, a wait that `interrupt` ends at once.
    ///
    /// - Returns: The bytes held (0 at the end of the stream).
    /// - Throws: The stream's error; `ReadInterrupt.Interrupted`.
    func fill(from stream: any SequentialByteSource, size: Int, interrupt: ReadInterrupt? = nil) throws -> Int {
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
