/// A `ByteSource` whose bytes sit in memory, at a fixed address and unchanged, for as long as
/// the source lives. A reader that only looks at the bytes (hashing them for a chunk
/// signature, say) can use them in place instead of copying them into a buffer of its own.
package protocol ResidentByteSource: ByteSource {
    /// The `count` bytes from `offset`, in place.
    ///
    /// - Precondition: `0 <= offset`, `offset + count <= length`.
    /// - Returns: Memory valid while the source lives; the caller must not write to it.
    func residentBytes(at offset: Int64, count: Int) -> UnsafeRawBufferPointer
}

extension ByteSource {
    /// Bytes `offset ..< offset + count` of the source: in place for a `ResidentByteSource`,
    /// else read into the buffer `scratch` gives (at least `count` bytes; asked for only then).
    ///
    /// - Returns: Memory valid while the source lives (resident) or while `scratch`'s buffer does.
    /// - Throws: The source's error; `ByteSourceError.endedEarly` when it ends before
    ///   `offset + count`; `scratch`'s error (no memory for the buffer).
    package func bytes(at offset: Int64, count: Int, readingInto scratch: () throws -> UnsafeMutableRawBufferPointer) throws -> UnsafeRawBufferPointer {
        if let resident = self as? any ResidentByteSource { return resident.residentBytes(at: offset, count: count) }
        let target = UnsafeMutableRawBufferPointer(rebasing: try scratch()[..<count])
        let read = try readFully(into: target, at: offset)
        guard read == count else { throw ByteSourceError.endedEarly(offset: offset + Int64(read), expected: length) }
        return UnsafeRawBufferPointer(target)
    }
}
