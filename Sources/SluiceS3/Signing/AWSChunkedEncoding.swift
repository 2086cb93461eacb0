import SluiceByteSources

/// The shape of an `aws-chunked` body: payload mode, chunk size, trailer, and from them the
/// exact encoded length, known before a byte is read.
///
/// Wire format, per data chunk then the final empty chunk:
/// - signed: `<hex size>;chunk-signature=<64 hex>\r\n<data>\r\n` … `0;chunk-signature=<sig>\r\n\r\n`
/// - signed with trailer: … `0;chunk-signature=<sig>\r\n<checksum header>:<base64>\r\n`
///   `x-amz-trailer-signature:<64 hex>\r\n\r\n`
/// - unsigned with trailer: `<hex size>\r\n<data>\r\n` … `0\r\n<checksum header>:<base64>\r\n\r\n`
public struct AWSChunkedEncoding: Sendable, Hashable {
    /// Which aws-chunked framing: chunk signatures, a trailer, or both.
    public enum Mode: Sendable, Hashable {
        /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD`
        case signed
        /// `STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER` with this checksum as the trailer.
        case signedWithTrailer(ChecksumAlgorithm)
        /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER` with this checksum as the trailer.
        case unsignedWithTrailer(ChecksumAlgorithm)
    }

    /// The framing this encoding writes.
    public let mode: Mode
    /// Data bytes per chunk (the last data chunk may be shorter). S3 wants at least 8 KiB.
    public let chunkSize: Int
    /// The body's own length (`x-amz-decoded-content-length`).
    public let decodedLength: Int64
    /// The exact `Content-Length` of the encoded body (computed once: every read asks).
    public private(set) var encodedLength: Int64 = 0
    /// The final empty chunk, the trailer lines and the closing CRLF.
    package private(set) var finalSectionLength: Int64 = 0

    /// The default chunk size, as the AWS SDKs use.
    public static let defaultChunkSize = 64 << 10

    /// The framing of a body of `decodedLength` bytes in chunks of `chunkSize`.
    ///
    /// - Throws: `SigV4Error.invalidOption` for a chunk size below 1 or above 1 GiB, or a negative length.
    public init(mode: Mode, decodedLength: Int64, chunkSize: Int = AWSChunkedEncoding.defaultChunkSize) throws {
        guard chunkSize >= 1, chunkSize <= 1 << 30 else {
            throw SigV4Error(.invalidOption, "aws-chunked chunk size \(chunkSize) is outside 1 ... \(1 << 30)")
        }
        guard decodedLength >= 0 else { throw SigV4Error(.invalidOption, "negative body length \(decodedLength)") }
        self.mode = mode
        self.chunkSize = chunkSize
        self.decodedLength = decodedLength
        finalSectionLength = computedFinalSectionLength
        encodedLength = computedEncodedLength
    }

    /// The `x-amz-content-sha256` value.
    public var payload: SigV4Payload {
        switch mode {
        case .signed: return .streamingSigned
        case .signedWithTrailer: return .streamingSignedTrailer
        case .unsignedWithTrailer: return .streamingUnsignedTrailer
        }
    }

    /// The trailer's checksum algorithm, if any.
    public var trailer: ChecksumAlgorithm? {
        switch mode {
        case .signed: return nil
        case .signedWithTrailer(let algorithm), .unsignedWithTrailer(let algorithm): return algorithm
        }
    }

    /// Whether chunks carry signatures.
    public var isSigned: Bool {
        if case .unsignedWithTrailer = mode { return false }
        return true
    }

    /// Data chunks, not counting the final empty one.
    public var dataChunkCount: Int64 { (decodedLength + Int64(chunkSize) - 1) / Int64(chunkSize) }

    /// The encoded size of one data chunk of `size` bytes: header line, data, CRLF.
    package func encodedChunkLength(_ size: Int) -> Int64 {
        Int64(chunkHeaderLength(size) + size + 2)
    }

    /// `<hex>;chunk-signature=<64>\r\n` or `<hex>\r\n`.
    package func chunkHeaderLength(_ size: Int) -> Int {
        var digits = 1
        while size >> (4 * digits) > 0 { digits += 1 }
        return digits + (isSigned ? 17 + 64 : 0) + 2
    }

    private var computedFinalSectionLength: Int64 {
        var total = chunkHeaderLength(0)
        if let trailer {
            total += trailer.headerName.utf8.count + 1 + trailer.base64Count + 2
            if isSigned { total += "x-amz-trailer-signature:".utf8.count + 64 + 2 }
        }
        return Int64(total + 2)
    }

    private var computedEncodedLength: Int64 {
        let full = decodedLength / Int64(chunkSize)
        let rest = Int(decodedLength % Int64(chunkSize))
        return full * encodedChunkLength(chunkSize) + (rest > 0 ? encodedChunkLength(rest) : 0) + finalSectionLength
    }

    /// The headers an aws-chunked request carries (to be signed with it): `Content-Encoding`,
    /// `Content-Length`, `x-amz-decoded-content-length`, and `x-amz-trailer` with a trailer.
    public var headers: [SigV4Header] {
        var headers = [
            SigV4Header("Content-Encoding", "aws-chunked"),
            SigV4Header("Content-Length", "\(encodedLength)"),
            SigV4Header("x-amz-decoded-content-length", "\(decodedLength)"),
        ]
        if let trailer { headers.append(SigV4Header("x-amz-trailer", trailer.headerName)) }
        return headers
    }
}
