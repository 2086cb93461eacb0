import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceBoundStreams
import SluiceTransport

extension ChecksumAlgorithm {
    /// S3's name for it (`x-amz-checksum-algorithm`, `ChecksumCRC32C` in XML).
    public var s3Algorithm: S3ChecksumAlgorithm {
        switch self {
        case .crc64nvme: return .crc64nvme
        case .crc32c: return .crc32c
        case .crc32: return .crc32
        case .sha1: return .sha1
        case .sha256: return .sha256
        }
    }

    /// The algorithm Sluice computes for one S3 names.
    public init(_ s3Algorithm: S3ChecksumAlgorithm) {
        switch s3Algorithm {
        case .crc64nvme: self = .crc64nvme
        case .crc32c: self = .crc32c
        case .crc32: self = .crc32
        case .sha1: self = .sha1
        case .sha256: self = .sha256
        }
    }
}
