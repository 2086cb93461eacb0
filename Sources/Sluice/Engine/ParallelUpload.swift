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

/// How a part's response is judged: the protocol's verdict; the upload's `RetryPolicy`
/// decides what follows a `.retry`.
public enum PartVerdict: Sendable {
    /// Done; the response is the part's result.
    case accept
    /// Try the part again from its first byte (counts against the retry limit). `cause` is the
    /// protocol's account of the failure (an S3 error document), kept typed for the caller.
    case retry(String, cause: (any Error)? = nil)
    /// Fail the whole upload with this reason and the protocol's typed `cause`.
    case fail(String, cause: (any Error)? = nil)
}

/// Why one part of a parallel upload failed: the `underlying` error of the `UploadError` that
/// `TransferEngine.send(_:progress:)` throws, so a protocol reads the part, the attempts and
/// the server's own account as fields, never from the message.
public struct PartFailure: Error, Sendable, CustomStringConvertible {
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
/// once, each reading its own range straight into libcurl's buffer.
public struct ParallelUpload: Sendable {
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
        case let status where RetryPolicy.isTransient(status: status): return .retry("the server answered \(status)")
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
    /// Bytes of accepted parts plus bytes in flight in the current attempts. Never lower than
    /// in the report before, except in one whose `partsRestarted` is not empty.
    public var bytesSent: Int64
    public var totalBytes: Int64
    public var partsDone: Int
    public var partsTotal: Int
    /// Part attempts that were retried so far.
    public var retries: Int
    /// Parts that started again from their first byte since the report before (a retry, or a
    /// redirect or auth round that replays the body): their bytes sent so far are no longer
    /// counted, so `bytesSent` may be lower than it was.
    public var partsRestarted: [UploadPart] = []
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
        // `concurrency` parts run, whatever the engine's per-origin limit; each is prepared
        // (signed) just before it is sent.
        var bounded = upload
        bounded.options.concurrencyBoundByCaller = true
        let upload = bounded
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
        var budget = RetryBudget(upload.retryPolicy)
        var attempt = 0
        func cancelled(_ sent: Int64? = nil) -> UploadError {
            UploadError(.cancelled, "the upload was cancelled during \(part)", bytesSent: sent, totalBytes: part.length)
        }
        while true {
            attempt += 1
            if Task.isCancelled { throw cancelled() }
            // One attempt: its response, or the transport's failure.
            if let budget = upload.budget {
                do { try await budget.acquire() } catch { throw cancelled() }
            }
            let outcome: Result<UploadResponse, UploadError>
            do {
                defer { upload.budget?.release() }
                let prepared = try await upload.prepare(part)
                outcome = .success(try await send(prepared.request, body: prepared.body, options: upload.options) { sent in
                    tracker.update(index, sent)
                })
            } catch let error as UploadError {
                if error.code == .cancelled || Task.isCancelled { throw cancelled(error.bytesSent) }
                outcome = .failure(error)
            } catch {
                if Task.isCancelled { throw cancelled() }
                outcome = .failure(UploadError(.transport, "\(error)", underlying: error))
            }
            // The verdict: accepted, failed for good, or one transient failure.
            let failure: UploadError
            let cause: (any Error)?
            switch outcome {
            case .success(let response):
                switch upload.verdict(part, response) {
                case .accept:
                    tracker.done(index)
                    return PartResult(part: part, response: response, attempts: attempt)
                case .retry(let why, let reason):
                    failure = UploadError(.httpStatus, why, status: response.status, bytesSent: response.bytesSent, totalBytes: part.length)
                    cause = reason ?? failure
                case .fail(let why, let reason):
                    throw Self.partError(.httpStatus, "\(part) failed: \(why)", status: response.status, bytesSent: response.bytesSent,
                                         PartFailure(part: part, attempts: attempt, retriesExhausted: false, cause: reason))
                }
            case .failure(let error) where error.isTransient:
                (failure, cause) = (error, error)
            case .failure(let error):
                throw Self.partError(error.code, "\(part) failed: \(error.message)", status: error.status, bytesSent: error.bytesSent,
                                     PartFailure(part: part, attempts: attempt, retriesExhausted: false, cause: error))
            }
            tracker.update(index, 0)
            switch budget.failed() {
            case .failure:
                let status = failure.status.map { "status \($0)" } ?? "no status"
                let exhausted = PartFailure(part: part, attempts: attempt, retriesExhausted: true, cause: cause)
                throw Self.partError(failure.code, "\(exhausted) (\(status)): \(failure.message)", status: failure.status,
                                     bytesSent: failure.bytesSent, exhausted)
            case .success(let delay):
                tracker.retried()
                do { try await Task.sleep(for: delay) } catch { throw cancelled() }
            }
        }
    }

