import Foundation
import SluiceByteSources
import SluiceTransport
import SluiceRequests

/// An S3 client for uploads: a single `PutObject` below the part size, otherwise a multipart
/// upload with parts in parallel, resumable after the process dies.
///
/// ```swift
/// let configuration = try S3Configuration.resolve(S3ConfigurationOverrides(endpointURL: "http://127.0.0.1:8333"))
/// let client = S3Client(configuration: configuration)
/// let file = try FileByteSource(path: "/data/big.bin")
/// defer { file.close() }
/// let source = S3Source(file, identity: "file:/data/big.bin", fingerprint: try S3SourceFingerprint(path: "/data/big.bin"))
/// let result = try await client.upload(source, to: S3Location(parsing: "s3://bucket/big.bin"))
/// print(result.eTag, result.partCount)
/// ```
///
/// Resume: before the first part is sent, the upload id, the part plan and a fingerprint of the
/// source (inode, size, modification and change times) are written durably to
/// `S3Options.stateDirectory`, keyed by endpoint, bucket, key and source. The same command
/// later asks the server which parts it holds (`ListParts`), skips those with the right size
/// (and checksum, where the server lists one), sends the rest and completes. A changed source
/// is refused (`S3Error.sourceChanged`); `S3Options.restart` aborts the stored upload and
/// starts again.
///
/// Redirects are not followed: a 3xx answer fails the request (`S3Error.server`), so that no
/// object bytes or `x-amz-*` headers go to another origin.
///
/// - Important: Cancelling the calling task stops every part promptly and throws
///   `S3Error.cancelled`; for a file the stored state is kept (resume with the same command),
///   for stdin the multipart upload is aborted so nothing is left to bill.
public struct S3Client: Sendable {
    /// Credentials, region, endpoint and addressing style.
    public let configuration: S3Configuration
    /// Part size, concurrency, checksum, payload signing, retries and the rest.
    public var options: S3Options
    /// The transport every request goes through.
    public let transport: any UploadTransport
    /// The signer `checkedOnce()` made once its options were checked: requests sign with it,
    /// and an upload does not check the options again (a job's files, whose options differ
    /// only by what cannot fail a check: a content type from the table, the restart flags).
    package internal(set) var checkedSigner: SigV4Signer?

    /// A client over the transport of kind `transport` (libcurl by default on Linux).
    public init(configuration: S3Configuration, options: S3Options = S3Options(), transport: TransportKind = .platformDefault) {
        self.init(configuration: configuration, options: options, transport: transport.makeTransport())
    }

    /// A client over `transport`.
    public init(configuration: S3Configuration, options: S3Options = S3Options(), transport: any UploadTransport) {
        self.configuration = configuration
        self.options = options
        if self.options.transfer.caFile == nil { self.options.transfer.caFile = configuration.caBundle }
        // Requests are signed for one endpoint; S3 redirects (301 PermanentRedirect, 307
        // TemporaryRedirect to another region) are errors to report, never bodies to send elsewhere.
        self.options.transfer.maximumRedirects = 0
        self.transport = transport
    }

}

/// A random-access source with what a resumed upload is matched by.
public struct S3Source: Sendable {
    /// The bytes to upload, read at any offset.
    public let bytes: any ByteSource
    /// Which source: `file:/absolute/path`, `synthetic:LEN:SEED`, or a name the caller chooses.
    public let identity: String
    /// Whether its content is still what the stored upload was started with.
    public let fingerprint: S3SourceFingerprint

    /// A source whose stored upload is found by `identity` and matched by `fingerprint`.
    public init(_ bytes: any ByteSource, identity: String, fingerprint: S3SourceFingerprint) {
        self.bytes = bytes
        self.identity = identity
        self.fingerprint = fingerprint
    }
}

