import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceBoundStreams
import SluiceTransport

extension S3Client {
    /// Uploads a stream that cannot be read again (stdin): one `PutObject` when it ends within
    /// the first part, otherwise a multipart upload whose parts are held in a bounded pool of
    /// `concurrency` buffers. Part sizes grow as the stream goes on (`S3PartPlan`), unless
    /// `equalParts`, or the transport sends a `Content-Length` only up to a size
    /// (`maximumSizedBody`: URLSession on Linux): then every part is `partSize`, at most that size.
    ///
    /// - Important: Memory: at most `concurrency` buffers of the current part size. On any
    ///   failure or cancellation the multipart upload is aborted: a stream cannot be resumed,
    ///   so nothing is left at the server to bill.
    /// - Throws: `S3Error`.
    public func uploadStream(
        _ stream: any SequentialByteSource, to location: S3Location, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3UploadResult {
        try checkBeforeAnyEffect()
        let start = ContinuousClock.now
        let counters = S3Counters()
        // Parts do not grow past what the transport sends with a length (URLSession on Linux).
        let plan = try S3PartPlan(
            streamWithFirstPartSize: plannedPartSize,
            equalParts: options.equalParts || transport.maximumSizedBody != nil, stepParts: options.streamStepParts)
        try checkSizedBody(plan.partSize, "each part")
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
            let parts = try await sendStreamParts(
                stream, first: first, plan: plan, location: location, uploadID: uploadID,
                counters: counters, meter: meter)
            try Task.checkCancellation()
            completing = (parts.count, parts.reduce(0) { $0 + $1.length })
            let completed = try await completeMultipartUpload(
                location, uploadID: uploadID, parts: parts.map(\.part),
                lengths: parts.map(\.length), counters: counters)
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

    /// Reads the stream part by part into pooled buffers and sends each as soon as it is full,
    /// on the part scheduler: the next part is read as soon as one of the `concurrency` in flight ended,
    /// and a part's buffer goes back to the pool once its part ended.
    private func sendStreamParts(
        _ stream: any SequentialByteSource, first: S3PartBuffer, plan: S3PartPlan, location: S3Location, uploadID: String,
        counters: S3Counters, meter: S3PartProgress
    ) async throws -> [(part: S3CompletedPart, length: Int64)] {
        let partLimit = options.partLimit ?? S3PartPlan.maximumParts
        let stallTimeout = options.transfer.stallTimeout
        let pool = Lock(StreamPartPool())
        let feed = PartFeed.producer {
            let (number, offset, reused) = pool.withLock { ($0.number, $0.offset, $0.take()) }
            let buffer: S3PartBuffer
            let count: Int
            if number == 1 {
                (buffer, count) = (first, Int(first.length))
            } else {
                buffer = reused ?? S3PartBuffer(capacity: Int(plan.nominalSize(ofPart: number)))
                count = try await Self.fill(buffer, from: stream, size: Int(plan.nominalSize(ofPart: number)), stallTimeout: stallTimeout)
            }
            guard count > 0 else {
                pool.withLock { $0.free.append(buffer) }
                return nil
            }
            guard number <= partLimit else {
                let limit = partLimit == S3PartPlan.maximumParts ? "S3's limit of 10,000 parts" : "the limit of \(partLimit) parts"
                let shape = plan.equalParts ? "equal parts of \(plan.partSize) bytes" : "parts growing from \(plan.partSize) bytes"
                throw S3Error(
                    .tooManyParts, "the stream goes past \(limit) (\(plan.streamCapacity(parts: partLimit)) bytes in \(shape)): use a larger part size", uploadID: uploadID)
            }
            try Task.checkCancellation()
            pool.withLock { $0.sending(buffer, number: number, count: count) }
            return UploadPart(number: number, offset: offset, length: Int64(count))
        }
        return try await scheduleParts(
            feed, to: location, uploadID: uploadID, counters: counters, meter: meter,
            body: { part in
                guard let buffer = pool.withLock({ $0.inFlight[part.number] }) else {
                    throw S3Error(.state, "part \(part.number)'s buffer is not in the pool", uploadID: uploadID, partNumber: part.number)
                }
                return buffer
            }, completed: { part, _ in pool.withLock { $0.ended(part.number) } })
    }

    /// Fills `buffer` on a thread of its own: a read of stdin may block for as long as the
    /// producer takes, and must not hold one of the few cooperative threads. Cancelling the
    /// task ends a wait for a descriptor's bytes (stdin, a pipe) at once, and so does
    /// `stallTimeout` of silence; any other stream's read is left to finish on its thread while
    /// the upload ends.
    ///
    /// - Throws: `S3Error.cancelled` when cancelled; `S3Error.source` for the stream's error
    ///   or its stall.
    package static func fill(_ buffer: S3PartBuffer, from stream: any SequentialByteSource, size: Int, stallTimeout: Duration) async throws -> Int {
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

/// The buffers of a stream upload's parts: `concurrency` at most (the scheduler asks for the
/// next part only once a part ended and gave its buffer back), each refilled only after its
/// part ended.
package struct StreamPartPool {
    /// The next part's number, and its first byte in the stream.
    package var number = 1
    package var offset: Int64 = 0
    /// Buffers no part holds.
    package var free: [S3PartBuffer] = []
    /// The buffer of each part being sent.
    package var inFlight: [Int: S3PartBuffer] = [:]

    /// A free buffer, if there is one.
    package mutating func take() -> S3PartBuffer? { free.popLast() }

    /// `buffer` holds part `number` (`count` bytes) until it ends.
    package mutating func sending(_ buffer: S3PartBuffer, number: Int, count: Int) {
        inFlight[number] = buffer
        self.number += 1
        offset += Int64(count)
    }

    /// Part `number` ended: its buffer is free.
    package mutating func ended(_ number: Int) {
        if let buffer = inFlight.removeValue(forKey: number) { free.append(buffer) }
    }
}
