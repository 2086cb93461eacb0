import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceS3
import SluiceRequests

/// An `UploadJob`'s files as objects under a prefix: the key is `prefix` + the file's path
/// below the job's root with `/` separators, as `aws s3 cp --recursive` makes it.
///
/// Each file is one `S3Client.upload`: a `PutObject` below the part size, a resumable multipart
/// upload above it. Give the client's options a `RequestBudget` (`S3Options.requestBudget`) to
/// hold every request of the job, small files and parts alike, to one number in flight.
///
/// A class: a job's tasks each hold it for a file, and a copy of a struct of two clients
/// retained every string and array of both (80 retains a small file, issue 37.11).
public final class S3JobDestination: UploadJobDestination {
    /// The client every file goes through: with its options checked and its signer made once
    /// for the job (`S3Client.checkedOnce`) when they could be, not once a file and again once
    /// a request.
    public let client: S3Client
    /// The bucket the files go to.
    public let bucket: String
    /// The key prefix: empty, or ending in `/` (one is added when it does not).
    public let prefix: String
    /// The resume records in the client's state directory, listed once at the job's first
    /// small file (not looked for once a file).
    private let records = S3StateStore.Listing()
    /// Why `client`'s options could not be checked, if they could not: each file's failure.
    private let checkFailure: (any Error)?

    /// A destination that puts every file under `location`'s prefix in its bucket.
    ///
    /// - Parameters:
    ///   - client: The client every file goes through.
    ///   - location: `s3://BUCKET/PREFIX`; a prefix that does not end in `/` gets one.
    public init(client: S3Client, location: S3Location) {
        do {
            self.client = try client.checkedOnce()
            checkFailure = nil
            // The table of content types read here, once, before the job's tasks start: at
            // their first files they all waited for it at once, spinning on its lock.
            if client.options.object.guessesFromFileNames { _ = MediaTypeTable.system }
        } catch {
            self.client = client
            checkFailure = error
        }
        bucket = location.bucket
        prefix = location.key.isEmpty || location.key.hasSuffix("/") ? location.key : location.key + "/"
    }

    public var jobIdentity: String {
        "\(client.configuration.endpointIdentity) s3://\(bucket)/\(prefix)"
    }

    /// The prefix plus the file's path below the root, with `/` separators.
    ///
    /// - Throws: `S3Error` (`.invalidLocation`) for a key S3 refuses (over 1,024 bytes).
    public func name(for file: WalkedFile) throws -> String {
        try S3Location(bucket: bucket, key: prefix + file.relativePath).key
    }

    public func upload(
        _ file: WalkedFile, as name: String, restart: Bool,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadJobSent {
        let location = try S3Location(bucket: bucket, key: name)
        let source: S3Source
        var opened: OpenedFile?
        defer { opened?.close() }
        if file.size < S3Client.headerSignedBodyLimit, let small = try await Self.snapshot(file.path, with: client, to: location) {
            // Open, fstat, read, fstat again and close in one trip to the blocking pool.
            source = S3Source(
                small.bytes, identity: "file:\(file.path)",
                fingerprint: S3SourceFingerprint(
                    size: small.bytes.length, device: small.device, inode: small.inode,
                    modificationTime: small.modificationTime, changeTime: small.changeTime))
        } else {
            let file = try OpenedFile(path: file.path)
            opened = file
            guard case .randomAccess(let bytes) = file else {
                // Its size is not its length (a kernel file system's file; the walk skips /proc and
                // /sys): the path is named once, by the failure.
                throw S3Error(.source, "its size is not its length (a kernel file system's file): not sent")
            }
            source = S3Source(bytes, identity: "file:\(bytes.path)", fingerprint: S3SourceFingerprint(file: bytes))
        }
        if let checkFailure { throw checkFailure }
        var client = client
        client.options.object = client.options.object.forFile(atPath: file.path)
        client.options.restart = restart
        // A file changed since its multipart upload began is sent again as it is now.
        client.options.restartWhenSourceChanged = true
        do {
            let result = try await client.upload(source, to: location, records: records) { progress($0.bytesSent) }
            // The record keeps the ETag as HTTP carries it, as records before held it.
            return UploadJobSent(answer: result.quotedETag, bytesAlreadyThere: result.bytesSkipped)
        } catch let error as S3Error where error.code == .objectExists {
            throw UploadJobKept()
        } catch let error as S3Error where error.code == .state && error.underlying is RecordStoreError {
            // Its resume record cannot be written (a full disk): the job stops starting files.
            throw UploadJobRecordFailed(error)
        }
    }

    /// A small file's bytes as they were at rest (`SourceSnapshot.readFile`), or nil when the
    /// path is not a small regular file now; a failed open or read as `OpenedFile` throws it.
    private static func snapshot(_ path: String, with client: S3Client, to location: S3Location) async throws -> SourceSnapshot.File? {
        do { return try await client.options.snapshot.readFile(atPath: path, below: S3Client.headerSignedBodyLimit) } catch let error as ByteSourceError {
            throw error
        } catch {
            throw S3Client.snapshotError(error, location: location)
        }
    }
}
