import Foundation
import Synchronization

extension S3Client {
    /// Sends parts `numbers` of `source` under `plan`, up to `concurrency` at once: on the
    /// transfer engine's parallel ranged upload when the transport is libcurl's (each part
    /// read with `pread` straight into curl's buffer, retried alone from its own start), else
    /// on a bounded task group over the transport.
    ///
    /// - Returns: Each part's ETag and checksum.
    /// - Throws: `S3Error`.
    func sendParts(
        _ numbers: [Int], of source: any ByteSource, plan: S3PartPlan, to location: S3Location, uploadID: String,
        counters: S3Counters, meter: S3PartProgress
    ) async throws -> [S3CompletedPart] {
        #if canImport(CCurl)
        if let curl = transport as? CurlTransport {
            return try await sendPartsOnEngine(curl.engine, numbers, of: source, plan: plan, to: location, uploadID: uploadID,
                                               counters: counters, meter: meter)
        }
        #endif
        return try await S3Client.runBounded(numbers, concurrency: options.concurrency) { number in
            let range = plan.range(ofPart: number)
            let length = Int64(range.count)
            let part = try await self.withRequestPermit {
                try await self.uploadPart(
                    location, uploadID: uploadID, number: number, body: SliceByteSource(source, range: range), counters: counters
                ) { bytes in meter.update(part: number, bytes: bytes, length: length) }
            }
            meter.finish(part: number, length: length)
            return part
        }
    }

    #if canImport(CCurl)
    private func sendPartsOnEngine(
        _ engine: TransferEngine, _ numbers: [Int], of source: any ByteSource, plan: S3PartPlan, to location: S3Location,
        uploadID: String, counters: S3Counters, meter: S3PartProgress
    ) async throws -> [S3CompletedPart] {
        guard !numbers.isEmpty else { return [] }
        // The request each part's current attempt goes out with, until it is accepted: then the
        // checksum of the bytes sent is read from it and the request (with its aws-chunked body
        // and read-ahead buffers) is dropped, so memory does not grow with the part count.
        let prepared = Lock<[Int: S3PreparedRequest]>([:])
        let sent = Lock<[Int: Result<Checksum?, any Error>]>([:])
        let parts = numbers.map { number in
            let range = plan.range(ofPart: number)
            return UploadPart(number: number, offset: range.lowerBound, length: Int64(range.count))
        }
        var upload = ParallelUpload(parts: parts) { part in
            let call = S3Call(method: "PUT", location: location,
                              query: [SigV4QueryItem("partNumber", "\(part.number)"), SigV4QueryItem("uploadId", uploadID)],
                              action: "UploadPart", uploadID: uploadID, partNumber: part.number)
            let request = try self.prepare(call, body: .bytes(try SliceByteSource(source, range: part.range)))
            prepared.withLock { $0[part.number] = request }
            return PartRequest(request: request.request, body: .bytes(request.body))
        }
        upload.concurrency = options.concurrency
        upload.budget = options.requestBudget
        upload.retryPolicy = options.retryPolicy
        upload.options = options.requestTransfer
        upload.verdict = { part, response in
            if response.isSuccess {
                let request = prepared.withLock { $0.removeValue(forKey: part.number) }
                let checksum = Result { try request?.sentChecksum() }
                sent.withLock { $0[part.number] = checksum }
                return .accept
            }
            let error = S3ServerError(status: response.status, body: response.body)
            let line = "\(response.status) \(error.explanation)"
            return error.isRetryable(status: response.status) ? .retry(line, cause: error) : .fail(line, cause: error)
        }
        let retries = Atomic<Int>(0)
        let results: [PartResult]
        do {
            results = try await engine.send(upload) { progress in
                retries.store(progress.retries, ordering: .relaxed)
                meter.update(engineBytes: progress.bytesSent)
            }
        } catch {
            for _ in 0..<retries.load(ordering: .relaxed) { counters.retried() }
            throw Self.partsError(error, uploadID: uploadID)
        }
        for _ in 0..<retries.load(ordering: .relaxed) { counters.retried() }
        let checksums = sent.withLock { $0 }
        return try results.map { result in
            counters.sent(result.response.bytesSent)
            let number = result.part.number
            return try Self.completedPart(number, response: result.response, sent: try checksums[number]?.get() ?? nil, uploadID: uploadID)
        }
    }

    /// The engine's failure of a part as an `S3Error`, from its typed account (`PartFailure`):
    /// the part, the attempts and the server's error document.
    private static func partsError(_ error: any Error, uploadID: String) -> S3Error {
        guard let error = error as? UploadError else {
            if let error = error as? S3Error { return error }
            return S3Error(.transport, "UploadPart failed: \(error)", uploadID: uploadID, underlying: error)
        }
        let failure = error.underlying as? PartFailure
        let number = failure?.part.number
        let exhausted = failure?.retriesExhausted ?? false
        switch failure?.cause {
        case let server as S3ServerError:
            var refused = server.error(status: error.status ?? 0, action: "UploadPart", uploadID: uploadID, partNumber: number)
            if let failure, exhausted { refused.message += " (after \(failure.attempts) attempts)" }
            refused.underlying = error
            return refused
        case var prepared as S3Error:
            // Refused while the part was prepared (its source, a first-pass checksum).
            prepared.uploadID = prepared.uploadID ?? uploadID
            prepared.partNumber = prepared.partNumber ?? number
            return prepared
        case let transport as UploadError where transport.code == .tooManyRedirects:
            return S3Error(.server, "UploadPart of part \(number ?? 0) was \(transport.unfollowedRedirect)", status: transport.status,
                           uploadID: uploadID, partNumber: number, underlying: error)
        default:
            let code: S3Error.Code
            switch error.code {
            case .cancelled: code = .cancelled
            case .sourceFailed: code = .source
            case .httpStatus: code = .server
            default: code = exhausted ? .retriesExhausted : .transport
            }
            return S3Error(code, "UploadPart: \(error.message)", status: error.status, uploadID: uploadID, partNumber: number,
                           underlying: error)
        }
    }
    #endif
}
