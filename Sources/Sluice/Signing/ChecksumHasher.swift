#if canImport(CSluiceCrypto)
import CSluiceCrypto
#endif

/// An incremental checksum of any `ChecksumAlgorithm`.
///
/// - Important: Not thread-safe (one owner at a time); `finalize()` may be called more than
///   once for the CRCs, once for SHA-256.
public final class ChecksumHasher {
    /// The algorithm this hasher computes.
    public let algorithm: ChecksumAlgorithm
    private var crc: UInt32 = 0
    private var sha: Digest?
    /// Bytes fed so far.
    public private(set) var count: Int64 = 0

    /// A fresh hasher for `algorithm`.
    public init(_ algorithm: ChecksumAlgorithm) {
        self.algorithm = algorithm
        if algorithm == .sha256 { sha = Digest(.sha256) }
    }

    /// Adds `bytes` to the checksum, after what came before.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        count += Int64(bytes.count)
        switch algorithm {
        case .crc32c: crc = CRC.crc32c(crc, bytes)
        case .crc32: crc = CRC.crc32(crc, bytes)
        case .sha256: sha!.update(bytes)
        }
    }

    /// Adds `bytes` to the checksum, after what came before.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The checksum of everything fed.
    public func finalize() -> Checksum {
        switch algorithm {
        case .crc32c, .crc32: return Checksum(algorithm: algorithm, crc: crc)
        case .sha256: return Checksum(algorithm: .sha256, bytes: sha!.finalize())
        }
    }

    /// The checksum of `bytes`.
    public static func checksum(_ algorithm: ChecksumAlgorithm, of bytes: [UInt8]) -> Checksum {
        let hasher = ChecksumHasher(algorithm)
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// The checksum of a whole random-access source, read in `chunkSize` pieces.
    ///
    /// - Throws: The source's error, or `ByteSourceError.endedEarly` if it is short.
    public static func checksum(_ algorithm: ChecksumAlgorithm, of source: any ByteSource, chunkSize: Int = 256 << 10) throws -> Checksum {
        let hasher = ChecksumHasher(algorithm)
        try source.forEachChunk(chunkSize: chunkSize) { hasher.update($0) }
        return hasher.finalize()
    }
}

/// CRC-32C and CRC-32 over the C implementations in `CSluiceCrypto`.
public enum CRC {
    /// CRC-32C of `bytes`, continuing from `crc` (0 to start).
    public static func crc32c(_ crc: UInt32 = 0, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        sluice_crc32c(crc, bytes.baseAddress, bytes.count)
    }

    /// CRC-32C by tables only, never the CPU instruction (for cross-checks).
    public static func crc32cSoftware(_ crc: UInt32 = 0, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        sluice_crc32c_software(crc, bytes.baseAddress, bytes.count)
    }

    /// Whether `crc32c` uses the CPU's CRC32 instruction (SSE4.2).
    public static var crc32cUsesHardware: Bool { sluice_crc32c_is_hardware() != 0 }

    /// CRC-32 (IEEE, as zlib) of `bytes`, continuing from `crc` (0 to start).
    public static func crc32(_ crc: UInt32 = 0, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        sluice_crc32(crc, bytes.baseAddress, bytes.count)
    }

    /// The CRC of `A || B` from `crc(A)`, `crc(B)` and the length of `B`.
    public static func combine(_ algorithm: ChecksumAlgorithm, _ first: UInt32, _ second: UInt32, secondLength: Int64) -> UInt32 {
        switch algorithm {
        case .crc32c: return sluice_crc32c_combine(first, second, UInt64(secondLength))
        case .crc32: return sluice_crc32_combine(first, second, UInt64(secondLength))
        case .sha256: preconditionFailure("SHA-256 values do not combine")
        }
    }
}

extension ByteSource {
    /// Calls `body` with every byte of the source in order, in pieces of at most `chunkSize`
    /// (256 KiB by default: two hashes of a piece still find it in a core's cache).
    ///
    /// A `ResidentByteSource` is handed out in place; any other is read into one buffer of
    /// whole pages, given back to the kernel at the end (a pass per S3 part must not leave
    /// malloc arenas behind).
    ///
    /// - Throws: The source's or `body`'s error; `ByteSourceError.endedEarly` if the source is short.
    func forEachChunk(chunkSize: Int = 256 << 10, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let size = Int(min(Int64(chunkSize), max(length, 1)))
        var buffer: UnsafeMutableRawBufferPointer?
        defer { buffer.map(PageMemory.deallocate) }
        var offset: Int64 = 0
        while offset < length {
            let count = Int(min(Int64(size), length - offset))
            try body(try bytes(at: offset, count: count) {
                if buffer == nil { buffer = PageMemory.allocate(byteCount: size) }
                return buffer!
            })
            offset += Int64(count)
        }
    }
}
