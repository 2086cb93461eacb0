import Foundation

/// The whole-object checksums S3 accepts (`x-amz-checksum-*`): one type for what Sluice
/// computes and what S3 names (`CRC32C` in `x-amz-checksum-algorithm` and in XML).
///
/// Its `rawValue` is the lowercase name (`crc32c`); its `Codable` form is S3's name (`"CRC32C"`),
/// the form resume records have always been written in, and decoding takes either case.
public enum ChecksumAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible, Codable {
    /// CRC64NVME (CRC-64/NVME), `x-amz-checksum-crc64nvme`: what S3 stores for every new object.
    case crc64nvme
    /// CRC32C (Castagnoli), `x-amz-checksum-crc32c`.
    case crc32c
    /// CRC32 (the zlib polynomial), `x-amz-checksum-crc32`.
    case crc32
    /// SHA-1, `x-amz-checksum-sha1`.
    case sha1
    /// SHA-256, `x-amz-checksum-sha256`.
    case sha256

    /// The header (and trailer) name, e.g. `x-amz-checksum-crc32c`.
    public var headerName: String { "x-amz-checksum-\(rawValue)" }

    /// Whether it is a CRC: CRCs of parts combine into the CRC of the whole (S3's FULL_OBJECT
    /// type); SHA digests do not.
    public var isCRC: Bool {
        switch self {
        case .crc64nvme, .crc32c, .crc32: return true
        case .sha1, .sha256: return false
        }
    }

    /// The checksum types S3 accepts for a multipart upload with it: CRC64NVME only
    /// FULL_OBJECT, the SHAs only COMPOSITE, CRC32 and CRC32C either.
    public func allows(_ type: S3ChecksumType) -> Bool {
        switch self {
        case .crc64nvme: return type == .fullObject
        case .sha1, .sha256: return type == .composite
        case .crc32c, .crc32: return true
        }
    }

    /// The checksum's size in bytes (4 for CRC32/CRC32C, 8 for CRC64NVME, 20 for SHA-1, 32 for SHA-256).
    public var byteCount: Int {
        switch self {
        case .crc32c, .crc32: return 4
        case .crc64nvme: return 8
        case .sha1: return 20
        case .sha256: return 32
        }
    }

    /// The length of its base64 form: 8 for the 32-bit CRCs, 12 for CRC64NVME, 28 for SHA-1, 44 for SHA-256.
    public var base64Count: Int { (byteCount + 2) / 3 * 4 }

    /// Parses `crc32c`, `CRC32`, `sha256`... case-insensitively.
    public init?(name: String) {
        self.init(rawValue: name.lowercased())
    }

    public var description: String { rawValue }

    /// S3's name for it: `CRC32C`, `CRC32`, `CRC64NVME`, `SHA1`, `SHA256` (the value of
    /// `x-amz-checksum-algorithm`, `ChecksumCRC32C` in XML, and the `Codable` form).
    public var s3Name: String { rawValue.uppercased() }

    /// Reads S3's name (`"CRC32C"`), or the lowercase one, as records have held both.
    ///
    /// - Throws: `DecodingError.dataCorrupted` for a name that is no algorithm.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let algorithm = ChecksumAlgorithm(name: name) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "'\(name)' is not a checksum algorithm (CRC64NVME, CRC32C, CRC32, SHA1, SHA256)")
        }
        self = algorithm
    }

    /// Writes S3's name (`"CRC32C"`): what records written before hold, so both read each other.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(s3Name)
    }
}

/// How S3 checksums a multipart object (`x-amz-checksum-type`): the checksum of the whole
/// object's bytes, comparable with a local file's (`FULL_OBJECT`, CRCs only), or the checksum
/// of the parts' checksums, `base64-N` (`COMPOSITE`).
public enum S3ChecksumType: String, Sendable, Hashable, Codable, CaseIterable, CustomStringConvertible {
    /// `FULL_OBJECT`: the CRC of the whole object's bytes, comparable with a local file's (CRCs
    /// only).
    case fullObject = "FULL_OBJECT"
    /// `COMPOSITE`: the checksum of the parts' checksums, `base64-N` for N parts.
    case composite = "COMPOSITE"

    /// The CLI's spelling: `full-object`, `composite`.
    public var name: String { self == .fullObject ? "full-object" : "composite" }

    /// Parses `full-object`, `composite` (or S3's `FULL_OBJECT`, `COMPOSITE`).
    public init?(name: String) {
        switch name.lowercased().replacingOccurrences(of: "_", with: "-") {
        case "full-object": self = .fullObject
        case "composite": self = .composite
        default: return nil
        }
    }

    /// The type S3 uses for `algorithm` when none is asked for: FULL_OBJECT for the CRCs
    /// (comparable with the file), COMPOSITE for the SHAs (the only one S3 has for them).
    public static func preferred(for algorithm: ChecksumAlgorithm) -> S3ChecksumType {
        algorithm.isCRC ? .fullObject : .composite
    }

    public var description: String { name }
}
