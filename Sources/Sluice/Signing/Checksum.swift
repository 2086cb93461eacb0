import Foundation

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

    /// A CRC value as a checksum (big-endian bytes).
    public init(algorithm: ChecksumAlgorithm, crc: UInt32) {
        precondition(algorithm != .sha256, "SHA-256 is not a CRC")
        self.init(algorithm: algorithm, bytes: [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)])
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

    /// The CRC as a number; nil for SHA-256.
    public var crcValue: UInt32? {
        guard algorithm != .sha256 else { return nil }
        return bytes.reduce(0) { $0 << 8 | UInt32($1) }
    }

    public var description: String { "\(algorithm):\(base64)" }
}
