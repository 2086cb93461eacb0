import Foundation
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// How a body is protected on the way to S3 (`x-amz-content-sha256`).
public enum S3PayloadSigning: String, Sendable, Equatable, CaseIterable {
    /// Over https `STREAMING-UNSIGNED-PAYLOAD-TRAILER` with the checksum as the trailer (TLS
    /// protects the rest); over http signed `aws-chunked` (every chunk signed, and the
    /// checksum in a signed trailer), except a body under 64 KiB, whose SHA-256 is signed in
    /// the header with the checksum in a header (`S3Client.headerSignedBodyLimit`).
    case auto
    /// Signed `aws-chunked` whatever the scheme.
    case chunked
    /// `STREAMING-UNSIGNED-PAYLOAD-TRAILER`; needs a checksum.
    case trailer
    /// `UNSIGNED-PAYLOAD`; the checksum, if any, goes in a header computed in a first pass.
    case unsigned
    /// The SHA-256 of every part in a first pass (as the AWS CLI does over http).
    case sha256
}

/// How `S3Client` uploads: parts, parallelism, integrity, object attributes, resume, retries.
public struct S3Options: Sendable {
    /// The part size; nil for the planner's default (8 MiB, grown to fit 10,000 parts). For a
    /// stream, the size of the first parts.
    public var partSize: Int64?
    /// A source of this size or more goes as a multipart upload, a smaller one in one
    /// `PutObject`; nil for the part size (the AWS CLI's `multipart_threshold`).
    public var multipartThreshold: Int64?
    /// Parts in flight at once (and, for a stream, buffers of one part size: this plus one).
    public var concurrency = 8
    /// A request budget shared with other uploads (a job's): every request attempt (`PutObject`,
    /// `UploadPart`, `Create`, `Complete`, `ListParts`, `Abort`) holds one of its permits while it
    /// is sent, none through a retry's backoff; nil for none.
    public var requestBudget: RequestBudget?
    /// The checksum sent with every part and object; nil for none.
    public var checksum: ChecksumAlgorithm? = .crc32c
    /// The checksum a copy by the store asks the store to compute for the object it makes in
    /// parts (`x-amz-checksum-algorithm` on its `CreateMultipartUpload`); nil (the default) for
    /// none, as `aws s3 cp` copies: no byte passes through this process for a checksum to
    /// prove, and a store that computes one for each `UploadPartCopy` copies at half speed
    /// (SeaweedFS: 512 MiB in 16 MiB parts x 8, 3.1 s with CRC32C, 1.5 s without).
    public var storeCopyChecksum: ChecksumAlgorithm?
    /// How a multipart object's checksum is formed (`x-amz-checksum-type`); nil for the
    /// algorithm's own: FULL_OBJECT for CRC64NVME (the only one S3 has for it), COMPOSITE for
    /// the others (what S3 does when no type is sent).
    public var checksumType: S3ChecksumType?
    /// The type a multipart upload gets, and whether it is sent (`x-amz-checksum-type`).
    package var effectiveChecksumType: S3ChecksumType? {
        guard let checksum else { return nil }
        return checksumType ?? (checksum == .crc64nvme ? .fullObject : .composite)
    }
    /// How the payload is protected: signed aws-chunked, a trailer, a header-signed SHA-256 or
    /// unsigned (see `S3PayloadSigning`).
    public var payloadSigning = S3PayloadSigning.auto
    /// What the object carries: attributes, encryption, tags, ACL, object lock, condition.
    public var object = S3ObjectOptions()
    /// Where resume records live; nil for `S3StateStore.defaultDirectory`.
    public var stateDirectory: String?
    /// Abort a stored upload of the same source and object, and start a new one.
    public var restart = false
    /// A stored upload begun from other bytes (the file changed since) is aborted and started
    /// again, instead of refused with `.sourceChanged` (what an `UploadJob` wants: the file
    /// as it is now).
    public var restartWhenSourceChanged = false
    /// Every part of a stream the same size (for stores that refuse growing parts: R2, Garage).
    public var equalParts = false
    /// Transient failures of one request retried before the upload fails.
    public var retries = 5
    /// First backoff delay; doubled for every retry in a row, up to `maximumRetryDelay`.
    public var retryDelay: Duration = .milliseconds(250)
    /// Longest backoff delay; at most `UploadOptions.maximumTimeout`.
    public var maximumRetryDelay: Duration = .seconds(8)
    /// The retry policy every request of an upload follows (each request, each part, its own budget).
    public var retryPolicy: RetryPolicy {
        RetryPolicy(retries: retries, baseDelay: retryDelay, maximumDelay: maximumRetryDelay)
    }
    /// Stream parts per size step (`S3PartPlan.partsPerStep`); tests use fewer to see parts grow.
    package var streamStepParts: Int?
    /// The most parts a stream may have; nil for S3's 10,000. Tests lower it to reach the
    /// limit with a few parts of S3's 5 MiB minimum (10,000 of them are 50 GiB).
    package var partLimit: Int?
    /// How a body sent in one request below `S3Client.headerSignedBodyLimit` is read once
    /// (tests give it their clock, or change the file between its reads).
    package var snapshot = SourceSnapshot()
    /// Buffers, timeouts and TLS of each request.
    public var transfer = UploadOptions()
    /// A cap on the bytes per second the ranged reads of a streamed copy's source receive,
    /// shared by every object a run streams (`--limit-rate`: a cap of its own of the run's
    /// value, beside `transfer.rateLimit`, which the uploads draw from); nil for none.
    public var sourceRateLimit: RateLimit?

