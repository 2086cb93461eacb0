import Foundation
import SluiceRequests

/// Where a part scheduler's parts come from.
package enum PartFeed: Sendable {
    /// A fixed list of ranges of a random-access source: each part is prepared (signed) just
    /// before each of its attempts.
    case list([UploadPart])
    /// Parts made one at a time (a stream read into pooled buffers), nil at the end. One call
    /// at a time, made once a slot is free, as a child of the scheduler's group beside the parts
    /// in flight: a part that fails for good is noticed while the next one is made (a read of
    /// stdin that waits), and cancels that call with the other parts.
    case producer(@Sendable () async throws -> UploadPart?)
}

/// The one way parts are sent (a ranged upload on any transport, S3's parts, a stream's pooled
/// parts): at most `concurrency` attempts in flight, each holding a permit of the shared
/// `RequestBudget` while it is sent, each part retried alone from its first byte under its own
/// `RetryBudget`, judged by the protocol's `PartVerdict`, with running-sum progress.
///
/// - Important: A part is prepared (signed) when its attempt starts, not when it is queued. A
///   part that fails for good cancels the others; the error names it once and carries a typed
///   `PartFailure`. Memory besides the results: the parts in flight, never the part count.
package struct PartScheduler<Made: Sendable>: Sendable {
    /// Concurrency, budget, retry policy, options, `prepare` and `verdict` (its `parts` are
    /// not read: the feed says which parts go).
    package let upload: ParallelUploadOf<Made>
    package let transport: any UploadTransport

    package init(_ upload: ParallelUploadOf<Made>, over transport: any UploadTransport) {
        var bounded = upload
        // `concurrency` parts run, whatever the engine's per-origin limit; each is prepared
        // (signed) just before it is sent, so none ages in the engine's queue.
        bounded.options.concurrencyBoundByCaller = true
        self.upload = bounded
        self.transport = transport
    }

    /// Sends every part of `feed`, up to `upload.concurrency` at once.
    ///
    /// - Parameters:
    ///   - feed: The parts.
    ///   - progress: Every change and once at the end, from the transport's threads: keep it short.
    ///   - completed: Called by the scheduling task with each accepted part once its task ended
    ///     (nothing reads the part's bytes any more: a pooled buffer can be refilled).
    /// - Returns: Per-part results, in the feed's order.
    /// - Throws: `UploadError` (`.cancelled`, or the failing part's code with a `PartFailure`
    ///   as `underlying`); what the producer throws, as it is.
    package func run(
        _ feed: PartFeed, progress: (@Sendable (ParallelProgress) -> Void)?, completed: ((PartResultOf<Made>) -> Void)? = nil
    ) async throws -> [PartResultOf<Made>] {
        let tracker: PartTracker
        var listed: IndexingIterator<[UploadPart]>?
        switch feed {
        case .list(let parts):
            tracker = PartTracker(parts: parts, report: progress)
            listed = parts.makeIterator()
        case .producer:
            tracker = PartTracker(report: progress)
        }
        let concurrency = max(1, upload.concurrency)
        return try await withThrowingTaskGroup(of: PartEvent.self) { group in
            var results: [PartResultOf<Made>?] = []
            var inFlight = 0
            var producing = false
            var ended = false
            func start(_ part: UploadPart) {
                let index = results.count
                results.append(nil)
                tracker.begin(index, part)
                inFlight += 1
                group.addTask { .sent(index, try await self.send(part, index: index, tracker: tracker)) }
            }
            do {
                while true {
                    // A slot first, then the part: a producer fills its next buffer only once a
                    // part has ended and given its buffer back, so a stream's parts never hold
                    // more than `concurrency` buffers.
                    switch feed {
                    case .list:
                        while !ended, inFlight < concurrency {
                            if let part = listed?.next() { start(part) } else { ended = true }
                        }
                    case .producer(let next):
                        if !ended, !producing, inFlight < concurrency {
                            producing = true
                            group.addTask { .produced(try await next()) }
                        }
                    }
                    guard inFlight > 0 || producing, let event = try await group.next() else { break }
                    switch event {
                    case .produced(let part):
                        producing = false
                        if let part { start(part) } else { ended = true }
                    case .sent(let index, let result):
                        results[index] = result
                        inFlight -= 1
                        completed?(result)
                    }
                }
            } catch {
                group.cancelAll()
                throw error
            }
            tracker.finish()
            return results.compactMap { $0 }
        }
    }

    /// What a child of the scheduler's group ends with: the producer's next part (nil at the
    /// end), or a part sent.
    private enum PartEvent: Sendable {
        case produced(UploadPart?)
        case sent(Int, PartResultOf<Made>)
    }

    /// One part: attempts until the verdict accepts it, fails it, or its retries run out.
    private func send(_ part: UploadPart, index: Int, tracker: PartTracker) async throws -> PartResultOf<Made> {
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
            var verdict = { @Sendable [upload] response in upload.verdict(part, response) }
            do {
                defer { upload.budget?.release() }
                let prepared: PartRequestOf<Made>
                do { prepared = try await upload.prepare(part) } catch {
                    if Task.isCancelled || (error as? UploadError)?.code == .cancelled { throw cancelled() }
                    // Refused before a byte was sent (the source, a first-pass checksum): the
                    // protocol's own error is the cause, as it is.
                    let code = (error as? UploadError)?.code ?? .transport
                    throw Self.partError(
                        code, "\(part) failed: \(error)", status: nil, bytesSent: 0,
                        PartFailure(part: part, attempts: attempt, retriesExhausted: false, cause: error))
                }
                if let own = prepared.verdict { verdict = own }
                do {
                    let response = try await transport.send(prepared.request, body: prepared.body, options: upload.options) { sent in
                        tracker.update(index, sent)
                    }
                    await prepared.attemptEnded?()
                    outcome = .success(response)
                } catch {
                    await prepared.attemptEnded?()
                    throw error
                }
            } catch let error as UploadError where error.underlying is PartFailure {
                throw error
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
                switch verdict(response) {
                case .accepted(let made):
                    tracker.done(index)
                    return PartResultOf(part: part, response: response, attempts: attempt, made: made)
                case .retry(let why, let reason):
                    failure = UploadError(.httpStatus, why, status: response.status, bytesSent: response.bytesSent, totalBytes: part.length)
                    cause = reason ?? failure
                case .fail(let why, let reason):
                    throw Self.partError(
                        .httpStatus, "\(part) failed: \(why)", status: response.status, bytesSent: response.bytesSent,
                        PartFailure(part: part, attempts: attempt, retriesExhausted: false, cause: reason))
                case .again:
                    tracker.update(index, 0)
                    continue
                }
            case .failure(let error) where error.isTransient:
                (failure, cause) = (error, error)
            case .failure(let error):
                throw Self.partError(
                    error.code, "\(part) failed: \(error.message)", status: error.status, bytesSent: error.bytesSent,
                    PartFailure(part: part, attempts: attempt, retriesExhausted: false, cause: error))
            }
            tracker.update(index, 0)
            switch budget.failed() {
            case .failure:
                let status = failure.status.map { "status \($0)" } ?? "no status"
                let exhausted = PartFailure(part: part, attempts: attempt, retriesExhausted: true, cause: cause)
                throw Self.partError(
                    failure.code, "\(exhausted) (\(status)): \(failure.message)", status: failure.status,
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

extension ParallelUploadOf {
    /// Sends every part over `transport`, up to `concurrency` at once.
    ///
    /// A part that fails (connection reset, no answer, a `.retry` verdict) is tried again on
    /// its own from its first byte after a bounded backoff, while the other parts go on. A part
    /// that fails past `retries`, or gets a `.fail` verdict, cancels the others and fails the
    /// upload with one line naming the part, its range, the status and the cause. Cancelling
    /// the calling task stops every part (within one loop turn on the curl transport).
    ///
    /// `progress` is called from the transport's threads on every change (a few per 64 KiB
    /// sent) and once at the end: keep it short, and throttle display yourself.
    ///
    /// - Returns: Per-part results in the order of `parts`.
    /// - Throws: `UploadError` (`.cancelled`, or the failing part's code, with a `PartFailure`
    ///   as its `underlying` error).
    public func send(
        over transport: any UploadTransport, progress: (@Sendable (ParallelProgress) -> Void)? = nil
    ) async throws -> [PartResultOf<Made>] {
        try await PartScheduler(self, over: transport).run(.list(parts), progress: progress)
    }
}
