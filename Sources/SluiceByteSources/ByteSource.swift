/// Random-access bytes of a known length: a file, an asset, a generated stream.
///
/// Random-access sources can be replayed (a redirect, an auth challenge, a resumed
/// upload): a reader asks for any range again, and gets the same bytes.
///
/// - Important: `read(into:at:)` may be called from any thread, and concurrently for
///   different ranges. Implementations are `Sendable` and keep no read cursor.
public protocol ByteSource: Sendable {
    /// The number of bytes this source holds.
    var length: Int64 { get }

    /// Copies bytes starting at an absolute offset into `buffer`.
    ///
    /// A short read is normal: the call may return fewer bytes than asked for, even
    /// when more follow. It returns 0 only when `buffer` is empty or `offset` is at
    /// or past the end of what the source can deliver.
    ///
    /// - Parameters:
    ///   - buffer: Where the bytes go; up to `buffer.count` are written.
    ///   - offset: The absolute offset of the first byte, `0 ... length`.
    /// - Returns: The number of bytes written into `buffer`.
    /// - Throws: `ByteSourceError` (or the source's own error) when the bytes cannot be read.
    func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int

    /// Whether every read gives the bytes of one version or fails: a remote source whose ranges
    /// are pinned to its validator, a synthetic source. What one run learned of its bytes (a
    /// part's checksum) then holds for a later run of the same source, which need not read them
    /// again. False by default: a file can be rewritten in place.
    var isPinned: Bool { get }
}

extension ByteSource {
    public var isPinned: Bool { false }

    /// Fills `buffer` completely from `offset`, looping over short reads.
    ///
    /// - Returns: The bytes read; fewer than `buffer.count` only when the source ended.
    /// - Throws: The source's error.
    public func readFully(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        var done = 0
        while done < buffer.count {
            let count = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[done...]), at: offset + Int64(done))
            if count == 0 { break }
            done += count
        }
        return done
    }

    /// Reads `range` into a new array; for tests and small sources (`SourceSnapshot`).
    public func bytes(in range: Range<Int64>) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: Int(range.count))
        let count = try result.withUnsafeMutableBytes { try readFully(into: $0, at: range.lowerBound) }
        if count < result.count {
            throw ByteSourceError.endedEarly(offset: range.lowerBound + Int64(count), expected: range.upperBound)
        }
        return result
    }
}

/// Bytes that arrive in order, once: stdin, a pipe, a socket, a producer.
///
/// - Important: `read(into:)` may block until bytes arrive. It is called from one
///   thread at a time. A sequential source cannot be replayed.
public protocol SequentialByteSource: Sendable {
    /// The total length when the producer knows it in advance.
    var length: BodyLength { get }

    /// Reads the next bytes into `buffer`.
    ///
    /// - Returns: The number of bytes read, 0 at the end. Short reads are normal.
    /// - Throws: The producer's error.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}
