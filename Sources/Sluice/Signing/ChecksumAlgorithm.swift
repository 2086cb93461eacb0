/// The whole-object checksums S3 accepts (`x-amz-checksum-*`).
public enum ChecksumAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// CRC32C (Castagnoli), `x-amz-checksum-crc32c`: Sluice's default.
    case crc32c
    /// CRC32 (the zlib polynomial), `x-amz-checksum-crc32`.
    case crc32
    /// SHA-256, `x-amz-checksum-sha256`.
    case sha256

    /// The header (and trailer) name, e.g. `x-amz-checksum-crc32c`.
    public var headerName: String { "x-amz-checksum-\(rawValue)" }

    /// S3's name for it (`x-amz-checksum-algorithm`, `ChecksumCRC32C` in XML).
    public var s3Algorithm: S3ChecksumAlgorithm {
        switch self {
        case .crc32c: return .crc32c
        case .crc32: return .crc32
        case .sha256: return .sha256
        }
    }

    /// The algorithm Sluice computes for one S3 names; nil for those it does not (SHA-1, CRC64NVME).
    public init?(_ s3Algorithm: S3ChecksumAlgorithm) {
        switch s3Algorithm {
        case .crc32c: self = .crc32c
        case .crc32: self = .crc32
        case .sha256: self = .sha256
        case .sha1, .crc64nvme: return nil
        }
    }

    /// The checksum's size in bytes (4 for the CRCs, 32 for SHA-256).
    public var byteCount: Int { self == .sha256 ? 32 : 4 }

    /// The length of its base64 form: 8 for the CRCs, 44 for SHA-256.
    public var base64Count: Int { (byteCount + 2) / 3 * 4 }

    /// Parses `crc32c`, `CRC32`, `sha256`... case-insensitively.
    public init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    public var description: String { rawValue }
}