    /// The upload's error for a failed part: `line` names the part once; the typed account
    /// (part, attempts, the server's own error) is its `underlying` error.
    private static func partError(
        _ code: UploadError.Code, _ line: String, status: Int?, bytesSent: Int64?, _ failure: PartFailure
    ) -> UploadError {
        UploadError(code, line, status: status, bytesSent: bytesSent, totalBytes: failure.part.length, underlying: failure)
    }
}

/// Per-part bytes in flight and parts done, kept as running sums: an update costs the same
/// whatever the number of parts.
///
/// - Important: `update` may come from every loop at once. Reports go out one at a time, each
///   made from the latest state (a thread that finds another reporting leaves its change to
///   it), so they are in order: `bytesSent` goes down only in a report that names the parts
///   restarted. The callback runs with no lock held.
final class PartTracker: Sendable {
    private struct State {
        var inFlight: [Int64]
        var done: [Bool]
        /// The sum of `inFlight`.
        var inFlightBytes: Int64 = 0
        var doneBytes: Int64 = 0
        var partsDone = 0
        var retries = 0
        /// Parts that went back to byte 0 since the last report.
        var restarted: [Int] = []
        /// A thread is calling the report callback.
        var reporting = false
        /// The state changed since the report being made.
        var changed = false
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

    /// Part `index` has sent `sent` bytes of its current attempt; fewer than before means it
    /// started again.
    func update(_ index: Int, _ sent: Int64) {
        publish { state in
            guard !state.done[index], sent != state.inFlight[index] else { return }
            if sent < state.inFlight[index], !state.restarted.contains(index) { state.restarted.append(index) }
            state.inFlightBytes += sent - state.inFlight[index]
            state.inFlight[index] = sent
        }
    }

    func done(_ index: Int) {
        publish { state in
            guard !state.done[index] else { return }
            state.done[index] = true
            state.inFlightBytes -= state.inFlight[index]
            state.inFlight[index] = 0
            state.doneBytes += parts[index].length
            state.partsDone += 1
        }
    }

    func retried() { state.withLock { $0.retries += 1 } }

    /// The final report, whatever was reported before.
    func finish() {
        publish { $0.changed = true }
    }

    /// Applies `change`, then reports unless another thread is reporting: that one reports the
    /// change after its current report (at most a few rounds, then the next publisher does).
    private func publish(_ change: (inout State) -> Void) {
        var next = state.withLock { state -> ParallelProgress? in
            change(&state)
            guard report != nil else { return nil }
            state.changed = true
            guard !state.reporting else { return nil }
            state.reporting = true
            return takeReport(&state)
        }
        var rounds = 0
        while let progress = next {
            report?(progress)
            rounds += 1
            next = state.withLock { state -> ParallelProgress? in
                guard state.changed, rounds < 4 else {
                    state.reporting = false
                    return nil
                }
                return takeReport(&state)
            }
        }
    }

    private func takeReport(_ state: inout State) -> ParallelProgress {
        defer {
            state.changed = false
            state.restarted = []
        }
        return ParallelProgress(bytesSent: state.doneBytes + state.inFlightBytes, totalBytes: total, partsDone: state.partsDone,
                                partsTotal: parts.count, retries: state.retries, partsRestarted: state.restarted.map { parts[$0] })
    }
}
#endif
