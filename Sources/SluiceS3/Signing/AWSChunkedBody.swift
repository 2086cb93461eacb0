@_spi(Floors) import SluicePrimitives
import SluiceByteSources

/// A body encoded as `aws-chunked` on the fly: a random-access `ByteSource` whose bytes are the
/// encoding of another source, chunk signatures and trailer checksum computed as it is read.
///
/// Reading in order costs one pass over the source: each chunk is read once into a
/// `chunkSize` buffer, hashed (SHA-256 for the signature, the trailer checksum) and served from
/// there. Signed modes read and hash the next chunks ahead on another core
/// (`AWSChunkReadAhead`, up to about 2 MiB) while the current one is sent. A read that goes back to an earlier chunk (a replay from byte 0, a redirect) starts
/// the signature chain again from the first chunk; the bytes come out the same.
///
/// - Important: Memory: the read-ahead ring in signed modes (`readAhead`, none for a
///   `ResidentByteSource`, whose chunks are hashed and sent in place), else one `chunkSize`
///   buffer (none for a resident source). Reads may come from any thread; they are
///   serialised (the chain is sequential): a read claims the cursor under a lock and runs the
///   chain with the lock released, so no lock is held across a read of the source. An engine
///   loop reads with `read(into:at:wake:)`, which never waits for the read-ahead, and ends it
///   with `endReading(then:)` when its request ends.
public final class AWSChunkedBody: ByteSource, ReadAheadByteSource, SectionedByteSource {
    /// The payload: the bytes the chunks carry.
    public let source: any ByteSource
    /// The framing: mode, chunk size, lengths and the seed signature's context.
    public let encoding: AWSChunkedEncoding
    package let signer: AWSChunkSigner?
    /// The cursor while no read holds it; nil while one does.
    private let cursor: Lock<AWSChunkedCursor?>
    private let readAhead: AWSChunkReadAhead?

    /// The aws-chunked encoding of `source`.
    ///
    /// - Parameters:
    ///   - source: The decoded bytes; its length must be `encoding.decodedLength`.
    ///   - encoding: Mode, chunk size, trailer.
    ///   - signer: The chunk signer from the request's signature; required for signed modes.
    ///   - readAhead: The most memory, in bytes, for chunks read and hashed ahead in signed
    ///     modes (2 MiB by default; below two chunks, each chunk is hashed as it is read).
    /// - Throws: `SigV4Error.invalidPayload` when the lengths differ or a signed mode has no signer.
    public init(
        _ source: any ByteSource, encoding: AWSChunkedEncoding, signer: AWSChunkSigner?,
        readAhead: Int = AWSChunkedBody.defaultReadAhead
    ) throws {
        guard source.length == encoding.decodedLength else {
            throw SigV4Error(.invalidPayload, "the source holds \(source.length) bytes, the encoding says \(encoding.decodedLength)")
        }
        guard !encoding.isSigned || signer != nil else {
            throw SigV4Error(.invalidPayload, "signed aws-chunked needs the request's signature")
        }
        self.source = source
        self.encoding = encoding
        self.signer = signer
        let ring = encoding.isSigned ? AWSChunkReadAhead.make(source: source, encoding: encoding, limit: readAhead) : nil
        self.readAhead = ring
        cursor = Lock(
            AWSChunkedCursor(
                encoding: encoding, seed: signer?.seedSignature ?? "", readAhead: ring,
                residentSource: source is any ResidentByteSource))
    }

    /// The read-ahead memory of a signed body unless told otherwise: 2 MiB.
    public static var defaultReadAhead: Int { AWSChunkReadAhead.defaultBytes }

