import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// What a server-side copy made (`S3Client.copy(_:to:progress:)`).
public struct S3CopyResult: Sendable, Equatable {
    /// The object copied.
    public var source: S3Location
    /// The object made.
    public var location: S3Location
    /// Its length in bytes.
    public var length: Int64
    /// The new object's ETag, quotes dropped.
    public var eTag: String
    /// The parts copied with `UploadPartCopy`; nil for one `CopyObject`.
    public var partCount: Int?
    /// The multipart upload the parts went into; nil for one `CopyObject`.
    public var uploadID: String?
    /// Requests sent again after a transient failure.
    public var retries: Int
    /// Seconds from the first request to the last answer.
    public var elapsed: Double
}

extension S3Client {
    /// Copies `source` to `destination` on this client's endpoint, by the store: no byte of the
    /// object passes through this process. Below the multipart threshold (the part size unless
    /// `S3Options.multipartThreshold` says otherwise; at most 5 GiB) one `CopyObject`, which
    /// keeps the source's content type and user metadata; above, `CreateMultipartUpload` with
    /// the source's content type and metadata, up to `concurrency` `UploadPartCopy`s at once
    /// (`x-amz-copy-source-range`), then `CompleteMultipartUpload`.
    ///
    /// Every request is pinned to the source as `HeadObject` found it
    /// (`x-amz-copy-source-if-match` with its ETag): a source changed meanwhile fails with
    /// `.sourceChanged`, never a mix of two versions. A failed multipart copy is aborted (it is
    /// not resumed yet: the next run copies again).
    ///
    /// - Throws: `S3Error`; `.source` when the source does not exist.
    public func copy(
        _ source: S3Location, to destination: S3Location, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3CopyResult {
        try checkBeforeAnyEffect()
        let (start, counters) = (ContinuousClock.now, S3Counters())
        guard let head = try await sourceHead(source) else {
            throw S3Error(.source, "\(source): no such object (HeadObject answered 404)")
        }
        guard let length = head.length else {
            throw S3Error(.malformedResponse, "the server's HeadObject answer for \(source) has no Content-Length")
        }
        let plan = try S3PartPlan(length: length, partSize: options.partSize)
        let threshold = min(options.multipartThreshold ?? plan.partSize, S3PartPlan.maximumPartSize)
        let meter = S3PartProgress(total: length, interval: options.transfer.progressInterval, report: progress)
        defer { meter.end() }
        var result = S3CopyResult(
            source: source, location: destination, length: length, eTag: "", partCount: nil, uploadID: nil, retries: 0, elapsed: 0)
        if length < threshold || plan.partCount == 1 {
            let call = S3Call(
                method: "PUT", location: destination, headers: copySourceHeaders(source, pinnedTo: head.eTag) + options.object.headers(for: .putObject),
                action: "CopyObject")
            let answer = try await sendCopy(call, source: source, counters: counters)
            result.eTag = try S3CopiedObject(xml: answer.response.body, action: "CopyObject").eTag
            meter.update(engineBytes: length)
        } else {
            var headers = createMultipartUploadHeaders
            // As CopyObject does: the source's content type and user metadata, unless given.
            if options.object.contentType == nil, let type = head.contentType { headers.append(SigV4Header("Content-Type", type)) }
            if options.object.metadata.isEmpty { headers += head.metadata.map { SigV4Header("x-amz-meta-" + $0.name, $0.value) } }
            let create = S3Call(
                method: "POST", location: destination, query: [SigV4QueryItem("uploads")], headers: headers, action: "CreateMultipartUpload")
            let uploadID = try S3CreatedUpload(xml: try await send(create, counters: counters).response.body).uploadID
            do {
                let parts = try await copyParts(of: source, pinnedTo: head.eTag, plan: plan, to: destination, uploadID: uploadID, counters: counters, meter: meter)
                let lengths = (1...parts.count).map { Int64(plan.range(ofPart: $0).count) }
                let completed = try await completeMultipartUpload(destination, uploadID: uploadID, parts: parts, lengths: lengths, counters: counters)
                result.eTag = S3ObjectHead.unquoted(completed.eTag)
                (result.partCount, result.uploadID) = (parts.count, uploadID)
            } catch {
                // Not resumed: nothing of it is left billed at the server.
                _ = try? await abortMultipartUpload(destination, uploadID: uploadID)
                throw error
            }
        }
        result.retries = counters.retries
        result.elapsed = (ContinuousClock.now - start) / .seconds(1)
        return result
    }

    /// `HeadObject` of a copy's source (with the client's SSE-C key, as the copy would be).
    private func sourceHead(_ source: S3Location) async throws -> S3ObjectHead? {
        do { return try await headObject(source) } catch var error as S3Error {
            error.message = "the source \(source): \(error.message)"
            throw error
        }
    }

    /// `x-amz-copy-source` naming `source` (its key percent-encoded as a path, as botocore does),
    /// pinned to `eTag` when there is one.
    package func copySourceHeaders(_ source: S3Location, pinnedTo eTag: String) -> [SigV4Header] {
        var headers = [SigV4Header("x-amz-copy-source", S3Location.encodePath("/\(source.bucket)/\(source.key)"))]
        if !eTag.isEmpty { headers.append(SigV4Header("x-amz-copy-source-if-match", eTag)) }
        return headers
    }

    /// Sends a copy request; a 412 for the pinned source is `.sourceChanged`.
    private func sendCopy(_ call: S3Call, source: S3Location, counters: S3Counters) async throws -> S3Answer {
        do { return try await send(call, counters: counters) } catch var error as S3Error where error.status == 412 {
            error.code = .sourceChanged
            error.message = "\(source) changed since the copy began (\(call.action) answered 412 to its ETag): nothing of two versions was stored"
            throw error
        }
    }

    /// Parts `1...plan.partCount` copied with `UploadPartCopy`, up to `concurrency` at once,
    /// each with the client's retries; in part-number order.
    private func copyParts(
        of source: S3Location, pinnedTo eTag: String, plan: S3PartPlan, to destination: S3Location, uploadID: String,
        counters: S3Counters, meter: S3PartProgress
    ) async throws -> [S3CompletedPart] {
        let count = plan.partCount ?? 0
        let copied = Lock<Int64>(0)
        return try await withThrowingTaskGroup(of: S3CompletedPart.self) { group in
            var parts: [S3CompletedPart] = []
            var next = 1
            func start() {
                let number = next
                next += 1
                let range = plan.range(ofPart: number)
                let headers =
                    copySourceHeaders(source, pinnedTo: eTag) + [SigV4Header("x-amz-copy-source-range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)")]
                let call = S3Call(
                    method: "PUT", location: destination,
                    query: [SigV4QueryItem("partNumber", "\(number)"), SigV4QueryItem("uploadId", uploadID)],
                    headers: headers + options.object.headers(for: .uploadPart), action: "UploadPartCopy", uploadID: uploadID,
                    partNumber: number)
                group.addTask {
                    let answer = try await self.sendCopy(call, source: source, counters: counters)
                    let part = try S3CopiedObject(xml: answer.response.body, action: "UploadPartCopy")
                    let done = copied.withLock { total in
                        total += Int64(range.count)
                        return total
                    }
                    meter.update(engineBytes: done)
                    return S3CompletedPart(partNumber: number, eTag: part.eTag, checksums: part.checksums)
                }
            }
            while next <= min(count, max(1, options.concurrency)) { start() }
            while let part = try await group.next() {
                parts.append(part)
                if next <= count { start() }
            }
            return parts.sorted { $0.partNumber < $1.partNumber }
        }
    }
}

/// `CopyObjectResult` / `CopyPartResult`: the ETag of what the store made, and the checksums it
/// computed (a multipart upload created with a checksum algorithm gets each part's).
package struct S3CopiedObject: Sendable {
    /// The ETag, quotes dropped.
    package var eTag: String
    /// The checksums the answer carries, base64.
    package var checksums: [ChecksumAlgorithm: String] = [:]

    /// Parses the answer of `action`.
    ///
    /// - Throws: `S3Error.malformedResponse` for an answer with no ETag: nothing proves the
    ///   copy was made.
    package init(xml data: Data, action: String) throws {
        let expected = action == "CopyObject" ? "CopyObjectResult" : "CopyPartResult"
        let root = try S3XMLElement.parseAnswer(data, what: action, expected: expected)
        guard let eTag = root.value("ETag"), !eTag.isEmpty else {
            throw S3Error(.malformedResponse, "the server's \(action) answer has no ETag: nothing proves the copy was made")
        }
        self.eTag = S3ObjectHead.unquoted(eTag)
        for algorithm in ChecksumAlgorithm.allCases {
            if let value = root.value("Checksum" + algorithm.s3Name), !value.isEmpty { checksums[algorithm] = value }
        }
    }
}
