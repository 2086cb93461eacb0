#if canImport(CCurl)
import Foundation

/// One part of a parallel ranged upload: a range of the source.
public struct UploadPart: Sendable, Hashable, CustomStringConvertible {
    /// The part's number in the plan, from 1.
    public var number: Int
    /// The first byte, in the source.
    public var offset: Int64
    /// The part's byte count.
    public var length: Int64

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
/// attempt (a per-part URL query, headers, a body wrapper that signs chunks).
public struct PartRequest: Sendable {
    public var request: UploadRequest
    public var body: UploadBody

    public init(request: UploadRequest, body: UploadBody) {
        self.request = request
        self.body = body
    }
}

/// How a part's response is judged.
public enum PartVerdict: Sendable {
    /// Done; the response is the part's result.
    case accept
    /// Try the part again from its first byte (counts against the retry limit).
    case retry(String)
    /// Fail the whole upload with this reason.
    case fail(String)
}

/// A parallel ranged upload: parts of a random-access source, up to `concurrency` requests at
/// once, each reading its own range straight into libcurl's buffer.
public struct ParallelUpload: Sendable {
    /// The parts, in any order; results come back in this order.
    public var parts: [UploadPart]
    /// Part requests in flight at once.
    public var concurrency = 8
    /// Attempts after the first for one part (transient failures and `.retry` verdicts).
    public var retries = 4
    /// Backoff before a part's next attempt: `retryDelay * 2^(n-1)`, at most `maximumRetryDelay`
    /// (and at most `UploadOptions.maximumTimeout`).
    public var retryDelay: Duration = .milliseconds(100)
    public var maximumRetryDelay: Duration = .seconds(5)
    /// Transfer options for every part (timeouts, TLS, credentials).
    public var options = UploadOptions()
    /// Builds a part's request and body; called before each attempt.
    public var prepare: @Sendable (UploadPart) async throws -> PartRequest
    /// Judges a part's response: by default 2xx accepts, 408/429/5xx retry, anything else fails.
    public var verdict: @Sendable (UploadPart, UploadResponse) -> PartVerdict = ParallelUpload.defaultVerdict

    /// Parts built by `prepare`.
    public init(parts: [UploadPart], prepare: @escaping @Sendable (UploadPart) async throws -> PartRequest) {
        self.parts = parts
        self.prepare = prepare
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

    public static func defaultVerdict(_ part: UploadPart, _ response: UploadResponse) -> PartVerdict {
        switch response.status {
        case 200..<300: return .accept
        case 408, 429, 500..<600: return .retry("the server answered \(response.status)")
        default:
            let text = String(decoding: response.body.prefix(200), as: UTF8.self)
                .split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            return .fail("the server answered \(response.status)\(text.isEmpty ? "" : ": \(text)")")
        }
    }
}

/// One part's outcome.
public struct PartResult: Sendable {
    public var part: UploadPart
    /// The accepted response (status, headers such as `ETag`).
    public var response: UploadResponse
    /// Attempts it took (1 when the first succeeded).
    public var attempts: Int
}

/// Aggregate progress of a parallel upload.
public struct ParallelProgress: Sendable, Equatable {
    /// Bytes of accepted parts plus bytes in flight in the current attempts.
    public var bytesSent: Int64
    public var totalBytes: Int64
    public var partsDone: Int
    public var partsTotal: Int
    /// Part attempts that were retried so far.
    public var retries: Int
}

extension TransferEngine {
    /// Sends every part of `upload`, up to `upload.concurrency` at once.
    ///
    /// A part that fails (connection reset, no answer, a `.retry` verdict) is tried again on
    /// its own from its first byte after a bounded backoff, while the other parts go on. A part
    /// that fails past `upload.retries`, or gets a `.fail` verdict, cancels the others and fails
    /// the upload with one line naming the part, its range, the status and the cause.
    /// Cancelling the calling task stops every part within one loop turn.
    ///
    /// `progress` is called from the engine's loop threads on every change (a few per 64 KiB
    /// sent) and once at the end: keep it short, and throttle display yourself.
    ///
    /// - Returns: Per-part results in the order of `upload.parts`.
    /// - Throws: `UploadError` (`.cancelled`, or the failing part's code).
    public func send(
        _ upload: ParallelUpload, progress: (@Sendable (ParallelProgress) -> Void)? = nil
    ) async throws -> [PartResult] {
        let tracker = PartTracker(parts: upload.parts, report: progress)
        let concurrency = max(1, upload.concurrency)
        return try await withThrowingTaskGroup(of: (Int, PartResult).self) { group in
            var results = [PartResult?](repeating: nil, count: upload.parts.count)
            var next = 0
            func launch() {
                let index = next
                next += 1
                group.addTask { (index, try await self.sendPart(upload.parts[index], index: index, of: upload, tracker: tracker)) }
            }
            while next < min(concurrency, upload.parts.count) { launch() }
            do {
                while let (index, result) = try await group.next() {
                    results[index] = result
                    if next < upload.parts.count { launch() }
                }
            } catch {
                group.cancelAll()
                throw error
            }
            tracker.finish()
            return results.compactMap { $0 }
        }
    }

