import SluicePrimitives

extension Digest {
    /// SHA-256 of a whole source, read in `chunkSize` pieces the way uploads read it.
    ///
    /// - Throws: The source's error, or `ByteSourceError.endedEarly` if it is short.
    public static func sha256(of source: any ByteSource, chunkSize: Int = 1 << 20) throws -> String {
        let digest = Digest(.sha256)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < source.length {
            let want = Int(min(Int64(chunkSize), source.length - offset))
            let count = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[..<want]), at: offset)
            if count == 0 { throw ByteSourceError.endedEarly(offset: offset, expected: source.length) }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            offset += Int64(count)
        }
        return digest.finalizeHex()
    }

    /// SHA-256 of a sequential source, read to its end.
    public static func sha256(of source: any SequentialByteSource, chunkSize: Int = 1 << 20) throws -> (hex: String, count: Int64) {
        let digest = Digest(.sha256)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let count = try source.read(into: buffer)
            if count == 0 { break }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            total += Int64(count)
        }
        return (digest.finalizeHex(), total)
    }
}
