import Foundation

/// An S3 client for uploads: a single `PutObject` below the part size, otherwise a multipart
/// upload with parts in parallel, resumable after the process dies.
///
/// ```swift
/// let configuration = try S3Configuration.resolve(S3ConfigurationOverrides(endpointURL: "http://127.0.0.1:8333"))
/// let client = S3Client(configuration: configuration)
/// let result = try await client.upload(source: "big.bin", to: S3Location(parsing: "s3://bucket/big.bin"))
/// print(result.summary)
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
/// - Important: Cancelling the calling task stops every part promptly and throws
///   `S3Error.cancelled`; for a file the stored state is kept (resume with the same command),
///   for stdin the multipart upload is aborted so nothing is left to bill.
public struct S3Client: Sendable {
    public let configuration: S3Configuration
    public var options: S3Options
    public let transport: any UploadTransport

    public init(configuration: S3Configuration, options: S3Options = S3Options(), transport: TransportKind = .platformDefault) {
        self.init(configuration: configuration, options: options, transport: Uploader.makeTransport(transport))
    }

    public init(configuration: S3Configuration, options: S3Options = S3Options(), transport: any UploadTransport) {
        self.configuration = configuration
        self.options = options
        self.transport = transport
    }

    /// Uploads what a command line's SOURCE names (`PATH`, `-` or `synthetic:SIZE[:SEED]`).
    ///
    /// - Parameters:
    ///   - source: The SOURCE argument.
    ///   - location: Where to; a key naming a folder (empty or ending in `/`) gets the file's name.
    ///   - progress: Bytes of the object sent or found at the server, of its length when known.
    /// - Returns: What was done.
    /// - Throws: `S3Error`.
    public func upload(
        source: String, to location: S3Location, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3UploadResult {
        try options.validate()
        let specification: SourceSpecification
        do { specification = try SourceSpecification(parsing: source) } catch {
            throw S3Error(.source, "\(error)", underlying: error)
        }
        switch specification {
        case .standardInput:
            let target = try location.resolvingKey(forSourceNamed: nil)
            return try await uploadStream(FileDescriptorStream.standardInput, to: target, progress: progress)
        case .synthetic(let length, let seed):
            let source = S3Source(SyntheticByteSource(length: length, seed: seed), identity: "synthetic:\(length):\(seed)",
                                  fingerprint: S3SourceFingerprint(size: length))
            let target = try location.resolvingKey(forSourceNamed: "synthetic-\(length)-\(seed).bin")
            return try await upload(source, to: target, progress: progress)
        case .file(let path):
            let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
            let file: FileByteSource
            do { file = try FileByteSource(path: absolute) } catch {
                throw S3Error(.source, "\(error)", underlying: error)
            }
            defer { file.close() }
            let fingerprint = try S3SourceFingerprint(path: absolute)
            let target = try location.resolvingKey(forSourceNamed: (absolute as NSString).lastPathComponent)
            return try await upload(S3Source(file, identity: "file:\(absolute)", fingerprint: fingerprint), to: target, progress: progress)
        }
    }
}

/// A random-access source with what a resumed upload is matched by.
public struct S3Source: Sendable {
    public let bytes: any ByteSource
    /// Which source: `file:/absolute/path`, `synthetic:LEN:SEED`, or a name the caller chooses.
    public let identity: String
    /// Whether its content is still what the stored upload was started with.
    public let fingerprint: S3SourceFingerprint

    public init(_ bytes: any ByteSource, identity: String, fingerprint: S3SourceFingerprint) {
        self.bytes = bytes
        self.identity = identity
        self.fingerprint = fingerprint
    }
}

/// What an S3 upload did.
public struct S3UploadResult: Sendable {
    public var location: S3Location
    /// The object's length.
    public var length: Int64
    /// The object's ETag as the server gave it.
    public var eTag: String
    /// The multipart upload id; nil for a single `PutObject`.
    public var uploadID: String?
    /// Parts in the object (1 for `PutObject`).
    public var partCount: Int
    /// Parts found at the server and not sent again (a resumed upload).
    public var partsSkipped: Int
    /// Whether this run continued a stored upload.
    public var resumed: Bool
    /// Body bytes handed to connections, retries and aws-chunked framing included.
    public var bytesSent: Int64
    /// Transient failures retried.
    public var retries: Int
    /// The object's checksum as the server reported it and Sluice verified it, if any.
    public var checksum: String?
    public var elapsed: Double

    /// One line for stderr.
    public var summary: String {
        var line = "\(resumed ? "resumed and completed" : "uploaded") \(location): \(length) bytes"
        line += uploadID == nil ? " in one PutObject" : " in \(partCount) parts"
        if partsSkipped > 0 { line += " (\(partsSkipped) already at the server)" }
        line += ", \(bytesSent) sent, \(retries) retries"
        if let checksum { line += ", checksum \(checksum) verified" }
        let rate = elapsed > 0 ? Double(bytesSent) / elapsed / 1e6 : 0
        return line + String(format: ", %.1f s, %.0f MB/s", elapsed, rate)
    }
}
