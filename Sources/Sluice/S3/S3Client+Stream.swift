import Foundation

extension S3Client {
    /// Uploads a stream that cannot be read again (stdin): one `PutObject` when it ends within
    /// the first part, otherwise a multipart upload whose parts are held in a bounded pool of
    /// `concurrency + 1` buffers. Part sizes grow as the stream goes on (`S3PartPlan`), unless
    /// `equalParts`.
    ///
    /// - Important: Memory: at most `concurrency + 1` buffers of the current part size. On any
    ///   failure or cancellation the multipart upload is aborted: a stream cannot be resumed,
    ///   so nothing is left at the server to bill.
    /// - Throws: `S3Error`.
    public func uploadStream(
        _ stream: any SequentialByteSource, to location: S3Location, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3UploadResult {
        try checkBeforeAnyEffect()
        let start = ContinuousClock.now
        let counters = S3Counters()
        let plan = try S3PartPlan(streamWithFirstPartSize: options.partSize, equalParts: options.equalParts,
                                  stepParts: options.streamStepParts)
        let meter = S3PartProgress(total: stream.length.value, interval: options.transfer.progressInterval, report: progress)
        defer { meter.end() }

        let first = S3PartBuffer(capacity: Int(plan.nominalSize(ofPart: 1)))
        let firstCount = try await Self.fill(first, from: stream, size: Int(plan.nominalSize(ofPart: 1)), stallTimeout: options.transfer.stallTimeout)
        if firstCount < Int(plan.nominalSize(ofPart: 1)) {
            return try await putObject(first, to: location, counters: counters, meter: meter, start: start)
        }

        let uploadID = try await createMultipartUpload(location, counters: counters)
        /// The part count and length, once `CompleteMultipartUpload` was sent.
        var completing: (count: Int, length: Int64)?
        do {
            let parts = try await sendStreamParts(stream, first: first, plan: plan, location: location, uploadID: uploadID,
                                                  counters: counters, meter: meter)
            try Task.checkCancellation()
            completing = (parts.count, parts.reduce(0) { $0 + $1.length })
            let completed = try await completeMultipartUpload(location, uploadID: uploadID, parts: parts.map(\.part), counters: counters)
            let verified = try verify(completed, parts: parts.map(\.part), lengths: parts.map(\.length), uploadID: uploadID)
            return S3UploadResult(
                location: location, length: parts.reduce(0) { $0 + $1.length }, eTag: completed.eTag, uploadID: uploadID,
                partCount: parts.count, partsSkipped: 0, resumed: false, bytesSent: counters.bytesSent, retries: counters.retries,
                checksum: verified, elapsed: Self.seconds(since: start))
        } catch {
            // A stream cannot be resumed: abort, outside the (possibly cancelled) task. After
            // Complete was sent, first ask whether the server completed it (an abort of a
            // completed upload may still answer 204).
            let client = self
            var failure = (error as? S3Error) ?? classify(error, S3Call(method: "PUT", location: location, action: "UploadPart")).error
            failure.uploadID = uploadID
            if let completing {
                let completion = await Task.detached {
                    await client.completion(of: location, partCount: completing.count, length: completing.length)
                }.value
                if case .completed = completion {
                    failure.completion = completion
                    throw failure
                }
            }
            let aborted = await Task.detached { try? await client.abortMultipartUpload(location, uploadID: uploadID) }.value
            switch aborted {
            case nil:
                failure.message += " (aborting upload \(uploadID) failed too: remove it with sluice s3 abort \(location))"
            case true?:
                failure.message += " (stdin cannot be resumed: upload \(uploadID) was aborted)"
            case false?:
                if completing != nil { failure.completion = .mayHaveCompleted }
                failure.message += " (upload \(uploadID) was no longer at the server)"
            }
            throw failure
        }
    }

    /// Reads the stream part by part into pooled buffers and sends each as soon as it is full.
    private func sendStreamParts(
        _ stream: any SequentialByteSource, first: S3PartBuffer, plan: S3PartPlan, location: S3Location, uploadID: String,
        counters: S3Counters, meter: S3PartProgress
    ) async throws -> [(part: S3CompletedPart, length: Int64)] {
        let concurrency = options.concurrency
        let partLimit = options.partLimit ?? S3PartPlan.maximumParts
        return try await withThrowingTaskGroup(of: (S3CompletedPart, Int64, S3PartBuffer).self) { group in
            var results: [(part: S3CompletedPart, length: Int64)] = []
            var free: [S3PartBuffer] = []
            var allocated = 1
            var inFlight = 0
            var number = 1
            var current: S3PartBuffer? = first
            func launch(_ buffer: S3PartBuffer, _ number: Int) {
                let length = buffer.length
                group.addTask {
                    let part = try await self.uploadPart(location, uploadID: uploadID, number: number, body: buffer, counters: counters) { bytes in
                        meter.update(part: number, bytes: bytes, length: length)
                    }
                    meter.finish(part: number, length: length)
                    return (part, length, buffer)
                }
                inFlight += 1
            }
            while true {
                guard let buffer = current else { break }
                launch(buffer, number)
                number += 1
                // Take a buffer for the next part: a free one, a new one while the pool is below
                // concurrency + 1, or the next one a finished part gives back.
                while inFlight >= concurrency || (free.isEmpty && allocated >= concurrency + 1) {
                    guard let (part, length, returned) = try await group.next() else { break }
                    inFlight -= 1
                    results.append((part, length))
                    free.append(returned)
                }
                let next: S3PartBuffer
                if let reused = free.popLast() {
                    next = reused
                } else {
                    next = S3PartBuffer(capacity: Int(plan.nominalSize(ofPart: number)))
                    allocated += 1
                }
                let size = Int(plan.nominalSize(ofPart: number))
                let count = try await Self.fill(next, from: stream, size: size, stallTimeout: options.transfer.stallTimeout)
                if count == 0 {
                    current = nil
                } else {
                    guard number <= partLimit else {
                        let limit = partLimit == S3PartPlan.maximumParts ? "S3's limit of 10,000 parts" : "the limit of \(partLimit) parts"
                        let shape = plan.equalParts ? "equal parts of \(plan.partSize) bytes" : "parts growing from \(plan.partSize) bytes"
                        throw S3Error(.tooManyParts, "the stream goes past \(limit) (\(plan.streamCapacity(parts: partLimit)) bytes in \(shape)): use a larger part size", uploadID: uploadID)
                    }
                    current = next
                }
                try Task.checkCancellation()
            }
            while let (part, length, _) = try await group.next() {
                results.append((part, length))
            }
            return results.sorted { $0.part.partNumber < $1.part.partNumber }
        }
    }

    /// Fills `buffer` on a thread of its own: a read of stdin may block for as long as the
    /// producer takes (up to `stallTimeout` of silence), and must not hold one of the few
    /// cooperative threads. Cancelling the
    /// task ends a wait for a descriptor's bytes (stdin, a pipe) at once; any other stream's
    /// read is left to finish on its thread while the upload ends.
    ///
    /// - Throws: `S3Error.cancelled` when cancelled; `S3Error.source` for the stream's error.
    static func fill(_ buffer: S3PartBuffer, from stream: any SequentialByteSource, size: Int, stallTimeout: Duration) async throws -> Int {
        do {
            let interrupt = try ReadInterrupt()
            let resumed = Lock<CheckedContinuation<Int, any Error>?>(nil)
            return try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { continuation in
                    resumed.withLock { $0 = continuation }
                    if Task.isCancelled {
                        // Cancelled before the handler could see a continuation to resume.
                        resumed.withLock { $0.take() }?.resume(throwing: CancellationError())
                        return
                    }
                    Thread.detachNewThread {
                        let result = Result { try buffer.fill(from: stream, size: size, interrupt: interrupt, stallTimeout: stallTimeout) }
                        interrupt.close()
                        resumed.withLock { $0.take() }?.resume(with: result)
                    }
                }
            } onCancel: {
                interrupt.interrupt()
                resumed.withLock { $0.take() }?.resume(throwing: CancellationError())
            }
        } catch is CancellationError {
            throw S3Error(.cancelled, "cancelled while reading the stream")
        } catch is ReadInterrupt.Interrupted {
            throw S3Error(.cancelled, "cancelled while reading the stream")
        } catch {
            throw S3Error(.source, "cannot read the stream: \(error)", underlying: error)
        }
    }
}
