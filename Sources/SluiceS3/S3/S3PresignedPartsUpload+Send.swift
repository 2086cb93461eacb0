import Foundation
import Synchronization
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

extension S3PresignedPartsUpload {
    /// Sends every part not recorded as accepted, up to `concurrency` at once.
    ///
    /// - Parameters:
    ///   - transport: Any transport: `CurlTransport` (the default on Linux: `Content-Length`,
    ///     each range read with `pread` into libcurl's buffer) or `URLSessionTransport` (the
    ///     bound stream pair per part; on Linux a part of up to `URLSessionTransport.sizedBodyLimit`
    ///     goes with `Content-Length`, held in memory, a longer one chunked, which SeaweedFS takes
    ///     for a presigned part and AWS does not). Parts go through the part scheduler either way.
    ///   - progress: Bytes of the parts to send (`partNumbers`, else the whole source) sent so
    ///     far (recorded parts count as sent).
    /// - Returns: Every part's number, ETag and checksum (of `partNumbers` only, when set), in
    ///   part-number order.
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
        let chosen = try chosenParts()
        let start = ContinuousClock.now
        // The record is read (and created, synced) on the blocking pool's threads.
        let journal = try await BlockingPool.shared.run { [self] in try S3PresignedPartsJournal(self, chosen: chosen) }
        // The record stays for a rerun (synced here); a success closes it first, to say a failed sync.
        defer { try? journal.close() }
        let total = chosen.reduce(Int64(0)) { $0 + Int64(plan.range(ofPart: $1).count) }
        let meter = S3PartProgress(total: total, interval: transfer.progressInterval, report: progress)
        defer { meter.end() }
        var done: [Int: S3CompletedPart] = [:]
        for (number, part) in journal.recorded {
            done[number] = part.completedPart(algorithm: checksum)
            meter.finish(part: number, length: Int64(plan.range(ofPart: number).count))
        }
        let skipped = done.count
        let missing = chosen.filter { done[$0] == nil }
        let counters = S3Counters()
        let renewals = Lock(0)
        let sent = try await sendParts(missing, over: transport, journal: journal, counters: counters, meter: meter, renewals: renewals)
        for part in sent { done[part.partNumber] = part }
        if let change = S3Client.change(during: source) {
            // Parts may hold old and new bytes: not reported, and not kept for a rerun (which
            // has another fingerprint and sends every part again).
            journal.discard()
            throw S3Error(
                .sourceChanged, "the source changed while it was sent (\(change)): the parts of upload \(uploadID) may hold old and new bytes; send it again",
                uploadID: uploadID)
        }
        try await BlockingPool.shared.run(ignoringCancellation: true) { try journal.close() }
        return S3PresignedPartsResult(
            uploadID: uploadID, parts: chosen.map { done[$0]! }, partsSkipped: skipped, bytesSent: counters.bytesSent,
            retries: counters.retries, renewedURLs: renewals.withLock { $0 }, elapsed: S3Client.seconds(since: start))
    }

    /// What one part in flight has: its bytes, their checksum, its URL and whether it was renewed.
    private struct PartInFlight: Sendable {
        package var body: SliceByteSource
        package var checksum: Checksum?
        package var url: S3PresignedURL
        /// S3 refused the URL as expired: the next attempt asks for another.
        package var expired = false
        package var renewed = false
    }

    /// Sends parts `numbers` on the part scheduler: each part's checksum and URL are had when it
    /// first starts; an expired URL is asked for again once (not counted as a retry); an
    /// accepted part is recorded before it counts.
    private func sendParts(
        _ numbers: [Int], over transport: any UploadTransport, journal: S3PresignedPartsJournal, counters: S3Counters,
        meter: S3PartProgress, renewals: Lock<Int>
    ) async throws -> [S3CompletedPart] {
        guard !numbers.isEmpty else { return [] }
        let parts = numbers.map { number in
            let range = plan.range(ofPart: number)
            return UploadPart(number: number, offset: range.lowerBound, length: Int64(range.count))
        }
        let inFlight = Lock<[Int: PartInFlight]>([:])
        let verdict: @Sendable (UploadPart, UploadResponse) -> PartVerdictOf<S3CompletedPart> = { part, response in
            let number = part.number
            counters.sent(response.bytesSent)
            guard let entry = inFlight.withLock({ $0[number] }) else { return .fail("part \(number) was not prepared") }
            let refusal: S3ServerError?
            do { refusal = try S3ServerError.refusal(in: response, action: "UploadPart") } catch { return .fail("\(error)", cause: error) }
            guard let answer = refusal else {
                let completed: S3CompletedPart
                do {
                    completed = try S3Client.completedPart(number, response: response, sent: entry.checksum, uploadID: uploadID)
                    try journal.accepted(S3PartETag(partNumber: number, eTag: completed.eTag, checksum: entry.checksum?.base64))
                } catch {
                    return .fail("\(error)", cause: error)
                }
                inFlight.withLock { $0[number] = nil }
                return .accepted(completed)
            }
            if answer.code == "AccessDenied", answer.message == "Request has expired" || entry.url.hasExpired(at: now()) {
                inFlight.withLock { $0[number]?.expired = true }
                return .again("the URL of part \(number) expired")
            }
            let line = "\(response.status) \(answer.explanation)"
            let error = answer.error(status: response.status, action: "UploadPart", uploadID: uploadID, partNumber: number)
            return answer.isRetryable(status: response.status) ? .retry(line, cause: error) : .fail(line, cause: error)
        }
        var upload = ParallelUploadOf(parts: parts, verdict: verdict) { part in
            let number = part.number
            var entry: PartInFlight
            if let known = inFlight.withLock({ $0[number] }) {
                entry = known
            } else {
                let body: SliceByteSource
                let sum: Checksum?
                do {
                    body = try SliceByteSource(source.bytes, range: part.range)
                    sum = try checksum.map { try ChecksumHasher.checksum($0, of: body) }
                } catch {
                    throw S3Error(.source, "part \(number) could not be read: \(error)", uploadID: uploadID, partNumber: number, underlying: error)
                }
                entry = PartInFlight(body: body, checksum: sum, url: try await askURL(number, range: part.range, checksum: sum, renewal: false))
            }
            if entry.expired || entry.url.hasExpired(at: now()) {
                // Expired: asked for again, once.
                guard !entry.renewed else { throw expired(number, entry.url) }
                entry.renewed = true
                entry.expired = false
                renewals.withLock { $0 += 1 }
                entry.url = try await askURL(number, range: part.range, checksum: entry.checksum, renewal: true)
            }
            inFlight.withLock { [entry] in $0[number] = entry }
            let request = try UploadRequest(
                url: entry.url.url, method: "PUT",
                headers: entry.url.headers.sorted { $0.key < $1.key }.map { HTTPHeader(name: $0.key, value: $0.value) }
                    + (customerKey.map { [HTTPHeader(name: S3CustomerKey.keyHeader, value: $0.base64)] } ?? []))
            return PartRequestOf(request: request, body: .bytes(entry.body))
        }
        upload.concurrency = concurrency
        upload.retryPolicy = retryPolicy
        upload.options = transfer
        upload.options.maximumRedirects = 0
        // S3 answers an empty body or a small error document: one past the limit fails the
        // part at once instead of being read to its end (issue 18.1).
        upload.options.responseBody = .protocolAnswer
        // URLSession on Linux sends a Content-Length only for a body it holds (up to its limit).
        if transport.maximumSizedBody != nil { upload.options.prefersContentLength = true }
        let retries = Atomic<Int>(0)
        defer { for _ in 0..<retries.load(ordering: .relaxed) { counters.retried() } }
        let results: [PartResultOf<S3CompletedPart>]
        do {
            results = try await upload.send(over: transport) { progress in
                retries.store(progress.retries, ordering: .relaxed)
                meter.update(engineBytes: progress.bytesSent)
            }
        } catch {
            throw S3Client.partsError(error, uploadID: uploadID)
        }
        return results.map(\.made)
    }

    /// The backend's URL for a part; its failure is the part's.
    private func askURL(_ number: Int, range: Range<Int64>, checksum: Checksum?, renewal: Bool) async throws -> S3PresignedURL {
        do {
            return try await url(
                S3PresignedPartRequest(
                    uploadID: uploadID, partNumber: number, range: range, checksum: checksum,
                    renewal: renewal))
        } catch let error as S3Error {
            throw error
        } catch is CancellationError {
            throw S3Error(.cancelled, "cancelled while asking for the URL of part \(number)", uploadID: uploadID, partNumber: number)
        } catch {
            throw S3Error(
                .transport, "the URL of part \(number) could not be had: \(error)", uploadID: uploadID, partNumber: number,
                underlying: error)
        }
    }

    /// The failure of a part whose URL expired and was renewed once already.
    private func expired(_ number: Int, _ presigned: S3PresignedURL) -> S3Error {
        let when = presigned.expiresAt.map { " at \(SigV4Timestamp($0).amzDate)" } ?? ""
        return S3Error(
            .server, "the presigned URL of part \(number) expired\(when), and the one asked for again had expired too (403 AccessDenied)",
            status: 403, serverCode: "AccessDenied", uploadID: uploadID, partNumber: number)
    }
}
