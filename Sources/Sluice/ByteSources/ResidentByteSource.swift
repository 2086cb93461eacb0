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
