import Foundation

extension S3PresignedPartsUpload {
    /// Sends every part not recorded as accepted, up to `concurrency` at once.
    ///
    /// - Parameters:
    ///   - transport: Any transport: `CurlTransport` (the default on Linux: `Content-Length`,
    ///     each range read with `pread` into libcurl's buffer) or `URLSessionTransport` (the
    ///     bound stream pair per part; chunked on Linux, which SeaweedFS takes and AWS does not).
    ///   - progress: Bytes of the whole source sent so far (recorded parts count as sent).
    /// - Returns: Every part's number, ETag and checksum, in part-number order.
    /// - Throws: `S3Error`: `.server` (status, `serverCode`; an expired URL that was not renewed
    ///   is 403 `AccessDenied`), `.verification` (S3's checksum of a part differs from the bytes
    ///   sent), `.sourceChanged` (a file written to, grown, shrunk or replaced while it was sent:
    ///   no list is returned), `.retriesExhausted`, `.source`, `.state`, `.cancelled`, `.invalidOption`.
    public func run(
        over transport: any UploadTransport = TransportKind.platformDefault.makeTransport(),
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3PresignedPartsResult {
        guard (1...256).contains(concurrency), retryPolicy.retries >= 0 else {
            throw S3Error(.invalidOption, "concurrency must be 1 ... 256 and retries not negative", uploadID: uploadID)
        }
        let start = ContinuousClock.now
        let journal = S3PresignedPartsJournal(self)
        try journal.prepare()
        let count = plan.partCount ?? 1
        let meter = S3PartProgress(total: source.bytes.length, interval: transfer.progressInterval, report: progress)
        defer { meter.end() }
        var done: [Int: S3CompletedPart] = [:]
        for (number, part) in journal.recorded {
            done[number] = part.completedPart(algorithm: checksum?.s3Algorithm)
            meter.finish(part: number, length: Int64(plan.range(ofPart: number).count))
        }
        let skipped = done.count
        let missing = (1...count).filter { done[$0] == nil }
        let counters = S3Counters()
        let renewals = Lock(0)
        let sent = try await S3Client.runBounded(missing, concurrency: concurrency) { number in
            try await self.sendPart(number, over: transport, journal: journal, counters: counters, meter: meter, renewals: renewals)
        }
        for part in sent { done[part.partNumber] = part }
        if let change = S3Client.change(during: source) {
            // Parts may hold old and new bytes: not reported, and not kept for a rerun (which
            // has another fingerprint and sends every part again).
            journal.discard()
            throw S3Error(.sourceChanged, "the source changed while it was sent (\(change)): the parts of upload \(uploadID) may hold old and new bytes; send it again",
                          uploadID: uploadID)
        }
        return S3PresignedPartsResult(
            uploadID: uploadID, parts: (1...count).map { done[$0]! }, partsSkipped: skipped, bytesSent: counters.bytesSent,
            retries: counters.retries, renewedURLs: renewals.withLock { $0 }, elapsed: S3Client.seconds(since: start))
    }

    /// One part: its checksum, its URL, then attempts until S3 accepts it, a failure that
    /// retrying cannot help, or the retries run out.
    private func sendPart(
        _ number: Int, over transport: any UploadTransport, journal: S3PresignedPartsJournal, counters: S3Counters,
        meter: S3PartProgress, renewals: Lock<Int>
    ) async throws -> S3CompletedPart {
        let range = plan.range(ofPart: number)
        let length = Int64(range.count)
        let body: SliceByteSource
        let sum: Checksum?
        do {
            body = try SliceByteSource(source.bytes, range: range)
            sum = try checksum.map { try ChecksumHasher.checksum($0, of: body) }
        } catch {
            throw S3Error(.source, "part \(number) could not be read: \(error)", uploadID: uploadID, partNumber: number, underlying: error)
        }
        var renewed = false
        var presigned = try await askURL(number, range: range, checksum: sum, renewal: false)
        var options = transfer
        options.maximumRedirects = 0
        // S3 answers an empty body or a small error document: one past the limit fails the
        // part at once instead of being read to its end (issue 18.1).
        options.responseBody = .protocolAnswer
        // At most `concurrency` parts at once: the engine's per-origin limit does not hold
        // them back (a URL fetched just before its part goes does not age in a queue).
        options.concurrencyBoundByCaller = true
        var budget = RetryBudget(retryPolicy)
        while true {
            if !presigned.hasExpired(at: now()) {
                switch try await attemptPart(number, body: body, checksum: sum, at: presigned, over: transport, options: options,
                                             journal: journal, counters: counters, meter: meter) {
                case .accepted(let part):
                    return part
                case .retry(var failure):
                    meter.update(part: number, bytes: 0, length: length)
                    switch budget.failed() {
                    case .failure:
                        failure.message += " (after \(budget.failures) attempts)"
                        throw failure
                    case .success(let delay):
                        counters.retried()
                        do { try await Task.sleep(for: delay) } catch {
                            throw S3Error(.cancelled, "cancelled while waiting to retry part \(number)", uploadID: uploadID, partNumber: number)
                        }
                    }
                    continue
                case .expired:
                    break   // not the part's fault, nor counted: renewed below
                }
            }
            // Expired: asked for again, once.
            guard !renewed else { throw expired(number, presigned) }
            renewed = true
            renewals.withLock { $0 += 1 }
            presigned = try await askURL(number, range: range, checksum: sum, renewal: true)
        }
    }

    /// How one attempt at a part ended, when it did not fail for good.
    private enum Attempt {
        case accepted(S3CompletedPart)
        /// S3 refused the URL as expired (403 `AccessDenied`, "Request has expired").
        case expired
        /// A failure another attempt may get past (a reset, 408/429/5xx, `SlowDown`).
        case retry(S3Error)
    }

    /// Sends part `number` once to `presigned`; an accepted part is recorded before it counts.
    ///
    /// - Throws: `S3Error` for what retrying cannot help.
    private func attemptPart(
        _ number: Int, body: SliceByteSource, checksum sum: Checksum?, at presigned: S3PresignedURL, over transport: any UploadTransport,
        options: UploadOptions, journal: S3PresignedPartsJournal, counters: S3Counters, meter: S3PartProgress
    ) async throws -> Attempt {
        let length = body.length
        do {
            let request = try UploadRequest(url: presigned.url, method: "PUT",
                                            headers: presigned.headers.sorted { $0.key < $1.key }.map { HTTPHeader(name: $0.key, value: $0.value) })
            let response = try await transport.send(request, body: .bytes(body), options: options) { bytes in
                meter.update(part: number, bytes: bytes, length: length)
            }
            counters.sent(response.bytesSent)
            if response.isSuccess {
                let part = try S3Client.completedPart(number, response: response, sent: sum, uploadID: uploadID)
                try journal.accepted(S3PartETag(partNumber: number, eTag: part.eTag, checksum: sum?.base64))
                meter.finish(part: number, length: length)
                return .accepted(part)
            }
            let answer = S3ServerError(status: response.status, body: response.body)
            if answer.code == "AccessDenied", answer.message == "Request has expired" || presigned.hasExpired(at: now()) { return .expired }
            let failure = answer.error(status: response.status, action: "UploadPart", uploadID: uploadID, partNumber: number)
            guard answer.isRetryable(status: response.status) else { throw failure }
            return .retry(failure)
        } catch let error as S3Error {
            throw error
        } catch let error as UploadError where error.code == .cancelled || Task.isCancelled {
            throw S3Error(.cancelled, "cancelled during part \(number)", uploadID: uploadID, partNumber: number, underlying: error)
        } catch let error as UploadError where error.isTransient {
            return .retry(S3Error(.retriesExhausted, "UploadPart of part \(number) failed: \(error.message)", uploadID: uploadID,
                                  partNumber: number, underlying: error))
        } catch let error as UploadError where error.code == .sourceFailed {
            throw S3Error(.source, "UploadPart of part \(number) failed: \(error.message)", uploadID: uploadID, partNumber: number,
                          underlying: error)
        } catch {
            throw S3Error(.transport, "UploadPart of part \(number) failed: \(error)", uploadID: uploadID, partNumber: number,
                          underlying: error)
        }
    }

    /// The backend's URL for a part; its failure is the part's.
    private func askURL(_ number: Int, range: Range<Int64>, checksum: Checksum?, renewal: Bool) async throws -> S3PresignedURL {
        do {
            return try await url(S3PresignedPartRequest(uploadID: uploadID, partNumber: number, range: range, checksum: checksum,
                                                        renewal: renewal))
        } catch let error as S3Error {
            throw error
        } catch is CancellationError {
            throw S3Error(.cancelled, "cancelled while asking for the URL of part \(number)", uploadID: uploadID, partNumber: number)
        } catch {
            throw S3Error(.transport, "the URL of part \(number) could not be had: \(error)", uploadID: uploadID, partNumber: number,
                          underlying: error)
        }
    }

    /// The failure of a part whose URL expired and was renewed once already.
    private func expired(_ number: Int, _ presigned: S3PresignedURL) -> S3Error {
        let when = presigned.expiresAt.map { " at \(SigV4Timestamp($0).amzDate)" } ?? ""
        return S3Error(.server, "the presigned URL of part \(number) expired\(when), and the one asked for again had expired too (403 AccessDenied)",
                       status: 403, serverCode: "AccessDenied", uploadID: uploadID, partNumber: number)
    }
}
