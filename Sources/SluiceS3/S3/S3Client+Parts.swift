import Foundation
import Synchronization
import SluiceByteSources
import SluiceRequests
import SluiceTransport

extension S3Client {
    /// Sends parts `numbers` of `source` under `plan`, up to `concurrency` at once, on the part
    /// scheduler over the client's transport: each part signed when its attempt starts and
    /// retried alone from its own start (on libcurl's transport each range is read with `pread`
    /// straight into curl's buffer).
    ///
    /// - Returns: Each part's ETag and checksum.
    /// - Throws: `S3Error`.
    package func sendParts(
        _ numbers: [Int], of source: any ByteSource, plan: S3PartPlan, to location: S3Location, uploadID: String,
        counters: S3Counters, meter: S3PartProgress, accepted: ((S3CompletedPart) -> Void)? = nil
    ) async throws -> [S3CompletedPart] {
        guard !numbers.isEmpty else { return [] }
        let parts = numbers.map { number in
            let range = plan.range(ofPart: number)
            return UploadPart(number: number, offset: range.lowerBound, length: Int64(range.count))
        }
        return try await scheduleParts(
            .list(parts), to: location, uploadID: uploadID, counters: counters, meter: meter,
            body: { part in try SliceByteSource(source, range: part.range) },
            completed: { _, made in accepted?(made) }
        ).map(\.part)
    }

    /// Sends the parts of `feed` as `UploadPart`s of `uploadID` on the part scheduler.
    ///
    /// - Parameters:
    ///   - body: A part's bytes, asked for before each attempt.
    ///   - completed: Called on the calling task with each accepted part once nothing reads its
    ///     bytes any more, and what S3's answer made of it.
    /// - Returns: Each part's ETag and checksum, with its length, in part-number order.
    /// - Throws: `S3Error` (the failing part's, with the server's error as its fields); what
    ///   the producer of `feed` throws.
    package func scheduleParts(
        _ feed: PartFeed, to location: S3Location, uploadID: String, counters: S3Counters, meter: S3PartProgress,
        body: @escaping @Sendable (UploadPart) throws -> any ByteSource, completed: ((UploadPart, S3CompletedPart) -> Void)? = nil
    ) async throws -> [(part: S3CompletedPart, length: Int64)] {
        // Each attempt carries its own verdict: it reads the checksum of the bytes sent from
        // the attempt's request and hands the part's ETag and checksum on in its result; the
        // request (with its aws-chunked body and read-ahead buffers) ends with the attempt, so
        // memory does not grow with the part count.
        // The upload's verdict is never asked: each attempt carries its own.
        let unjudged: @Sendable (UploadPart, UploadResponse) -> PartVerdictOf<S3CompletedPart> = { part, _ in
            .fail("part \(part.number) was prepared with no verdict of its own")
        }
        var upload = ParallelUploadOf(parts: [], verdict: unjudged) { part in
            let call = S3Call(
                method: "PUT", location: location,
                query: [SigV4QueryItem("partNumber", "\(part.number)"), SigV4QueryItem("uploadId", uploadID)],
                headers: self.options.object.headers(for: .uploadPart),
                action: "UploadPart", uploadID: uploadID, partNumber: part.number)
            try self.checkSizedBody(part.length, "part \(part.number)")
            let request: S3PreparedRequest
            do { request = try self.prepare(call, body: .bytes(try body(part))) } catch let error as ByteSourceError {
                // The part's source (or a first-pass checksum of it) could not be read.
                throw S3Error(
                    .source, "UploadPart of part \(part.number) failed: \(error)", uploadID: uploadID, partNumber: part.number,
                    underlying: error)
            }
            return PartRequestOf(request: request.request, body: .bytes(request.body), attemptEnded: { await request.chunked?.endReading() }) {
                response in
                counters.sent(response.bytesSent)
                return Self.partVerdict(part.number, response, uploadID: uploadID) { try request.sentChecksum() }
            }
        }
        upload.concurrency = options.concurrency
        upload.budget = options.requestBudget
        upload.retryPolicy = options.retryPolicy
        upload.options = requestTransfer
        let retries = Atomic<Int>(0)
        defer { for _ in 0..<retries.load(ordering: .relaxed) { counters.retried() } }
        let results: [PartResultOf<S3CompletedPart>]
        do {
            results = try await PartScheduler(upload, over: transport).run(
                feed,
                progress: { progress in
                    retries.store(progress.retries, ordering: .relaxed)
                    meter.update(engineBytes: progress.bytesSent)
                }, completed: { completed?($0.part, $0.made) })
        } catch {
            throw Self.partsError(error, uploadID: uploadID)
        }
        return results.map { ($0.made, $0.part.length) }.sorted { $0.part.partNumber < $1.part.partNumber }
    }

    /// How S3's answer to `UploadPart` of part `number` is judged: a refusal (or a 200 with an
    /// `<Error>`) retried or failed as the server's `S3Error`; an answer accepted with the
    /// part's ETag and checksum (`completedPart`: S3's checksum must be the bytes sent), or
    /// failed when it cannot be.
    ///
    /// - Parameter sent: The checksum of the bytes the attempt sent, if any.
    package static func partVerdict(
        _ number: Int, _ response: UploadResponse, uploadID: String, sent: () throws -> Checksum?
    ) -> PartVerdictOf<S3CompletedPart> {
        let refusal: S3ServerError?
        do { refusal = try S3ServerError.refusal(in: response, action: "UploadPart") } catch { return .fail("\(error)", cause: error) }
        guard let refusal else {
            do { return .accepted(try completedPart(number, response: response, sent: try sent(), uploadID: uploadID)) } catch {
                return .fail("\(error)", cause: error)
            }
        }
        let line = "\(response.status) \(refusal.explanation)"
        let error = refusal.error(status: response.status, action: "UploadPart", uploadID: uploadID, partNumber: number)
        return refusal.isRetryable(status: response.status) ? .retry(line, cause: error) : .fail(line, cause: error)
    }

