/// Bytes held in memory. For small bodies, form fields and tests.
public struct MemoryByteSource: ByteSource {
    /// The bytes, read at any offset.
    public let bytes: [UInt8]
    public var length: Int64 { Int64(bytes.count) }

    /// A source of these bytes.
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
    /// A source of the string's UTF-8 bytes.
    public init(_ string: String) { self.bytes = Array(string.utf8) }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= length else {
            throw ByteSourceError.offsetOutOfRange(offset: offset, length: length)
        }
        let start = Int(offset)
        let count = min(buffer.count, bytes.count - start)
        if count == 0 { return 0 }
        bytes.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress! + start, byteCount: count)
        }
        return count
    }
}
