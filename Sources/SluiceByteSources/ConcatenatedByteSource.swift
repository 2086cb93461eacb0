/// Several sources read back to back as one.
///
/// A read never crosses a part boundary, so it may be short at each boundary.
public struct ConcatenatedByteSource: ByteSource {
    /// The sources, in order; the length is the sum of theirs.
    public let parts: [any ByteSource]
    public let length: Int64
    /// `starts[i]` is the absolute offset of `parts[i]`; one extra entry holds `length`.
    private let starts: [Int64]

    /// One source of `parts`, one after the other.
    ///
    /// - Throws: `ByteSourceError.invalidSpecification` when the total length does not fit
    ///   in `Int64` (or a part reports a negative length).
    public init(_ parts: [any ByteSource]) throws(ByteSourceError) {
        self.parts = parts
        var starts: [Int64] = []
        starts.reserveCapacity(parts.count + 1)
        var total: Int64 = 0
        for (index, part) in parts.enumerated() {
            starts.append(total)
            guard part.length >= 0 else {
                throw ByteSourceError.invalidSpecification("part \(index) of a concatenation reports a negative length (\(part.length))")
            }
            let (sum, overflow) = total.addingReportingOverflow(part.length)
            guard !overflow else {
                throw ByteSourceError.invalidSpecification(
                    "the parts of a concatenation add up to more than \(Int64.max) bytes (at part \(index))")
            }
            total = sum
        }
        starts.append(total)
        self.starts = starts
        self.length = total
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard offset >= 0, offset <= length else {
            throw ByteSourceError.offsetOutOfRange(offset: offset, length: length)
        }
        if buffer.isEmpty || offset == length { return 0 }
        // Binary search for the last part that starts at or before `offset` and is not empty.
        var low = 0
        var high = parts.count - 1
        while low < high {
            let middle = (low + high + 1) / 2
            if starts[middle] <= offset { low = middle } else { high = middle - 1 }
        }
        var index = low
        while index < parts.count && starts[index + 1] <= offset { index += 1 }
        let part = parts[index]
        let local = offset - starts[index]
        let room = min(Int64(buffer.count), part.length - local)
        let count = try part.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<Int(room)]), at: local)
        if count == 0 && room > 0 {
            throw ByteSourceError.endedEarly(offset: offset, expected: length)
        }
        return count
    }
}
