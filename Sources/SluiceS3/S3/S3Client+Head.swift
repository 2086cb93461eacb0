import Foundation
import SluiceByteSources
import SluiceRequests

/// What `HeadObject` says of an object: its length and ETag, the checksums it stores (asked for
/// with `x-amz-checksum-mode: ENABLED`), and whether its ETag can be an MD5 of its bytes.
///
/// Every field is read from the answer's headers as far as it makes sense: a checksum that is
/// not base64 of its algorithm's length, a part count that is not a number, are left out (a
/// server that garbles them leaves the object with less to compare, never a crash).
public struct S3ObjectHead: Sendable, Equatable {
    /// `Content-Length`: the object's (or with `partNumber`, that part's) length.
    public var length: Int64?
    /// The ETag, quotes included, as the server wrote it.
    public var eTag: String
    /// The whole object's checksum (`x-amz-checksum-*` without a `-N` suffix, of a type other
    /// than COMPOSITE), the first of CRC64NVME, CRC32C, CRC32, SHA-256, SHA-1 the object has.
    public var wholeChecksum: Checksum?
    /// The composite checksum of a multipart object (`base64-N`, or with
    /// `x-amz-checksum-type: COMPOSITE` the bare `base64`, moto's way: `partCount` is then nil).
    public var compositeChecksum: (checksum: Checksum, partCount: Int?)?
    /// `x-amz-checksum-type`, when the server sent it (moto does not for an upload created
    /// without one, and sends a composite checksum without its `-N`).
    public var checksumType: S3ChecksumType?
    /// `x-amz-mp-parts-count`: the object's part count (S3 sends it with `partNumber`).
    public var partsCount: Int?
    /// Encrypted with SSE-KMS (`aws:kms`, `aws:kms:dsse`) or SSE-C: its ETag is not the MD5 of
    /// its bytes, even for a single-part object.
    public var eTagIsNotMD5: Bool
    /// `Content-Type`, when the server sent one.
    public var contentType: String?
    /// The user metadata (`x-amz-meta-NAME: value`), names lowercased as HTTP gives them, in
    /// the answer's order.
    public var metadata: [(name: String, value: String)] = []
    /// `Cache-Control`, `Content-Disposition`, `Content-Encoding`, `Content-Language` and
    /// `Expires` (read as an HTTP date; nil when it is not one), as the server sent them: what a
    /// copy keeps with the content type and metadata (`S3ObjectOptions.copied(from:key:)`).
    public var attributes = S3ObjectAttributes()

    /// The longest header value read as a checksum (SHA-256 with `-10000`).
    package static let checksumValueLimit = 64

    /// Reads the answer's headers.
    package init(_ response: UploadResponse) {
        length = response.header("Content-Length").flatMap { Int64($0) }.flatMap { $0 >= 0 ? $0 : nil }
        eTag = response.header("ETag") ?? ""
        contentType = response.header("Content-Type")
        metadata = response.headers.compactMap { header in
            let name = header.name.lowercased()
            return name.hasPrefix("x-amz-meta-") ? (String(name.dropFirst("x-amz-meta-".count)), header.value) : nil
        }
        attributes = S3ObjectAttributes(response)
        partsCount = response.header("x-amz-mp-parts-count").flatMap { Int($0) }.flatMap { (1...10_000).contains($0) ? $0 : nil }
        let encryption = response.header("x-amz-server-side-encryption")?.lowercased() ?? ""
        eTagIsNotMD5 = encryption.hasPrefix("aws:kms") || response.header("x-amz-server-side-encryption-customer-algorithm") != nil
        let type = response.header("x-amz-checksum-type").flatMap(S3ChecksumType.init(name:))
        checksumType = type
        for algorithm in [ChecksumAlgorithm.crc64nvme, .crc32c, .crc32, .sha256, .sha1] {
            guard let value = response.header(algorithm.headerName), value.utf8.count <= Self.checksumValueLimit else { continue }
            if let composite = CompositeChecksum(algorithm: algorithm, s3Value: value) {
                if compositeChecksum == nil { compositeChecksum = (composite.checksum, composite.partCount) }
            } else if let checksum = Checksum(algorithm: algorithm, base64: value) {
                if type == .composite {
                    if compositeChecksum == nil { compositeChecksum = (checksum, nil) }
                } else if wholeChecksum == nil {
                    wholeChecksum = checksum
                }
            }
        }
    }

