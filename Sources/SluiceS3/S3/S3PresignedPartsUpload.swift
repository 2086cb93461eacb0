import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// The client half of a presigned multipart upload: the parts of a source sent to URLs a
/// backend presigned, with no credentials on this side.
///
/// The backend creates the upload and presigns one `UploadPart` URL per part
/// (`S3Client.createPresignedUpload`, `S3Client.presignPart`); this type sends each part's
/// byte range to its URL, up to `concurrency` at once over any `UploadTransport` (libcurl's
/// engine on Linux, URLSession), each part read from its own range of the source (no
/// per-part buffer) and retried alone from its first byte; the result is each part's number,
/// ETag and checksum, for the backend to complete with (`S3Client.completePresignedUpload`).
///
/// ```swift
/// let file = try FileByteSource(path: "/data/big.bin")
/// defer { file.close() }
/// let source = S3Source(file, identity: "file:/data/big.bin", fingerprint: try S3SourceFingerprint(path: "/data/big.bin"))
/// let upload = try S3PresignedPartsUpload(uploadID: id, source: source, partSize: 8 << 20, checksum: .crc32c) { request in
///     try await backend.urlForPart(request.partNumber, checksum: request.checksum)   // the app's own call
/// }
/// let result = try await upload.run()
/// try await backend.complete(result.parts)
/// ```
///
/// URLs: `url` is asked for each part when it is about to be sent (so the app can presign
/// lazily); a URL whose expiry has passed, or that S3 refuses as expired (403 `AccessDenied`,
/// "Request has expired"), is asked for again, once (`S3PresignedPartRequest.renewal`).
///
/// Resume: every part S3 accepted is appended to a record (`Journal`: a line per part, synced
/// within a quarter second and at the end) under `stateDirectory`, keyed by the upload id and
/// the source's identity and fingerprint. A process that dies (`kill -9`) and runs the same
/// upload again sends only the parts that were not accepted; a changed source has another key
/// and sends every part. One run at a time: a second is refused, naming the holder's pid; a
/// record that cannot be read is an error naming it.
/// The record is kept after the last part, so a run repeated after success sends nothing and
/// returns the same list; `forgetState()` removes it.
///
/// - Important: Cancelling the calling task stops every part promptly and throws
///   `S3Error.cancelled`; the parts accepted so far stay recorded.
public struct S3PresignedPartsUpload: Sendable {
    /// The multipart upload the URLs belong to.
    public let uploadID: String
    /// The bytes, their identity and fingerprint.
    public let source: S3Source
    /// How the source is cut: equal parts of `partSize`, the last one shorter.
    public let plan: S3PartPlan
    /// The checksum computed for every part (before its URL is asked for, so a backend can
    /// sign it), returned with it and compared with the one S3 returns; nil for none.
    public var checksum: ChecksumAlgorithm?
    /// Parts in flight at once, 1 ... 256.
    public var concurrency = 8
    /// With SSE-C: the key, sent with every part (`S3CustomerKey.keyHeader`); the URLs were
    /// signed with it, and their headers carry the algorithm and the key's MD5.
    public var customerKey: S3CustomerKey?
    /// When a part that failed (resets, 408/429/5xx, `SlowDown`) is sent again, and after how
    /// long: the policy every protocol shares, each part with its own budget.
    public var retryPolicy = RetryPolicy()
    /// Where the accepted parts are recorded; nil for `defaultStateDirectory`.
    public var stateDirectory: String?
    /// Only these parts (several machines sending one upload, each its own range); nil for
    /// every part. A range keeps its own record, so ranges run at once on one machine too.
    public var partNumbers: ClosedRange<Int>?
    /// Timeouts, buffers and TLS of each part's request. Redirects are never followed (a URL is
    /// signed for one host).
    public var transfer = UploadOptions()
    /// The URL of one part, from the backend.
    public let url: @Sendable (S3PresignedPartRequest) async throws -> S3PresignedURL
    /// What time it is, for a URL's expiry; tests set a clock behind the server's to reach
    /// the server's own "Request has expired".
    package var now: @Sendable () -> Date = { Date() }

    /// `$XDG_CACHE_HOME/sluice/s3-presigned`, else `$HOME/.cache/sluice/s3-presigned`.
    public static var defaultStateDirectory: String { RecordStore<S3PartETag>.defaultDirectory("s3-presigned") }

    /// An upload of `source` to the parts of upload `uploadID`, each to the URL `url` returns.
    ///
    /// - Parameters:
    ///   - uploadID: The multipart upload the backend created.
    ///   - source: The bytes; their length must be the one the backend planned for.
    ///   - partSize: The backend's part size (5 MiB ... 5 GiB; at most 10,000 parts).
    ///   - checksum: The upload's checksum algorithm, if the backend created it with one.
    ///   - url: Returns the URL of a part; called just before the part is sent.
    /// - Throws: `S3Error` (`.invalidOption`, `.tooManyParts`, …) for a plan S3 would refuse.
    public init(
        uploadID: String, source: S3Source, partSize: Int64, checksum: ChecksumAlgorithm? = .crc32c,
        url: @escaping @Sendable (S3PresignedPartRequest) async throws -> S3PresignedURL
    ) throws {
        guard !uploadID.isEmpty else { throw S3Error(.invalidOption, "a presigned upload needs its upload id") }
        self.uploadID = uploadID
        self.source = source
        self.plan = try S3PartPlan(length: source.bytes.length, partSize: partSize)
        self.checksum = checksum
        self.url = url
    }

    /// The parts this run is to send: `partNumbers`, else every part of the plan.
    ///
    /// - Throws: `S3Error` with code `.invalidOption` for a range outside the plan's parts.
    package func chosenParts() throws -> ClosedRange<Int> {
        let all = 1...(plan.partCount ?? 1)
        guard let partNumbers else { return all }
        guard all.contains(partNumbers.lowerBound), all.contains(partNumbers.upperBound) else {
            throw S3Error(
                .invalidOption, "parts \(partNumbers.lowerBound)-\(partNumbers.upperBound) are not all in the plan, which has parts 1-\(all.upperBound)",
                uploadID: uploadID)
        }
        return partNumbers
    }

    /// Removes the record of accepted parts, if any.
    public func forgetState() {
        unlink(S3PresignedPartsJournal.path(of: self))
    }
}

/// What a presigned-parts upload did: the list the backend completes with.
public struct S3PresignedPartsResult: Sendable {
    /// The upload the parts belong to.
    public var uploadID: String
    /// Every part, in part-number order: number, ETag, checksum (when the upload has one).
    public var parts: [S3CompletedPart]
    /// Parts recorded as accepted by an earlier run, not sent again.
    public var partsSkipped: Int
    /// Body bytes handed to connections, retries included.
    public var bytesSent: Int64
    /// Part attempts retried.
    public var retries: Int
    /// URLs asked for again because they had expired.
    public var renewedURLs: Int
    /// Seconds the run took.
    public var elapsed: Double
}

extension S3PresignedPartsUpload {
    /// `run(over:progress:)` with its progress as an `AsyncSequence`.
    ///
    /// - Parameter transport: The transport the parts go through.
    /// - Returns: The reports (finished when the run ends), and the task whose value is the result.
    public func runWithProgress(
        over transport: any UploadTransport = TransportKind.platformDefault.makeTransport()
    ) -> (progress: AsyncStream<UploadProgress>, result: Task<S3PresignedPartsResult, any Error>) {
        ProgressSequence.run { report in try await run(over: transport, progress: report) }
    }
}