/// What an S3 upload did.
public struct S3UploadResult: Sendable {
    /// The object uploaded.
    public var location: S3Location
    /// The object's length.
    public var length: Int64
    /// The object's ETag without the quotes HTTP puts around it: the hex MD5 of a `PutObject`'s
    /// bytes, or `…-N` for a multipart object of N parts (the quoted form is in `quotedETag`).
    public var eTag: String
    /// The multipart upload id; nil for a single `PutObject`.
    public var uploadID: String?
    /// Parts in the object (1 for `PutObject`).
    public var partCount: Int
    /// Parts found at the server and not sent again (a resumed upload).
    public var partsSkipped: Int
    /// Bytes of those parts.
    public var bytesSkipped: Int64 = 0
    /// Whether this run continued a stored upload.
    public var resumed: Bool
    /// Body bytes handed to connections, retries and aws-chunked framing included.
    public var bytesSent: Int64
    /// Transient failures retried.
    public var retries: Int
    /// The object's checksum as the server reported it and Sluice verified it, if any: its
    /// algorithm, value and type (full-object or composite).
    public var checksum: S3ObjectChecksum?
    /// Seconds from the first request to the last answer.
    public var elapsed: Double

    /// What an upload did; `eTag` is kept without its quotes, however it is given.
    public init(
        location: S3Location, length: Int64, eTag: String, uploadID: String?, partCount: Int, partsSkipped: Int,
        bytesSkipped: Int64 = 0, resumed: Bool, bytesSent: Int64, retries: Int, checksum: S3ObjectChecksum?, elapsed: Double
    ) {
        self.location = location
        self.length = length
        self.eTag = S3ObjectHead.unquoted(eTag)
        self.uploadID = uploadID
        self.partCount = partCount
        self.partsSkipped = partsSkipped
        self.bytesSkipped = bytesSkipped
        self.resumed = resumed
        self.bytesSent = bytesSent
        self.retries = retries
        self.checksum = checksum
        self.elapsed = elapsed
    }

    /// The ETag as HTTP carries it, in quotes (`If-Match`, `If-None-Match`).
    public var quotedETag: String { "\"\(eTag)\"" }
}

/// An object's checksum as S3 reports it: the algorithm, the value, and whether it is the
/// checksum of the whole object's bytes (`fullObject`, comparable with a local file's) or the
/// checksum of its parts' checksums (`composite`, shown by S3 as `base64-N`).
public struct S3ObjectChecksum: Sendable, Hashable, CustomStringConvertible {
    /// The checksum: its algorithm and raw bytes (`base64`, `hex`).
    public var checksum: Checksum
    /// Full-object or composite.
    public var type: S3ChecksumType
    /// For a composite checksum, the number of parts it combines (the `-N`); nil for a
    /// full-object one.
    public var partCount: Int?

    /// A full-object checksum (a `PutObject`'s, or a multipart object's of type FULL_OBJECT).
    public init(fullObject checksum: Checksum) {
        self.checksum = checksum
        type = .fullObject
        partCount = nil
    }

    /// A composite checksum over its parts.
    public init(composite: CompositeChecksum) {
        checksum = composite.checksum
        type = .composite
        partCount = composite.partCount
    }

    /// Parses S3's value (`x-amz-checksum-*`, `ChecksumCRC32C`): `base64-N` is composite, a
    /// plain `base64` full-object; nil when it is neither.
    public init?(algorithm: ChecksumAlgorithm, s3Value: String) {
        if s3Value.contains("-") {
            guard let composite = CompositeChecksum(algorithm: algorithm, s3Value: s3Value) else { return nil }
            self.init(composite: composite)
        } else {
            guard let checksum = Checksum(algorithm: algorithm, base64: s3Value) else { return nil }
            self.init(fullObject: checksum)
        }
    }

    /// The algorithm.
    public var algorithm: ChecksumAlgorithm { checksum.algorithm }

    /// The checksum's value in base64, without a `-N` suffix.
    public var base64: String { checksum.base64 }

    /// The value as S3 writes it: `base64`, or `base64-N` for a composite of N parts.
    public var s3Value: String { partCount.map { "\(checksum.base64)-\($0)" } ?? checksum.base64 }

    /// `CRC32C 0pEVEw==`, `SHA256 …-3`: S3's algorithm name and value.
    public var description: String { "\(algorithm.s3Name) \(s3Value)" }
}

extension S3Source {
    /// `synthetic:LENGTH:SEED`: its identity names the seed, its fingerprint is the length.
    package static func synthetic(length: Int64, seed: UInt64) -> S3Source {
        S3Source(
            SyntheticByteSource(length: length, seed: seed), identity: "synthetic:\(length):\(seed)",
            fingerprint: S3SourceFingerprint(size: length))
    }
}