    private func sendPart(_ part: UploadPart, index: Int, of upload: ParallelUpload, tracker: PartTracker) async throws -> PartResult {
        var attempt = 0
        while true {
            attempt += 1
            if Task.isCancelled { throw UploadError(.cancelled, "the upload was cancelled during \(part)") }
            let reason: String
            var failure: UploadError
            do {
                let prepared = try await upload.prepare(part)
                let response = try await send(prepared.request, body: prepared.body, options: upload.options) { sent in
                    tracker.update(index, sent)
                }
                switch upload.verdict(part, response) {
                case .accept:
                    tracker.done(index)
                    return PartResult(part: part, response: response, attempts: attempt)
                case .retry(let why):
                    reason = why
                    failure = UploadError(.httpStatus, why, status: response.status, bytesSent: response.bytesSent, totalBytes: part.length)
                case .fail(let why):
                    throw UploadError(.httpStatus, "\(part) failed: \(why)", status: response.status,
                                      bytesSent: response.bytesSent, totalBytes: part.length)
                }
            } catch let error as UploadError where error.code == .cancelled || Task.isCancelled {
                throw UploadError(.cancelled, "the upload was cancelled during \(part)", bytesSent: error.bytesSent, totalBytes: part.length)
            } catch let error as UploadError where error.isTransient {
                reason = error.message
                failure = error
            } catch let error as UploadError {
                throw UploadError(error.code, "\(part) failed: \(error.message)", status: error.status,
                                  bytesSent: error.bytesSent, totalBytes: part.length, offset: error.offset, underlying: error)
            } catch {
                throw UploadError(.transport, "\(part) failed: \(error)", totalBytes: part.length, underlying: error)
            }
            tracker.update(index, 0)
            guard attempt <= upload.retries else {
                let status = failure.status.map { "status \($0)" } ?? "no status"
                throw UploadError(failure.code, "\(part) failed after \(counted(attempt, "attempt")) (\(status)): \(reason)",
                                  status: failure.status, bytesSent: failure.bytesSent, totalBytes: part.length, underlying: failure)
            }
            tracker.retried()
            let delay = Duration.backoff(base: upload.retryDelay, maximum: upload.maximumRetryDelay, attempt: attempt)
            do { try await Task.sleep(for: delay) } catch {
                throw UploadError(.cancelled, "the upload was cancelled during \(part)", totalBytes: part.length)
            }
        }
    }
}

/// Per-part bytes in flight and parts done, summed for progress.
final class PartTracker: Sendable {
    private struct State {
        var inFlight: [Int64]
        var done: [Bool]
        var doneBytes: Int64 = 0
        var partsDone = 0
        var retries = 0
    }

    private let parts: [UploadPart]
    private let total: Int64
    private let report: (@Sendable (ParallelProgress) -> Void)?
    private let state: Lock<State>

    init(parts: [UploadPart], report: (@Sendable (ParallelProgress) -> Void)?) {
        self.parts = parts
        self.report = report
        total = parts.reduce(0) { $0 + $1.length }
        state = Lock(State(inFlight: Array(repeating: 0, count: parts.count), done: Array(repeating: false, count: parts.count)))
    }

    func update(_ index: Int, _ sent: Int64) {
        let snapshot = state.withLock { state -> ParallelProgress? in
            state.inFlight[index] = sent
            return report == nil ? nil : progress(state)
        }
        if let snapshot { report?(snapshot) }
    }

    func done(_ index: Int) {
        state.withLock { state in
            guard !state.done[index] else { return }
            state.done[index] = true
            state.inFlight[index] = 0
            state.doneBytes += parts[index].length
            state.partsDone += 1
        }
    }

    func retried() { state.withLock { $0.retries += 1 } }

    func finish() {
        let snapshot = state.withLock { progress($0) }
        report?(snapshot)
    }

    private func progress(_ state: State) -> ParallelProgress {
        ParallelProgress(bytesSent: state.doneBytes + state.inFlight.reduce(0, +), totalBytes: total,
                         partsDone: state.partsDone, partsTotal: parts.count, retries: state.retries)
    }
}
#endif