    /// `"abc"` → `abc` (an ETag as listed or returned, quotes dropped).
    public static func unquoted(_ eTag: String) -> String {
        // An ASCII tag (every S3 ETag) by its bytes: a `Substring`'s `count` and affixes walk
        // graphemes, once an object.
        if eTag.utf8.allSatisfy({ $0 < 0x80 }) {
            var bytes = eTag.utf8[...]
            if bytes.starts(with: "W/".utf8) { bytes = bytes.dropFirst(2) }
            if bytes.count >= 2, bytes.first == UInt8(ascii: "\""), bytes.last == UInt8(ascii: "\"") {
                bytes = bytes.dropFirst().dropLast()
            }
            return String(decoding: bytes, as: UTF8.self)
        }
        var tag = Substring(eTag)
        if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
        if tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") { tag = tag.dropFirst().dropLast() }
        return String(tag)
    }

    public static func == (lhs: S3ObjectHead, rhs: S3ObjectHead) -> Bool {
        lhs.length == rhs.length && lhs.eTag == rhs.eTag && lhs.wholeChecksum == rhs.wholeChecksum
            && lhs.compositeChecksum?.checksum == rhs.compositeChecksum?.checksum
            && lhs.compositeChecksum?.partCount == rhs.compositeChecksum?.partCount && lhs.partsCount == rhs.partsCount
            && lhs.eTagIsNotMD5 == rhs.eTagIsNotMD5 && lhs.checksumType == rhs.checksumType && lhs.contentType == rhs.contentType
            && lhs.metadata.elementsEqual(rhs.metadata) { $0.name == $1.name && $0.value == $1.value } && lhs.attributes == rhs.attributes
    }
}

/// The attributes of an object a HeadObject answer names besides its type and metadata.
public struct S3ObjectAttributes: Sendable, Equatable {
    /// `Cache-Control`.
    public var cacheControl: String?
    /// `Content-Disposition`.
    public var contentDisposition: String?
    /// `Content-Encoding`.
    public var contentEncoding: String?
    /// `Content-Language`.
    public var contentLanguage: String?
    /// `Expires`.
    public var expires: Date?

    /// No attributes.
    public init() {}

    /// The attributes an answer's headers name.
    package init(_ response: UploadResponse) {
        cacheControl = response.header("Cache-Control")
        contentDisposition = response.header("Content-Disposition")
        contentEncoding = response.header("Content-Encoding")
        contentLanguage = response.header("Content-Language")
        expires = response.header("Expires").flatMap(S3ObjectOptions.httpDate(parsing:))
    }
}

extension S3Client {
    /// `HeadObject` of `location` with the checksums it stores (`x-amz-checksum-mode: ENABLED`)
    /// and, when the client has an SSE-C key, that key (S3 refuses a HEAD of an SSE-C object
    /// without it); with `partNumber`, of that part (its length, and the object's part count).
    ///
    /// - Returns: nil when there is no such object (404).
    /// - Throws: `S3Error` for other failures, after the client's retries.
    public func headObject(_ location: S3Location, partNumber: Int? = nil) async throws -> S3ObjectHead? {
        var headers = [SigV4Header("x-amz-checksum-mode", "ENABLED")]
        if let key = options.object.customerKey { headers += key.headers }
        let call = S3Call(
            method: "HEAD", location: location, query: partNumber.map { [SigV4QueryItem("partNumber", "\($0)")] } ?? [],
            headers: headers, action: "HeadObject", partNumber: partNumber)
        do {
            return S3ObjectHead(try await send(call).response)
        } catch let error as S3Error where error.status == 404 {
            return nil
        }
    }
}
