import SluiceByteSources

/// The algorithm S3 names, which is the one Sluice computes: `ChecksumAlgorithm` (one type since
/// issue 40; `S3ChecksumAlgorithm.crc32c.rawValue` is now `crc32c`, S3's name is `s3Name`).
@available(*, deprecated, renamed: "ChecksumAlgorithm")
public typealias S3ChecksumAlgorithm = ChecksumAlgorithm

extension ChecksumAlgorithm {
    /// The algorithm itself: S3's name and Sluice's are one type now.
    @available(*, deprecated, message: "ChecksumAlgorithm is S3's algorithm too: use the value itself")
    public var s3Algorithm: ChecksumAlgorithm { self }

    /// The algorithm itself: S3's name and Sluice's are one type now.
    @available(*, deprecated, message: "ChecksumAlgorithm is S3's algorithm too: use the value itself")
    public init(_ s3Algorithm: ChecksumAlgorithm) { self = s3Algorithm }
}