    public var length: Int64 { encoding.encodedLength }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        // Without a wake-up the chain waits for the read-ahead, so it always has an answer.
        try read(into: buffer, at: offset, waking: nil)!
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, wake: @escaping @Sendable () -> Void) throws -> Int? {
        try read(into: buffer, at: offset, waking: wake)
    }

    private func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64, waking wake: (@Sendable () -> Void)?) throws -> Int? {
        guard offset >= 0, offset <= length else {
            throw ByteSourceError.offsetOutOfRange(offset: offset, length: length)
        }
        guard !buffer.isEmpty, offset < length else { return 0 }
        return try withCursor { cursor in
            var written = 0
            var position = offset
            while written < buffer.count, position < length {
                let (index, start) = section(containing: position)
                if position == start, cursor.readsInPlace(index) {
                    // A whole section goes straight into the caller's buffer: its data read
                    // there and hashed in place, with no copy through a chunk buffer.
                    let rest = UnsafeMutableRawBufferPointer(rebasing: buffer[written...])
                    if let count = try cursor.loadInPlace(index, from: source, signer: signer, into: rest) {
                        written += count
                        position += Int64(count)
                        continue
                    }
                    // It does not fit: a short read, so the next one starts with the section
                    // and a whole buffer (when a buffer can hold a section at all).
                    if written > 0, encoding.encodedChunkLength(cursor.dataSize(index)) <= buffer.count { break }
                }
                // Not ready: what was copied goes now, the rest when the read-ahead wakes the reader.
                guard try cursor.load(index, from: source, signer: signer, wake: wake) else { return written > 0 ? written : nil }
                let count = cursor.copy(from: Int(position - start), into: UnsafeMutableRawBufferPointer(rebasing: buffer[written...]))
                written += count
                position += Int64(count)
            }
            return written
        }
    }

    package func endReading(then: @escaping @Sendable () -> Void) {
        guard let readAhead else { return then() }
        readAhead.end(then: then)
    }

    package func readSize(near size: Int) -> Int {
        let section = Int(encoding.encodedChunkLength(encoding.chunkSize))
        let whole = (size + section - 1) / section * section
        return whole - size <= size / 16 ? whole : size
    }

    /// Whether the read-ahead's producer is at work (for tests).
    package var isReadingAhead: Bool { readAhead?.isRunning ?? false }

    /// Whether the read-ahead was ended (`endReading`; for tests).
    package var isReadAheadEnded: Bool { readAhead?.isEnded ?? false }

    /// Runs `body` with the cursor, claimed under the lock and used with it released; a
    /// second reader waits for it.
    private func withCursor<R>(_ body: (AWSChunkedCursor) throws -> R) rethrows -> R {
        let claimed = cursor.wait { cursor -> AWSChunkedCursor? in
            defer { cursor = nil }
            return cursor
        }
        defer { cursor.withLockBroadcasting { $0 = claimed } }
        return try body(claimed)
    }

    /// The trailer's checksum of the whole source (reading it to the end first if the encoded
    /// body has not been read that far); nil without a trailer.
    ///
    /// - Throws: The source's error.
    public func trailerChecksum() throws -> Checksum? {
        guard encoding.trailer != nil else { return nil }
        return try withCursor { cursor in
            _ = try cursor.load(encoding.dataChunkCount, from: source, signer: signer, wake: nil)
            return cursor.finalChecksum
        }
    }

    /// How many times the signature chain was started from the first chunk (1 after any
    /// number of in-order reads; one more for each read that went backwards).
    public var passCount: Int { withCursor { $0.passCount } }

    /// Bytes of chunk buffers the signed read-ahead holds (0 without one, or for a
    /// `ResidentByteSource`).
    package var readAheadMemoryBytes: Int { readAhead?.slotMemoryBytes ?? 0 }

    /// Bytes of the chunk buffer sections were copied through (0 while every chunk was read
    /// ahead, resident, or read straight into the reader's buffer).
    package var chunkBufferBytes: Int { withCursor { $0.chunkBufferBytes } }

    /// Source bytes read and hashed so far, over all passes.
    public var bytesHashed: Int64 { withCursor { $0.bytesHashed } }

    /// The section (data chunk index, or `dataChunkCount` for the final one) holding encoded
    /// offset `position`, and where that section starts.
    package func section(containing position: Int64) -> (index: Int64, start: Int64) {
        let full = encoding.decodedLength / Int64(encoding.chunkSize)
        let fullLength = encoding.encodedChunkLength(encoding.chunkSize)
        if position < full * fullLength { return (position / fullLength, position / fullLength * fullLength) }
        let finalStart = encoding.encodedLength - encoding.finalSectionLength
        if position < finalStart { return (full, full * fullLength) }
        return (encoding.dataChunkCount, finalStart)
    }
}

