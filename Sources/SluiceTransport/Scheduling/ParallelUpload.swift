import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceRequests

/// One part of a parallel ranged upload: a range of the source.
public struct UploadPart: Sendable, Hashable, CustomStringConvertible {
    /// The part's number in the plan, from 1.
    public var number: Int
    /// The first byte, in the source.
    public var offset: Int64
    /// The part's byte count.
    public var length: Int64

    /// A part numbered `number` (from 1) covering `length` bytes from `offset`.
    public init(number: Int, offset: Int64, length: Int64) {
        self.number = number
        self.offset = offset
        self.length = length
    }

    /// `offset ..< offset + length`.
    public var range: Range<Int64> { offset..<(offset + length) }

    /// "part 3 (bytes 33554432-50331647)": inclusive, as HTTP ranges are written.
    public var description: String {
        "part \(number) (bytes \(offset)-\(offset + max(length, 1) - 1))"
    }

    /// Cuts `length` bytes into parts of `partSize` (the last one shorter); one empty part for an empty source.
    public static func plan(length: Int64, partSize: Int64) -> [UploadPart] {
        let size = max(1, partSize)
        if length <= 0 { return [UploadPart(number: 1, offset: 0, length: 0)] }
        var parts: [UploadPart] = []
        var offset: Int64 = 0
        while offset < length {
            let count = min(size, length - offset)
            parts.append(UploadPart(number: parts.count + 1, offset: offset, length: count))
            offset += count
        }
        return parts
    }
}

/// What one part sends: its request and its body, chosen by the caller per part and per
/// attempt (a per-part URL query, headers, a body wrapper that signs chunks). `Made` is what an
/// accepted part's verdict makes (`PartRequest` is the one that makes nothing).
public struct PartRequestOf<Made: Sendable>: Sendable {
    /// The part's request: URL, method, headers.
    public var request: UploadRequest
    /// The part's body; a random-access one so a retry can send it again.
    public var body: UploadBody
    /// Called once the attempt ended, whatever its outcome, before its verdict: ends what the
    /// body started (a signed body's read-ahead), so nothing reads the part's bytes after it.
    public var attemptEnded: (@Sendable () async -> Void)?
    /// This attempt's own verdict, for a protocol whose answer needs what the attempt made (the
    /// checksum of the bytes a signed body sent); nil for the upload's `verdict`.
    public var verdict: (@Sendable (UploadResponse) -> PartVerdictOf<Made>)?

    /// A part's request and body, what to run when its attempt ends, and its own verdict.
    public init(
        request: UploadRequest, body: UploadBody, attemptEnded: (@Sendable () async -> Void)? = nil,
        verdict: (@Sendable (UploadResponse) -> PartVerdictOf<Made>)? = nil
    ) {
        self.request = request
        self.body = body
        self.attemptEnded = attemptEnded
        self.verdict = verdict
    }
}

/// A part's request for an upload whose parts make nothing.
public typealias PartRequest = PartRequestOf<Void>

/// How a part's response is judged: the protocol's verdict; the upload's `RetryPolicy`
/// decides what follows a `.retry`. `Made` is what an accepted part makes (an S3 part's
/// `S3CompletedPart`); `PartVerdict` is the verdict of parts that make nothing.
public enum PartVerdictOf<Made: Sendable>: Sendable {
    /// Done, with what the protocol read from the answer (an S3 part's ETag and checksum): the
    /// result's `made`, carried to the caller with the part instead of kept beside it.
    case accepted(Made)
    /// Try the part again from its first byte (counts against the retry limit). `cause` is the
    /// protocol's account of the failure (an S3 error document), kept typed for the caller.
    case retry(String, cause: (any Error)? = nil)
    /// Fail the whole upload with this reason and the protocol's typed `cause`.
    case fail(String, cause: (any Error)? = nil)
    /// Send the part again at once, not counted against the retry limit: what was refused is
    /// not the part's fault (an expired presigned URL) and `prepare` renews it, or fails the
    /// part when it cannot (it alone bounds how often this happens).
    case again(String)
}

/// The verdict of a part that makes nothing.
public typealias PartVerdict = PartVerdictOf<Void>

extension PartVerdictOf where Made == Void {
    /// Done; the response is the part's result.
    public static var accept: Self { .accepted(()) }
}

/// Why one part of a parallel upload failed: the `underlying` error of the `UploadError` that
/// `ParallelUpload.send(over:progress:)` throws, so a protocol reads the part, the attempts and
/// the server's own account as fields, never from the message.
public struct PartFailure: Error, Sendable, CustomStringConvertible {
    /// The part that failed.
    public var part: UploadPart
    /// Attempts made, the failing one included.
    public var attempts: Int
    /// Every failure was transient and the retry policy allowed no more.
    public var retriesExhausted: Bool
    /// The last attempt's failure: a verdict's cause (an S3 error document), or the
    /// transport's `UploadError`.
    public var cause: (any Error)?

    public var description: String { "\(part) failed after \(counted(attempts, "attempt"))" }
}