    /// Options with every property at its default (given with each property).
    public init() {}

    /// Memory the parts in flight share for their signed read-ahead (`AWSChunkedBody`):
    /// 2 MiB a part at concurrency 8, none from 128 on (each chunk is then hashed as it goes).
    package static let readAheadBudget = 16 << 20
    /// Memory the parts in flight share for their connections' buffers (libcurl's upload and
    /// receive buffers, 16 ... 512 KiB and 16 ... 64 KiB): 256 KiB each at concurrency 8.
    ///
    /// 2 MiB, not 4: once libcurl's upload buffer could reach 512 KiB (it was capped at 64 KiB),
    /// 4 MiB gave every part 512 KiB and `s3 cp` from stdin at 8 MiB parts peaked 4.4 MiB
    /// higher, over its bound (8 x 448 KiB more, and malloc's heap keeps a little more). At 8
    /// parts, 256 KiB (four signed chunks a fill, hashed two at a time) cost the same CPU as
    /// 512 KiB for a file, stdin and a job of 1 MiB files, and 128 KiB 6 % more for the job
    /// (docs/performance.md, "S3: memory").
    package static let connectionBufferBudget = 2 << 20

    /// One part's share of the read-ahead budget.
    package var readAheadPerPart: Int { Self.readAheadBudget / max(1, concurrency) }

    /// The read-ahead a signed body gets: its share of the budget while fewer requests are in
    /// flight than the machine has cores (a core with nothing to send hashes the next chunks);
    /// none from as many requests as cores on, where each chunk is hashed as it is sent, on the
    /// engine's loop. There every core already has a request to work on, and a read-ahead only
    /// added work: its chunks went through a ring too large to stay in cache (8 MiB at 8
    /// parts), so the checksum and the copy into libcurl's buffer read them back from memory,
    /// and each batch cost a hop between threads. Measured with 1,000 files of 1 MiB and two
    /// of 1 GiB at concurrency 8 on 2 cores: 10 % less CPU, and no slower.
    package var signedReadAhead: Int {
        concurrency >= Self.cores ? 0 : readAheadPerPart
    }

    /// Read once: Foundation reads the cgroup's quota and cpuset files on every ask.
    private static let cores = ProcessInfo.processInfo.activeProcessorCount

    /// `transfer`, with buffers that keep memory flat however many parts are in flight, not
    /// held back by the engine's per-origin limit (the parts are `concurrency` at most), and
    /// answers read up to `ResponseBodyHandling.answerLimit` (S3's error and XML documents are
    /// a few KiB; a `ListParts` page of 1,000 parts with checksums about 400 KiB).
    package var requestTransfer: UploadOptions {
        var options = transfer
        options.responseBody = .protocolAnswer
        options.bufferSize = min(options.bufferSize, max(16 << 10, Self.connectionBufferBudget / max(1, concurrency)))
        // At most `concurrency` requests at once, each signed just before it is sent.
        options.concurrencyBoundByCaller = true
        return options
    }

    /// Checks the options (ranges, the object's options, checksum and type together) before
    /// any effect.
    ///
    /// - Throws: `S3Error.invalidOption`, one line naming the option.
    public func validate() throws(S3Error) {
        guard (1...256).contains(concurrency) else {
            throw S3Error(.invalidOption, "concurrency must be 1 ... 256, not \(concurrency)")
        }
        guard retries >= 0 else { throw S3Error(.invalidOption, "retries must not be negative") }
        for delay in [retryDelay, maximumRetryDelay] where delay < .zero || delay > UploadOptions.maximumTimeout {
            throw S3Error(.invalidOption, "retry delay \(delay) is outside 0 ... \(UploadOptions.maximumTimeout) (365 days)")
        }
        if payloadSigning == .trailer, checksum == nil {
            throw S3Error(.invalidOption, "trailer payload signing needs a checksum (crc32c, crc32 or sha256)")
        }
        if let partSize { try S3PartPlan.validate(partSize: partSize) }
        try object.validate()
        if let checksum, let type = checksumType, !checksum.allows(type) {
            throw S3Error(.invalidOption, "S3 has no \(type) \(checksum) checksum for multipart objects (CRC64NVME is full-object only, SHA-1 and SHA-256 composite only)")
        }
        if checksumType != nil, checksum == nil {
            throw S3Error(.invalidOption, "a checksum type needs a checksum algorithm")
        }
    }
}