    /// The scheduler's failure of a part as an `S3Error`: the part's own error as its verdict or
    /// its preparation made it (the server's refusal, a checksum that differs, an unreadable
    /// source), with the attempts when its retries ran out; else the transport's failure,
    /// wrapped once.
    package static func partsError(_ error: any Error, uploadID: String) -> S3Error {
        guard let error = error as? UploadError else {
            if let error = error as? S3Error { return error }
            return S3Error(.transport, "UploadPart failed: \(error)", uploadID: uploadID, underlying: error)
        }
        let failure = error.underlying as? PartFailure
        let number = failure?.part.number
        let exhausted = failure?.retriesExhausted ?? false
        if var own = failure?.cause as? S3Error {
            own.uploadID = own.uploadID ?? uploadID
            own.partNumber = own.partNumber ?? number
            if let failure, exhausted { own.message += " (after \(failure.attempts) attempts)" }
            return own
        }
        return S3Error(part: number, failed: error, transport: failure?.cause as? UploadError, exhausted: exhausted, uploadID: uploadID)
    }
}

extension S3Error {
    /// The transport's failure of part `number`, which S3 never answered (a reset, a redirect
    /// not followed, a path the transport would change, cancellation), wrapped once.
    ///
    /// - Parameters:
    ///   - error: The scheduler's error for the part.
    ///   - transport: The transport's own error behind it, when there is one.
    ///   - exhausted: Every failure was transient and the retry policy allowed no more.
    fileprivate init(part number: Int?, failed error: UploadError, transport: UploadError?, exhausted: Bool, uploadID: String) {
        // The scheduler's error keeps the transport's code: the one mapping reads it.
        let code = S3Error.Code.of(transport: error, exhausted: exhausted).code
        if let transport, transport.code == .tooManyRedirects {
            self.init(
                code, "UploadPart of part \(number ?? 0) was \(transport.unfollowedRedirect)", status: transport.status,
                uploadID: uploadID, partNumber: number, underlying: error)
        } else if let transport, transport.code == .invalidURL {
            self.init(code, transport.message, uploadID: uploadID, underlying: error)
        } else {
            self.init(code, "UploadPart: \(error.message)", status: error.status, uploadID: uploadID, partNumber: number, underlying: error)
        }
    }
}

extension S3Client {
    /// `options.requestTransfer` for this client's transport. A transport that sends a
    /// `Content-Length` only by holding the body (URLSession on Linux, up to
    /// `URLSessionTransport.sizedBodyLimit`) is asked to, so S3 gets the length it needs;
    /// longer bodies go chunked on it.
    package var requestTransfer: UploadOptions {
        var transfer = options.requestTransfer
        if transport.maximumSizedBody != nil { transfer.prefersContentLength = true }
        return transfer
    }

    /// The longest object body (a part, a `PutObject`) this client sends over a transport that
    /// sends a `Content-Length` only up to a size (`UploadTransport.maximumSizedBody`: URLSession
    /// on Linux): that size less what the payload mode adds (aws-chunked signatures and
    /// trailer: about 12 KiB for 8 MiB); nil when the transport has no such limit.
    package var largestSizedBody: Int64? {
        guard let limit = transport.maximumSizedBody else { return nil }
        let mode: AWSChunkedEncoding.Mode?
        switch payloadMode {
        case .signedChunks(let trailer): mode = trailer.map { .signedWithTrailer($0) } ?? .signed
        case .unsignedTrailer(let algorithm): mode = .unsignedWithTrailer(algorithm)
        case .unsigned, .sha256: mode = nil
        }
        guard let mode, let encoding = try? AWSChunkedEncoding(mode: mode, decodedLength: limit) else { return limit }
        // What the encoding adds grows with the length: at `limit - overhead(limit)` it fits.
        return limit - (encoding.encodedLength - limit)
    }

    /// The part size to plan with: the one asked for, else on a transport with a sized-body
    /// limit the largest whole MiB under it (7 MiB on URLSession on Linux), else the default.
    package var plannedPartSize: Int64? {
        if let partSize = options.partSize { return partSize }
        return largestSizedBody.map { max(S3PartPlan.minimumPartSize, $0 / (1 << 20) * (1 << 20)) }
    }

    /// Refuses, before it is sent, an object body of `length` bytes that this client's transport
    /// could send only chunked (`largestSizedBody`; URLSession on Linux streams longer bodies
    /// chunked, and S3 refuses them: SeaweedFS answers 403 `SignatureDoesNotMatch`).
    ///
    /// - Throws: `S3Error.invalidOption` naming the size, the limit and what to do.
    package func checkSizedBody(_ length: Int64, _ what: @autoclosure () -> String) throws(S3Error) {
        guard let largest = largestSizedBody, length > largest, let limit = transport.maximumSizedBody else { return }
        throw S3Error(
            .invalidOption,
            "\(what()) is \(length) bytes, and this transport sends a Content-Length only for bodies up to \(limit) bytes as sent (URLSession on Linux streams longer ones chunked, which S3 refuses): use parts of at most \(largest) bytes or the curl transport"
        )
    }
}
