import SluicePrimitives
import SluiceByteSources

/// What `x-amz-content-sha256` says about the body, and so how the body is protected.
public enum SigV4Payload: Sendable, Hashable {
    /// `UNSIGNED-PAYLOAD`: the body is not hashed (TLS, or a checksum header, protects it).
    case unsigned
    /// The hex SHA-256 of the whole body (one pass over it before sending).
    case sha256(hex: String)
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`: aws-chunked, each chunk signed, chained.
    case streamingSigned
    /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER`: signed chunks and a signed checksum trailer.
    case streamingSignedTrailer
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`: aws-chunked with an unsigned checksum trailer.
    case streamingUnsignedTrailer

    /// The SHA-256 of the empty body.
    public static let emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    /// An empty body: its SHA-256.
    public static var empty: SigV4Payload { .sha256(hex: emptySHA256) }

    /// The SHA-256 of `bytes`.
    public static func sha256(of bytes: [UInt8]) -> SigV4Payload {
        .sha256(hex: bytes.withUnsafeBytes { SigningCrypto.sha256($0) }.hexString)
    }

    /// The SHA-256 of a whole random-access source: one pass, `chunkSize` bytes of memory.
    ///
    /// - Throws: The source's error, or `ByteSourceError.endedEarly` if it is short.
    public static func sha256(of source: any ByteSource, chunkSize: Int = 256 << 10) throws -> SigV4Payload {
        let hasher = Digest(.sha256)
        try source.forEachChunk(chunkSize: chunkSize) { hasher.update($0) }
        return .sha256(hex: hasher.finalize().hexString)
    }

    /// The `x-amz-content-sha256` value (and the canonical request's last line).
    public var contentSHA256: String {
        switch self {
        case .unsigned: return "UNSIGNED-PAYLOAD"
        case .sha256(let hex): return hex
        case .streamingSigned: return "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
        case .streamingSignedTrailer: return "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"
        case .streamingUnsignedTrailer: return "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        }
    }

    /// Whether the body goes out `aws-chunked`.
    public var isStreaming: Bool {
        switch self {
        case .streamingSigned, .streamingSignedTrailer, .streamingUnsignedTrailer: return true
        case .unsigned, .sha256: return false
        }
    }
}
