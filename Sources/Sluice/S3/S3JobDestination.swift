import Foundation

/// An `UploadJob`'s files as objects under a prefix: the key is `prefix` + the file's path
/// below the job's root with `/` separators, as `aws s3 cp --recursive` makes it.
///
/// Each file is one `S3Client.upload`: a `PutObject` below the part size, a resumable multipart
/// upload above it. Give the client's options a `RequestBudget` (`S3Options.requestBudget`) to
/// hold every request of the job, small files and parts alike, to one number in flight.
public struct S3JobDestination: UploadJobDestination {
    public let client: S3Client
    public let bucket: String
    /// The key prefix: empty, or ending in `/` (one is added when it does not).
    public let prefix: String

    /// - Parameter location: `s3://BUCKET/PREFIX`; a prefix that does not end in `/` gets one.
    public init(client: S3Client, location: S3Location) {
        self.client = client
        bucket = location.bucket
        prefix = location.key.isEmpty || location.key.hasSuffix("/") ? location.key : location.key + "/"
    }

    public var jobIdentity: String {
        "\(client.configuration.endpointIdentity) s3://\(bucket)/\(prefix)"
    }

    /// - Throws: `S3Error` (`.invalidLocation`) for a key S3 refuses (over 1,024 bytes).
    public func name(for file: WalkedFile) throws -> String {
        try S3Location(bucket: bucket, key: prefix + file.relativePath).key
    }

    public func upload(_ file: WalkedFile, as name: String, restart: Bool,
                       progress: @escaping @Sendable (Int64) -> Void) async throws -> String {
        let location = try S3Location(bucket: bucket, key: name)
        let opened = try OpenedFile(path: file.path)
        defer { opened.close() }
        guard case .randomAccess(let bytes) = opened else {
            throw S3Error(.source, "\(file.path): is not a regular file any more")
        }
        let fingerprint = try S3SourceFingerprint(path: file.path)
        let source = S3Source(bytes, identity: "file:\(file.path)", fingerprint: fingerprint)
        var client = self.client
        // A file below the smallest part size goes as one PutObject: no multipart record to
        // look up (a file opened and read for every small file).
        let multipart = source.bytes.length >= (client.options.partSize ?? S3PartPlan.defaultPartSize)
        client.options.restart = restart || (multipart && changedSinceItsUploadBegan(source, at: location))
        let result = try await client.upload(source, to: location) { progress($0.bytesSent) }
        return result.eTag
    }

    /// Whether a stored multipart upload of this key was begun from other bytes: the job sends
    /// a changed file again, where a single `s3 cp` refuses and asks for `--restart`.
    func changedSinceItsUploadBegan(_ source: S3Source, at location: S3Location) -> Bool {
        let store = S3StateStore(directory: client.options.stateDirectory)
        guard let stored = try? store.load(endpoint: client.configuration.endpointIdentity, bucket: location.bucket,
                                           key: location.key, source: source.identity) else { return false }
        return source.fingerprint.difference(from: stored.fingerprint) != nil
    }
}
