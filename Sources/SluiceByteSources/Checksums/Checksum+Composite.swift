extension Checksum {
    /// The checksum S3 reports for a multipart object with COMPOSITE checksums: the checksum
    /// of the concatenated raw part checksums, shown as `base64-N` for N parts.
    ///
    /// - Parameter parts: Each part's checksum, in part-number order, all of one algorithm.
    /// - Returns: The composite, e.g. `Composite(checksum: …, partCount: 3)` whose `s3Value`
    ///   is `"8a9136aa…==-3"`; nil when `parts` is empty or mixes algorithms.
    public static func composite(of parts: [Checksum]) -> CompositeChecksum? {
        guard let algorithm = parts.first?.algorithm, parts.allSatisfy({ $0.algorithm == algorithm }) else { return nil }
        let hasher = ChecksumHasher(algorithm)
        for part in parts { hasher.update(part.bytes) }
        return CompositeChecksum(checksum: hasher.finalize(), partCount: parts.count)
    }

    /// The CRC of a whole object from its parts' CRCs and lengths (S3's FULL_OBJECT type
    /// for CRC checksums of multipart objects); nil for the SHAs, mixed algorithms or no parts.
    public static func fullObject(of parts: [(checksum: Checksum, length: Int64)]) -> Checksum? {
        guard let algorithm = parts.first?.checksum.algorithm, algorithm.isCRC,
            parts.allSatisfy({ $0.checksum.algorithm == algorithm })
        else { return nil }
        var crc = parts[0].checksum.crcValue!
        for part in parts.dropFirst() {
            crc = CRC.combine(algorithm, crc, part.checksum.crcValue!, secondLength: part.length)
        }
        return Checksum(algorithm: algorithm, crc: crc)
    }
}

/// A multipart object's composite checksum, as S3 reports it: `base64-N`.
public struct CompositeChecksum: Sendable, Hashable, CustomStringConvertible {
    /// The checksum of the parts' checksums.
    public let checksum: Checksum
    /// The number of parts (the `-N` suffix).
    public let partCount: Int

    /// The value S3 returns in `x-amz-checksum-*` for the object, e.g. `VDUm5Q==-3`.
    public var s3Value: String { "\(checksum.base64)-\(partCount)" }

    /// Parses `base64-N`.
    public init?(algorithm: ChecksumAlgorithm, s3Value: String) {
        guard let dash = s3Value.lastIndex(of: "-"), let count = Int(s3Value[s3Value.index(after: dash)...]), count > 0,
            let checksum = Checksum(algorithm: algorithm, base64: String(s3Value[..<dash]))
        else { return nil }
        self.init(checksum: checksum, partCount: count)
    }

    /// A composite checksum over `partCount` parts.
    public init(checksum: Checksum, partCount: Int) {
        self.checksum = checksum
        self.partCount = partCount
    }

    public var description: String { "\(checksum.algorithm):\(s3Value)" }
}
