#if canImport(CSluiceCrypto)
import CSluiceCrypto
#endif
import SluicePrimitives

/// An incremental checksum of any `ChecksumAlgorithm`.
///
/// - Important: Not thread-safe (one owner at a time); `finalize()` may be called more than
///   once for the CRCs, once for SHA-256.
public final class ChecksumHasher {
    /// The algorithm this hasher computes.
    public let algorithm: ChecksumAlgorithm
    private var crc: UInt64 = 0
    private var digest: Digest?
    /// Bytes fed so far.
    public private(set) var count: Int64 = 0

    /// A fresh hasher for `algorithm`.
    public init(_ algorithm: ChecksumAlgorithm) {
        self.algorithm = algorithm
        switch algorithm {
        case .sha256: digest = Digest(.sha256)
        case .sha1: digest = Digest(.sha1)
        case .crc64nvme, .crc32c, .crc32: break
        }
    }

    /// Adds `bytes` to the checksum, after what came before.
    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        count += Int64(bytes.count)
        switch algorithm {
        case .crc64nvme: crc = CRC.crc64nvme(crc, bytes)
        case .crc32c: crc = UInt64(CRC.crc32c(UInt32(crc), bytes))
        case .crc32: crc = UInt64(CRC.crc32(UInt32(crc), bytes))
        case .sha1, .sha256: digest!.update(bytes)
        }
    }

    /// Adds `bytes` to the checksum, after what came before.
    public func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The checksum of everything fed.
    public func finalize() -> Checksum {
        if algorithm.isCRC { return Checksum(algorithm: algorithm, crc: crc) }
        return Checksum(algorithm: algorithm, bytes: digest!.finalize())
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

/// CRC-64/NVME, CRC-32C and CRC-32 over the C implementations in `CSluiceCrypto`.
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

    /// CRC-64/NVME (S3's CRC64NVME) of `bytes`, continuing from `crc` (0 to start).
    public static func crc64nvme(_ crc: UInt64 = 0, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        sluice_crc64nvme(crc, bytes.baseAddress, bytes.count)
    }

    /// CRC-64/NVME by tables only, never the carry-less multiply (for cross-checks).
    public static func crc64nvmeSoftware(_ crc: UInt64 = 0, _ bytes: UnsafeRawBufferPointer) -> UInt64 {
        sluice_crc64nvme_software(crc, bytes.baseAddress, bytes.count)
    }

    /// Whether `crc64nvme` folds with the CPU's carry-less multiply (PCLMULQDQ, PMULL).
    public static var crc64nvmeUsesHardware: Bool { sluice_crc64nvme_is_hardware() != 0 }

    /// The CRC of `A || B` from `crc(A)`, `crc(B)` and the length of `B` (a CRC algorithm).
    public static func combine(_ algorithm: ChecksumAlgorithm, _ first: UInt64, _ second: UInt64, secondLength: Int64) -> UInt64 {
        let length = UInt64(secondLength)
        switch algorithm {
        case .crc64nvme: return sluice_crc64nvme_combine(first, second, length)
        case .crc32c: return UInt64(sluice_crc32c_combine(UInt32(first), UInt32(second), length))
        case .crc32: return UInt64(sluice_crc32_combine(UInt32(first), UInt32(second), length))
        case .sha1, .sha256: preconditionFailure("\(algorithm) values do not combine")
        }
    }
}

extension ByteSource {
    /// Calls `body` with every byte of the source in order, in pieces of at most `chunkSize`
    /// (256 KiB by default: two hashes of a piece still find it in a core's cache).
    ///
    /// A source in memory (`MemoryByteSource`, or a small file's snapshot, `PinnedByteSource`)
    /// is handed out in place; any other is read into one buffer of whole pages, given back to
    /// the kernel at the end (a pass per S3 part must not leave malloc arenas behind).
    ///
    /// - Throws: The source's or `body`'s error; `ByteSourceError.endedEarly` if the source is
    ///   short; `PageMemory.AllocationFailed` when the kernel has no memory for the buffer.
    package func forEachChunk(chunkSize: Int = 256 << 10, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        func inPlace(_ bytes: UnsafeRawBufferPointer) throws {
            var offset = 0
            while offset < bytes.count {
                let end = min(offset + chunkSize, bytes.count)
                try body(UnsafeRawBufferPointer(rebasing: bytes[offset..<end]))
                offset = end
            }
        }
        if let memory = self as? MemoryByteSource { return try memory.bytes.withUnsafeBytes(inPlace) }
        if let pinned = self as? PinnedByteSource { return try inPlace(pinned.memory) }
        let size = Int(min(Int64(chunkSize), max(length, 1)))
        var buffer: UnsafeMutableRawBufferPointer?
        defer { buffer.map(PageMemory.deallocate) }
        var offset: Int64 = 0
        while offset < length {
            let count = Int(min(Int64(size), length - offset))
            try body(
                try bytes(at: offset, count: count) {
                    if buffer == nil { buffer = try PageMemory.allocate(byteCount: size) }
                    return buffer!
                })
            offset += Int64(count)
        }
    }
}