/// A parallel ranged upload: parts of a random-access source, up to `concurrency` requests at
/// once over any `UploadTransport` (`send(over:progress:)`; on the curl transport each part
/// reads its own range straight into libcurl's buffer). `Made` is what each accepted part's
/// verdict makes, returned typed in its `PartResultOf.made`; `ParallelUpload` is the upload
/// whose parts make nothing (a plain ranged upload, judged by `defaultVerdict`).
public struct ParallelUploadOf<Made: Sendable>: Sendable {
    /// The parts, in any order; results come back in this order.
    public var parts: [UploadPart]
    /// Part requests in flight at once.
    public var concurrency = 8
    /// A budget shared with other uploads (a job's): each attempt holds one of its permits
    /// while it is sent, so the requests of all of them stay within its limit.
    public var budget: RequestBudget?
    /// When a part is tried again (transient failures and `.retry` verdicts) and the backoff
    /// before it; each part has its own budget.
    public var retryPolicy = RetryPolicy(retries: 4, baseDelay: .milliseconds(100), maximumDelay: .seconds(5))
    /// Attempts after the first for one part: `retryPolicy.retries`.
    public var retries: Int {
        get { retryPolicy.retries }
        set { retryPolicy.retries = newValue }
    }
    /// First backoff delay: `retryPolicy.baseDelay`.
    public var retryDelay: Duration {
        get { retryPolicy.baseDelay }
        set { retryPolicy.baseDelay = newValue }
    }
    /// Longest backoff delay: `retryPolicy.maximumDelay`.
    public var maximumRetryDelay: Duration {
        get { retryPolicy.maximumDelay }
        set { retryPolicy.maximumDelay = newValue }
    }
    /// Transfer options for every part (timeouts, TLS, credentials).
    public var options = UploadOptions()
    /// Builds a part's request and body; called before each attempt.
    public var prepare: @Sendable (UploadPart) async throws -> PartRequestOf<Made>
    /// Judges a part's response when its `PartRequestOf` has no verdict of its own
    /// (`ParallelUpload`'s: 2xx accepts, 408/429/5xx retry, anything else fails).
    public var verdict: @Sendable (UploadPart, UploadResponse) -> PartVerdictOf<Made>

    /// Parts built by `prepare`, judged by `verdict` (or by their request's own).
    public init(
        parts: [UploadPart], verdict: @escaping @Sendable (UploadPart, UploadResponse) -> PartVerdictOf<Made>,
        prepare: @escaping @Sendable (UploadPart) async throws -> PartRequestOf<Made>
    ) {
        self.parts = parts
        self.verdict = verdict
        self.prepare = prepare
    }
}

/// A parallel ranged upload whose parts make nothing: each is judged by `defaultVerdict`.
public typealias ParallelUpload = ParallelUploadOf<Void>

extension ParallelUploadOf where Made == Void {
    /// Parts built by `prepare`, judged by `defaultVerdict`.
    public init(parts: [UploadPart], prepare: @escaping @Sendable (UploadPart) async throws -> PartRequest) {
        self.init(parts: parts, verdict: Self.defaultVerdict, prepare: prepare)
    }

    /// The common case: each part is `request(part)` with the part's range of `source` as its body.
    ///
    /// - Parameters:
    ///   - source: Random-access bytes (read with `pread` per part, no per-part buffer).
    ///   - partSize: Bytes per part (the last part is shorter).
    ///   - request: The request of one part (URL, method, headers).
    public init(source: any ByteSource, partSize: Int64, request: @escaping @Sendable (UploadPart) throws -> UploadRequest) {
        self.init(parts: UploadPart.plan(length: source.length, partSize: partSize)) { part in
            PartRequest(request: try request(part), body: .bytes(try SliceByteSource(source, range: part.range)))
        }
    }

    /// The verdict when no other is given: a 2xx accepts, a transient status (408, 429, 5xx)
    /// retries, anything else fails.
    public static func defaultVerdict(_ part: UploadPart, _ response: UploadResponse) -> PartVerdict {
        switch response.status {
        case 200..<300: return .accept
        case let status where RetryPolicy.isTransient(status: status): return .retry("the server answered \(status)")
        default:
            let text =
                String(decoding: response.body.prefix(200), as: UTF8.self)
                .split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            return .fail("the server answered \(response.status)\(text.isEmpty ? "" : ": \(text)")")
        }
    }
}

/// One part's outcome; `made` is what its verdict made.
public struct PartResultOf<Made: Sendable>: Sendable {
    /// The part this result is for.
    public var part: UploadPart
    /// The accepted response (status, headers such as `ETag`).
    public var response: UploadResponse
    /// Attempts it took (1 when the first succeeded).
    public var attempts: Int
    /// What the verdict read from the answer (`PartVerdictOf.accepted`).
    public var made: Made
}

/// The outcome of a part that makes nothing.
public typealias PartResult = PartResultOf<Void>

/// Aggregate progress of a parallel upload.
public struct ParallelProgress: Sendable, Equatable {
    /// Bytes of accepted parts plus bytes in flight in the current attempts. Never lower than
    /// in the report before, except in one whose `partsRestarted` is not empty.
    public var bytesSent: Int64
    /// The bytes of all parts together.
    public var totalBytes: Int64
    /// Parts accepted so far.
    public var partsDone: Int
    /// Parts in the plan.
    public var partsTotal: Int
    /// Part attempts that were retried so far.
    public var retries: Int
    /// Parts that started again from their first byte since the report before (a retry, or a
    /// redirect or auth round that replays the body): their bytes sent so far are no longer
    /// counted, so `bytesSent` may be lower than it was.
    public var partsRestarted: [UploadPart] = []
}
