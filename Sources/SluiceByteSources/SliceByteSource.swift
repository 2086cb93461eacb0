/// A range of another source, seen from offset 0.
public struct SliceByteSource: ByteSource {
    /// The source the slice reads from.
    public let base: any ByteSource
    /// The bytes of `base` the slice covers; its offset 0 is `range.lowerBound`.
    public let range: Range<Int64>
    public var length: Int64 { Int64(range.count) }

    /// The bytes of `base` in `range`.
    ///
    /// - Throws: `ByteSourceError.offsetOutOfRange` when `range` is not inside `base`.
    public init(_ base: any ByteSource, range: Range<Int64>) throws(ByteSourceError) {
        guard range.lowerBound >= 0 else {
            throw ByteSourceError.offsetOutOfRange(offset: range.lowerBound, length: base.length)
        }
        guard range.upperBound <= base.length else {
            throw ByteSourceError.offsetOutOfRange(offset: range.upperBound, length: base.length)
        }
        self.base = base
        self.range = range
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= length else {
            throw ByteSourceError.offsetOutOfRange(offset: offset, length: length)
        }
        let room = Int(min(Int64(buffer.count), length - offset))
        if room == 0 { return 0 }
        return try base.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<room]), at: range.lowerBound + offset)
    }
}
