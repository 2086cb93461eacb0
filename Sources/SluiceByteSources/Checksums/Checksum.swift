import Foundation
import SluicePrimitives

/// A finished checksum: its algorithm and raw bytes (big-endian for the CRCs, as S3 sends them).
public struct Checksum: Sendable, Hashable, CustomStringConvertible {
    /// The algorithm that computed `bytes`.
    public let algorithm: ChecksumAlgorithm
    /// The raw checksum: 4 bytes for the CRCs, 32 for SHA-256.
    public let bytes: [UInt8]

    /// A checksum of `algorithm` with these raw bytes.
    public init(algorithm: ChecksumAlgorithm, bytes: [UInt8]) {
        precondition(bytes.count == algorithm.byteCount, "a \(algorithm) checksum has \(algorithm.byteCount) bytes")
        self.algorithm = algorithm
        self.bytes = bytes
    }

    /// A CRC value as a checksum (big-endian bytes: 4 for CRC32/CRC32C, 8 for CRC64NVME).
    public init(algorithm: ChecksumAlgorithm, crc: UInt64) {
        precondition(algorithm.isCRC, "\(algorithm) is not a CRC")
        self.init(algorithm: algorithm, bytes: (0..<algorithm.byteCount).reversed().map { UInt8(truncatingIfNeeded: crc >> (8 * $0)) })
    }

    /// Parses the base64 form S3 sends in `x-amz-checksum-*` (without a `-N` suffix).
    public init?(algorithm: ChecksumAlgorithm, base64: String) {
        guard let data = Data(base64Encoded: base64), data.count == algorithm.byteCount else { return nil }
        self.init(algorithm: algorithm, bytes: Array(data))
    }

    /// The value for the `x-amz-checksum-*` header or trailer.
    public var base64: String { Data(bytes).base64EncodedString() }

    /// Lowercase hex.
    public var hex: String { bytes.hexString }

    /// The CRC as a number; nil for the SHAs.
    public var crcValue: UInt64? {
        guard algorithm.isCRC else { return nil }
        return bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    public var description: String { "\(algorithm):\(base64)" }
}