/// The chain state of an `AWSChunkedBody`: chunks hashed so far, the last signature, the
/// running checksum, and the one section held in memory.
// @unchecked Sendable: used by one reader at a time, which claims it from AWSChunkedBody's
// lock and puts it back there (the lock orders the hand-overs).
package final class AWSChunkedCursor: @unchecked Sendable {
    package let encoding: AWSChunkedEncoding
    package let seed: String
    /// One chunk's bytes read from the source; allocated on first use (a read-ahead or a
    /// resident source never needs it).
    private var chunkBuffer: UnsafeMutableRawBufferPointer?
    package let readAhead: AWSChunkReadAhead?
    /// Whether the source's bytes are in memory already (asked once: a cast to a protocol
    /// costs a lookup, and a body is read a chunk at a time).
    package let residentSource: Bool
    /// The held chunk's data: in `buffer`, in a read-ahead slot, or in a resident source.
    package var data = UnsafeRawBufferPointer(start: nil, count: 0)
    /// Chunks `0 ..< nextChunk` are in the chain.
    package var nextChunk: Int64 = 0
    package var previousSignature: String
    package var checksum: ChecksumHasher?
    /// The section held: its header line (or the whole final section) and data bytes in `buffer`.
    package var loadedIndex: Int64 = -1
    package var head: [UInt8] = []
    package var dataCount = 0
    package var finalChecksum: Checksum?
    package var passCount = 0
    package var bytesHashed: Int64 = 0

    package init(encoding: AWSChunkedEncoding, seed: String, readAhead: AWSChunkReadAhead?, residentSource: Bool) {
        self.encoding = encoding
        self.seed = seed
        self.readAhead = readAhead
        self.residentSource = residentSource
        previousSignature = seed
    }

    deinit { chunkBuffer?.deallocate() }

    package var chunkBufferBytes: Int { chunkBuffer?.count ?? 0 }

    private var buffer: UnsafeMutableRawBufferPointer {
        if let chunkBuffer { return chunkBuffer }
        let allocated = UnsafeMutableRawBufferPointer.allocate(
            byteCount: Int(min(Int64(encoding.chunkSize), max(encoding.decodedLength, 1))), alignment: 64)
        chunkBuffer = allocated
        return allocated
    }

    private func restart() {
        nextChunk = 0
        previousSignature = seed
        checksum = encoding.trailer.map(ChecksumHasher.init)
        loadedIndex = -1
        finalChecksum = nil
        passCount += 1
        readAhead?.restart()
    }

    /// Makes section `index` the one held, running the chain up to it.
    ///
    /// - Parameter wake: nil to wait for the read-ahead; else see `AWSChunkReadAhead.take`.
    /// - Returns: false when a chunk on the way is not read ahead yet (`wake` is called when
    ///   it is); the chain stays where it got to.
    package func load(_ index: Int64, from source: any ByteSource, signer: AWSChunkSigner?, wake: (@Sendable () -> Void)?) throws -> Bool {
        if index == loadedIndex { return true }
        if passCount == 0 || index < nextChunk { restart() }
        while nextChunk < index {
            guard try advance(source, signer, wake) else { return false }
        }
        if index < encoding.dataChunkCount {
            guard try advance(source, signer, wake) else { return false }
        } else {
            loadFinal(signer)
        }
        loadedIndex = index
        return true
    }

    /// The data bytes of chunk `index`.
    package func dataSize(_ index: Int64) -> Int {
        Int(min(Int64(encoding.chunkSize), encoding.decodedLength - index * Int64(encoding.chunkSize)))
    }

    /// Whether data chunk `index` can be read straight into a reader's buffer: it is the next
    /// one in the chain, and its bytes would otherwise be copied into the chunk buffer (not
    /// read ahead, not resident).
    package func readsInPlace(_ index: Int64) -> Bool {
        guard readAhead == nil, !residentSource, index < encoding.dataChunkCount else { return false }
        return passCount == 0 ? index == 0 : index == nextChunk
    }

    /// Puts as many whole sections as fit into `target`, from chunk `index` (see
    /// `readsInPlace`) on: each one's data read after the room for its header line, the data
    /// hashed two chunks at a time (`SigningCrypto.sha256(_:_:)`) and signed in order there,
    /// then the header lines and closing CRLFs around them.
    ///
    /// - Returns: The sections' length, or nil when not even the first fits in `target`
    ///   (nothing changed).
    /// - Throws: The source's error; `ByteSourceError.endedEarly` when it is short. The chain
    ///   has not moved then: every read comes before the first signature.
    package func loadInPlace(
        _ index: Int64, from source: any ByteSource, signer: AWSChunkSigner?,
        into target: UnsafeMutableRawBufferPointer
    ) throws -> Int? {
        // Where each section's data goes in `target`.
        var placed: [UnsafeMutableRawBufferPointer] = []
        var length = 0
        var chunk = index
        while chunk < encoding.dataChunkCount {
            let size = dataSize(chunk)
            let headLength = encoding.chunkHeaderLength(size)
            guard length + headLength + size + 2 <= target.count else { break }
            placed.append(UnsafeMutableRawBufferPointer(rebasing: target[length + headLength..<length + headLength + size]))
            length += headLength + size + 2
            chunk += 1
        }
        guard !placed.isEmpty else { return nil }
        if passCount == 0 { restart() }
        for (number, bytes) in placed.enumerated() {
            let start = (index + Int64(number)) * Int64(encoding.chunkSize)
            let read = try source.readFully(into: bytes, at: start)
            guard read == bytes.count else { throw ByteSourceError.endedEarly(offset: start + Int64(read), expected: source.length) }
        }
        // The chunk buffer's section (if any) is not the one held any more.
        loadedIndex = -1
        data = UnsafeRawBufferPointer(start: nil, count: 0)
        // Unsigned modes hash nothing (the trailer's checksum is updated in `chain`).
        let hashes = signer.map { _ in SigningCrypto.sha256(eachOf: placed.map(UnsafeRawBufferPointer.init)) }
        var sectionStart = 0
        for (number, bytes) in placed.enumerated() {
            let line = chain(UnsafeRawBufferPointer(bytes), hash: hashes?[number], signer: signer)
            let headLength = encoding.chunkHeaderLength(bytes.count)
            precondition(line.count == headLength, "aws-chunked header length mismatch")
            line.withUnsafeBytes { target.baseAddress!.advanced(by: sectionStart).copyMemory(from: $0.baseAddress!, byteCount: headLength) }
            target[sectionStart + headLength + bytes.count] = 0x0D
            target[sectionStart + headLength + bytes.count + 1] = 0x0A
            sectionStart += headLength + bytes.count + 2
        }
        return length
    }

    /// Puts chunk `nextChunk`'s data, hashed as `hash` (computed when nil), in the signature
    /// chain and the trailer's checksum, and moves the chain on.
    ///
    /// - Returns: The chunk's header line, `\r\n` included.
    private func chain(_ bytes: UnsafeRawBufferPointer, hash: [UInt8]?, signer: AWSChunkSigner?) -> [UInt8] {
        var line = Array(String(bytes.count, radix: 16).utf8)
        line.reserveCapacity(line.count + 17 + 64 + 2)
        if let signer {
            previousSignature = signer.chunkSignature(previous: previousSignature, dataHash: hash ?? SigningCrypto.sha256(bytes))
            line.append(contentsOf: ";chunk-signature=".utf8)
            line.append(contentsOf: previousSignature.utf8)
        }
        line.append(contentsOf: [0x0D, 0x0A])
        checksum?.update(bytes)
        bytesHashed += Int64(bytes.count)
        nextChunk += 1
        return line
    }

    /// Reads, hashes and signs chunk `nextChunk` into `data` and `head`; false when the
    /// read-ahead does not hold it yet (nothing changed).
    private func advance(_ source: any ByteSource, _ signer: AWSChunkSigner?, _ wake: (@Sendable () -> Void)?) throws -> Bool {
        let start = nextChunk * Int64(encoding.chunkSize)
        let size = dataSize(nextChunk)
        // The held section's bytes may go (a read-ahead slot reused, the buffer overwritten).
        loadedIndex = -1
        var hash: [UInt8]?
        switch try readAhead?.take(nextChunk, wake: wake) {
        case .chunk(let bytes, let digest)?:
            (data, hash) = (bytes, digest)
        case .notReady?:
            return false
        case .ended?, nil:
            data = try source.bytes(at: start, count: size) { buffer }
        }
        head = chain(data, hash: hash, signer: signer)
        dataCount = size
        loadedIndex = nextChunk - 1
        return true
    }

    /// The final empty chunk, trailer and closing CRLF, once every data chunk is in the chain.
    private func loadFinal(_ signer: AWSChunkSigner?) {
        var text: String
        var finalSignature = ""
        if let signer {
            finalSignature = signer.chunkSignature(previous: previousSignature, dataHash: [UInt8]().withUnsafeBytes { SigningCrypto.sha256($0) })
            text = "0;chunk-signature=\(finalSignature)\r\n"
        } else {
            text = "0\r\n"
        }
        if let checksum {
            let value = checksum.finalize()
            finalChecksum = value
            let line = "\(value.algorithm.headerName):\(value.base64)"
            text += line + "\r\n"
            if let signer {
                text += "x-amz-trailer-signature:\(signer.trailerSignature(previous: finalSignature, trailer: line + "\n"))\r\n"
            }
        }
        text += "\r\n"
        head = Array(text.utf8)
        dataCount = 0
        precondition(Int64(head.count) == encoding.finalSectionLength, "aws-chunked final section length mismatch")
    }

    /// Copies the held section's bytes from `offset` (header, data, CRLF) into `target`.
    package func copy(from offset: Int, into target: UnsafeMutableRawBufferPointer) -> Int {
        var written = 0
        var position = offset
        func put(_ bytes: UnsafeRawBufferPointer, at base: Int) {
            guard position >= base, position < base + bytes.count, written < target.count else { return }
            let count = min(bytes.count - (position - base), target.count - written)
            target.baseAddress!.advanced(by: written).copyMemory(from: bytes.baseAddress!.advanced(by: position - base), byteCount: count)
            written += count
            position += count
        }
        head.withUnsafeBytes { put($0, at: 0) }
        if loadedIndex < encoding.dataChunkCount {
            put(data, at: head.count)
            let crlf: [UInt8] = [0x0D, 0x0A]
            crlf.withUnsafeBytes { put($0, at: head.count + dataCount) }
        }
        return written
    }
}
