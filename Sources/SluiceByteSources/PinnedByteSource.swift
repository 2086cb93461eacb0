/// Bytes at one address for as long as the source lives, read into it once: a transport may
/// hand that address to C code that reads the bytes later (libcurl's POSTFIELDS) instead of
/// copying them first. What a small file's snapshot is read into (`SourceSnapshot.File`).
///
/// - Important: The bytes are never written after `init`; the memory is freed with the
///   source, so whoever hands out `memory` keeps the source alive until it is no longer read.
package final class PinnedByteSource: ByteSource, @unchecked Sendable {
    /// The bytes.
    package let memory: UnsafeRawBufferPointer
    private let allocation: UnsafeMutableRawBufferPointer

    package var length: Int64 { Int64(memory.count) }

    /// `count` bytes, each written by `fill` (which must write them all, or throw).
    package init(count: Int, _ fill: (UnsafeMutableRawBufferPointer) throws -> Void) throws {
        allocation = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        let bytes = UnsafeMutableRawBufferPointer(rebasing: allocation[0..<count])
        do { try fill(bytes) } catch {
            allocation.deallocate()
            throw error
        }
        memory = UnsafeRawBufferPointer(bytes)
    }

    /// `count` bytes of `source` from `offset`, read whole.
    ///
    /// - Throws: `ByteSourceError.endedEarly` when the source ends first; what its reads throw.
    package convenience init(count: Int, of source: some ByteSource, at offset: Int64 = 0) throws {
        try self.init(count: count) { buffer in
            let read = try source.readFully(into: buffer, at: offset)
            if read < count { throw ByteSourceError.endedEarly(offset: offset + Int64(read), expected: offset + Int64(count)) }
        }
    }

    deinit { allocation.deallocate() }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= length else { throw ByteSourceError.offsetOutOfRange(offset: offset, length: length) }
        let count = min(buffer.count, memory.count - Int(offset))
        if count > 0 { buffer.baseAddress!.copyMemory(from: memory.baseAddress! + Int(offset), byteCount: count) }
        return count
    }
}
