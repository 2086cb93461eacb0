import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// What a copy made (`S3Client.copy(_:from:to:progress:)`).
public struct S3CopyResult: Sendable, Equatable {
    /// How the bytes went.
    public enum Route: Sendable, Equatable {
        /// By the store: `CopyObject` or `UploadPartCopy`, no byte of the object through this
        /// process.
        case store
        /// Through this process: read with the source client's ranged `GetObject`s pinned by
        /// `If-Match`, uploaded with this client's `PutObject` or multipart upload.
        case streamed
    }

    /// The object copied.
    public var source: S3Location
    /// The object made.
    public var location: S3Location
    /// Its length in bytes.
    public var length: Int64
    /// The new object's ETag, quotes dropped.
    public var eTag: String
    /// The parts of the new object (`UploadPartCopy` or `UploadPart`); nil for one
    /// `CopyObject` or `PutObject`.
    public var partCount: Int?
    /// The multipart upload the parts went into; nil for one `CopyObject` or `PutObject`.
    public var uploadID: String?
    /// Requests sent again after a transient failure.
    public var retries: Int
    /// Seconds from the first request to the last answer.
    public var elapsed: Double
    /// By the store, or streamed.
    public var route: Route = .store
    /// The destination's refusal to copy by the store (`501 NotImplemented` to `CopyObject` or
    /// `UploadPartCopy`) that made the copy stream instead; nil when it did not refuse.
    public var storeRefusal: S3CopyRefusal?
    /// Body bytes sent to the destination (0 by the store), retries and signatures included.
    public var bytesSent: Int64 = 0
    /// Parts of a streamed copy found at the destination from an interrupted run and not sent
    /// again.
    public var partsSkipped = 0
}

/// A store's answer that it does not copy objects itself (`S3CopyResult.storeRefusal`).
public struct S3CopyRefusal: Sendable, Equatable {
    /// The call refused: `CopyObject` or `UploadPartCopy`.
    public var action: String
    /// The HTTP status (501).
    public var status: Int?
    /// The S3 error code (`NotImplemented`).
    public var serverCode: String?

    /// Whether `error` is such a refusal: 501, or the code `NotImplemented`.
    package init?(_ error: S3Error, action: String) {
        guard error.status == 501 || error.serverCode == "NotImplemented" else { return nil }
        (self.action, status, serverCode) = (action, error.status, error.serverCode)
    }
}

extension S3Client {
    /// Copies the object `source` to `destination`.
    ///
    /// With no `sourceClient`, or one of this client's endpoint and credentials, the store
    /// copies it (`copy(_:to:progress:)`): no byte passes through this process. A destination
    /// that answers that it does not implement the copy (`501 NotImplemented`) gets the bytes
    /// streamed instead, and the result says so (`storeRefusal`). With a client of another
    /// endpoint or other credentials the copy is streamed: the source is read with
    /// `sourceClient.remoteSource(of:)` (each range a `GetObject` pinned by `If-Match` to the
    /// ETag `HeadObject` found) into this client's upload (`upload(_:to:progress:)`: parts in
    /// parallel, each range's body flowing through a bounded buffer into its part's request,
    /// resumable from the same records as an upload of a file).
    ///
    /// The copy keeps the source's content type, `Cache-Control`, `Content-Disposition`,
    /// `Content-Encoding`, `Content-Language`, `Expires` and user metadata, as `aws s3 cp`
    /// does, unless `options.object.metadataDirective` is `.replace` (or `metadata` is given):
    /// then it takes `options.object`'s (`S3ObjectOptions.copied(from:key:)`).
    ///
    /// - Parameters:
    ///   - source: The object to copy (a key, not a prefix).
    ///   - sourceClient: The client that reads it; nil for this one.
    ///   - destination: The object to make, on this client's endpoint.
    ///   - progress: Bytes copied of the object's length.
    /// - Returns: What was made, and which way (`route`).
    /// - Throws: `S3Error`: `.source` when the source does not exist or cannot be read,
    ///   `.sourceChanged` when it changed during the copy (nothing of two versions is stored).
    public func copy(
        _ source: S3Location, from sourceClient: S3Client? = nil, to destination: S3Location,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3CopyResult {
        try await copy(source, listed: nil, from: sourceClient, to: destination, progress: progress)
    }

    /// `copy(_:from:to:progress:)` of an object a listing showed (`listed`: its size and ETag):
    /// on one store, below the multipart threshold and with the `COPY` directive, one
    /// `CopyObject` pinned to the listed ETag, without a `HeadObject` first (a prefix copy of
    /// many small objects sends one request an object, as `aws s3 cp --recursive` does).
    package func copy(
        _ source: S3Location, listed: S3ListedObject?, from sourceClient: S3Client?, to destination: S3Location,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> S3CopyResult {
        guard let sourceClient, !sharesStore(with: sourceClient) else {
            do { return try await copyByStore(source, listed: listed, to: destination, progress: progress) } catch let failure as S3CopyFailure {
                var result = try await copyStreamed(source, from: self, to: destination, progress: progress)
                result.storeRefusal = failure.refusal
                return result
            }
        }
        return try await copyStreamed(source, from: sourceClient, to: destination, progress: progress)
    }

    /// Whether `other` reaches the same endpoint with the same keys: the store can copy
    /// between them.
    public func sharesStore(with other: S3Client) -> Bool {
        let (mine, theirs) = (configuration, other.configuration)
        return mine.endpointIdentity == theirs.endpointIdentity && mine.credentials?.accessKeyID == theirs.credentials?.accessKeyID
            && mine.credentials?.secretAccessKey == theirs.credentials?.secretAccessKey
            && mine.credentials?.sessionToken == theirs.credentials?.sessionToken
    }

    /// Copies `source` to `destination` on this client's endpoint, by the store: no byte of the
    /// object passes through this process (`copy(_:from:to:progress:)` with no source client).
    ///
    /// - Throws: `S3Error`; `.source` when the source does not exist.
    public func copy(
        _ source: S3Location, to destination: S3Location, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3CopyResult {
        try await copy(source, from: nil, to: destination, progress: progress)
    }

    /// Copies `source` to `destination` on this client's endpoint, by the store. Below the
    /// multipart threshold (the part size unless `S3Options.multipartThreshold` says otherwise;
    /// at most 5 GiB) one `CopyObject`, which keeps the source's content type and user
    /// metadata unless the directive is `.replace`; above, `CreateMultipartUpload` with the
    /// attributes `S3ObjectOptions.copied(from:key:)` decides, up to `concurrency`
    /// `UploadPartCopy`s at once (`x-amz-copy-source-range`), then `CompleteMultipartUpload`.
    ///
    /// Every request is pinned to the source as `HeadObject` found it
    /// (`x-amz-copy-source-if-match` with its ETag): a source changed meanwhile fails with
    /// `.sourceChanged`, never a mix of two versions. A failed multipart copy is kept for the
    /// next run, which copies only the parts the store lacks (`copyInParts`).
    ///
    /// - Throws: `S3Error`; `.source` when the source does not exist; `S3CopyFailure` when the
    ///   store refused to copy (`501 NotImplemented`) before anything was made.
    private func copyByStore(
        _ source: S3Location, listed: S3ListedObject?, to destination: S3Location, progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> S3CopyResult {
        try checkBeforeAnyEffect()
        let (start, counters) = (ContinuousClock.now, S3Counters())
        func isOneCopy(_ length: Int64, _ plan: S3PartPlan) -> Bool {
            length < min(options.multipartThreshold ?? plan.partSize, S3PartPlan.maximumPartSize) || plan.partCount == 1
        }
        // A listed object copied whole with its own attributes needs nothing HeadObject says.
        var known: (length: Int64, eTag: String)?
        if let listed, !listed.eTag.isEmpty, options.object.effectiveMetadataDirective == .copy,
            isOneCopy(listed.size, try S3PartPlan(length: listed.size, partSize: options.partSize))
        {
            known = (listed.size, listed.eTag)
        }
        var head: S3ObjectHead?
        if known == nil {
            let found = try await sourceHead(source, of: self)
            guard let length = found.length else {
                throw S3Error(.malformedResponse, "the server's HeadObject answer for \(source) has no Content-Length")
            }
            (head, known) = (found, (length, found.eTag))
        }
        guard let (length, eTag) = known else { preconditionFailure("a copy's length and ETag are known or read") }
        /// What HeadObject says of the source, asked once (only when attributes are to be decided).
        func described() async throws -> S3ObjectHead {
            if let head { return head }
            let found = try await sourceHead(source, of: self)
            head = found
            return found
        }
        let plan = try S3PartPlan(length: length, partSize: options.partSize)
        let meter = S3PartProgress(total: length, interval: options.transfer.progressInterval, report: progress)
        defer { meter.end() }
        var result = S3CopyResult(
            source: source, location: destination, length: length, eTag: "", partCount: nil, uploadID: nil, retries: 0, elapsed: 0)
        if isOneCopy(length, plan) {
            var headers = copySourceHeaders(source, pinnedTo: eTag)
            switch options.object.effectiveMetadataDirective {
            case .copy: headers += options.object.withoutAttributes.headers(for: .putObject)
            case .replace:
                headers.append(SigV4Header("x-amz-metadata-directive", "REPLACE"))
                headers += options.object.copied(from: try await described(), key: source.key).headers(for: .putObject)
            }
            let call = S3Call(method: "PUT", location: destination, headers: headers, action: "CopyObject")
            let answer = try await sendCopy(call, source: source, counters: counters)
            result.eTag = try S3CopiedObject(xml: answer.response.body, action: "CopyObject").eTag
            meter.update(engineBytes: length)
        } else {
            var attributed = self
            attributed.options.object = options.object.copied(from: try await described(), key: source.key)
            // The store computes a checksum of what it copies only when asked to.
            attributed.options.checksum = options.storeCopyChecksum
            if options.storeCopyChecksum == nil { attributed.options.checksumType = nil }
            let made = try await attributed.copyInParts(
                source, pinnedTo: eTag, length: length, plan: plan, to: destination, counters: counters, meter: meter)
            result.eTag = S3ObjectHead.unquoted(made.completed.eTag)
            (result.partCount, result.uploadID, result.partsSkipped) = (plan.partCount ?? 1, made.uploadID, made.skipped)
        }
        result.retries = counters.retries
        result.elapsed = (ContinuousClock.now - start) / .seconds(1)
        return result
    }

    /// Copies `source`, read by `sourceClient`, to `destination` through this process: its
    /// ranges pinned by `If-Match` to the ETag `HeadObject` found, uploaded by this client.
    private func copyStreamed(
        _ source: S3Location, from sourceClient: S3Client, to destination: S3Location, progress: (@Sendable (UploadProgress) -> Void)?
    ) async throws -> S3CopyResult {
        let start = ContinuousClock.now
        let head = try await sourceHead(source, of: sourceClient)
        var remote = RemoteSourceOptions()
        remote.stallTimeout = sourceClient.options.transfer.stallTimeout
        remote.connectTimeout = sourceClient.options.transfer.connectTimeout
        remote.caFile = sourceClient.options.transfer.caFile
        remote.insecure = sourceClient.options.transfer.insecure
        remote.retry = sourceClient.options.retryPolicy
        remote.rateLimit = options.sourceRateLimit
        let bytes: RemoteByteSource
        do { bytes = try await sourceClient.remoteSource(of: source, options: remote) } catch let error as S3Error {
            throw error
        } catch {
            throw S3Error(.source, "the source \(source): \(error)", underlying: error)
        }
        defer { bytes.close() }
        // The ranges are pinned to what the source's own HEAD found; that must be the version
        // whose attributes are copied.
        guard case .entityTag(let tag)? = bytes.validator, S3ObjectHead.unquoted(tag) == S3ObjectHead.unquoted(head.eTag) else {
            throw S3Error(.sourceChanged, "\(source) changed since the copy began (its ETag is not the one HeadObject found): nothing was stored")
        }
        var client = self
        client.options.object = options.object.copied(from: head, key: source.key)
        client.options.object.guessesContentType = false
        let identity = "s3:\(sourceClient.configuration.endpointIdentity)/\(source.bucket)/\(source.key) \(head.eTag)"
        let uploaded: S3UploadResult
        do {
            uploaded = try await client.upload(
                S3Source(bytes, identity: identity, fingerprint: S3SourceFingerprint(size: bytes.length)), to: destination, progress: progress)
        } catch var error as S3Error {
            if let changed = Self.remoteSourceError(in: error), changed.code == .changed || changed.status == 412 {
                error.code = .sourceChanged
                error.message = "\(source) changed during the copy (\(changed.message)): nothing of two versions was stored"
                // Its parts are of a version no later run will ask for (its record is keyed by
                // the ETag): nothing of it is left billed.
                if let uploadID = error.uploadID, (try? await client.abort(destination, uploadID: uploadID)) != nil { error.uploadID = nil }
            }
            throw error
        }
        var result = S3CopyResult(
            source: source, location: destination, length: uploaded.length, eTag: uploaded.eTag,
            partCount: uploaded.uploadID == nil ? nil : uploaded.partCount, uploadID: uploaded.uploadID, retries: uploaded.retries,
            elapsed: (ContinuousClock.now - start) / .seconds(1))
        result.route = .streamed
        result.bytesSent = uploaded.bytesSent
        result.partsSkipped = uploaded.partsSkipped
        return result
    }

    /// The remote source's own error somewhere in `error`'s chain of causes.
    private static func remoteSourceError(in error: any Error) -> RemoteSourceError? {
        var cause: (any Error)? = error
        for _ in 0..<8 {
            switch cause {
            case let remote as RemoteSourceError: return remote
            case let s3 as S3Error: cause = s3.underlying
            case let upload as UploadError: cause = upload.underlying
            case let part as PartFailure: cause = part.cause
            default: return nil
            }
        }
        return nil
    }

    /// `HeadObject` of a copy's source by `client` (with its SSE-C key, as the copy would be).
    ///
    /// - Throws: `S3Error(.source)` when there is no such object, or it has no length.
    private func sourceHead(_ source: S3Location, of client: S3Client) async throws -> S3ObjectHead {
        let head: S3ObjectHead?
        do { head = try await client.headObject(source) } catch var error as S3Error {
            error.message = "the source \(source): \(error.message)"
            throw error
        }
        guard let head else { throw S3Error(.source, "\(source): no such object (HeadObject answered 404)") }
        return head
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
        do { return try await send(call, counters: counters) } catch let error as S3Error where S3CopyRefusal(error, action: call.action) != nil {
            throw S3CopyFailure(refusal: S3CopyRefusal(error, action: call.action)!, error: error)
        } catch var error as S3Error where error.status == 412 {
            error.code = .sourceChanged
            error.message = "\(source) changed since the copy began (\(call.action) answered 412 to its ETag): nothing of two versions was stored"
            throw error
        }
    }

    /// A multipart copy by the store, resumable from the same records as an upload: the record
    /// (keyed by the destination and the source's endpoint, bucket, key and ETag) is written
    /// before the first part; a run that finds one lists the parts the store holds and copies only
    /// the others (their checksums, when the copy asks for one, from `S3PartsJournal` or the
    /// listing; a part known by neither is copied again). A source changed since (its ETag)
    /// names another record; `restart` aborts a stored one and starts again. A failed copy is
    /// kept for a rerun (the error names its upload), except when the source changed (that
    /// version is never asked for again) or the store refused to copy (`S3CopyFailure`): those
    /// are aborted.
    ///
    /// - Returns: Complete's answer, the upload's id and the parts found at the store.
    private func copyInParts(
        _ source: S3Location, pinnedTo eTag: String, length: Int64, plan: S3PartPlan, to destination: S3Location,
        counters: S3Counters, meter: S3PartProgress
    ) async throws -> (completed: S3CompletedUpload, uploadID: String, skipped: Int) {
        let store = S3StateStore(directory: options.stateDirectory)
        try store.prepare()
        let endpoint = configuration.endpointIdentity
        let identity = "copy:s3:\(endpoint)/\(source.bucket)/\(source.key) \(S3ObjectHead.unquoted(eTag))"
        let lock = try store.lock(endpoint: endpoint, bucket: destination.bucket, key: destination.key, source: identity)
        defer { lock.release() }
        var record: S3UploadRecord?
        do {
            record = try await BlockingPool.shared.run {
                try store.load(endpoint: endpoint, bucket: destination.bucket, key: destination.key, source: identity)
            }
        } catch let error as S3Error where error.code == .state && options.restart {
            store.removeRecord(endpoint: endpoint, bucket: destination.bucket, key: destination.key, source: identity)
        }
        var listed: [Int: S3ListedPart] = [:]
        if let stored = record {
            if options.restart {
                _ = try await abortMultipartUpload(destination, uploadID: stored.uploadID, counters: counters)
                store.remove(stored)
                record = nil
            } else if let difference = settingsDiffer(from: stored, fresh: plan) {
                let advice = "give those to resume it, or restart the copy to start again with these"
                throw S3Error(
                    .state, "copy \(stored.uploadID) of \(source) to \(destination) was started with \(difference): \(advice)", uploadID: stored.uploadID)
            } else if let held = try await heldParts(of: stored, at: destination, store: store, counters: counters) {
                listed = held
            } else {
                record = nil
            }
        }
        if record == nil {
            record = try await createRecordedUpload(
                destination, source: identity, fingerprint: S3SourceFingerprint(size: length), plan: plan, store: store, counters: counters)
        }
        let stored = record!
        let uploadID = stored.uploadID
        let algorithm = options.checksum
        let journal = algorithm == nil ? nil : try await BlockingPool.shared.run { S3PartsJournal(store: store, record: stored) }
        defer { journal?.close() }
        let count = plan.partCount ?? 1
        var done: [Int: S3CompletedPart] = [:]
        for number in 1...count {
            guard let part = listed[number], part.size == Int64(plan.range(ofPart: number).count) else { continue }
            var completed = S3CompletedPart(partNumber: number, eTag: part.eTag)
            if let algorithm {
                guard let checksum = part.checksums[algorithm] ?? journal?.checksum(ofPart: number, eTag: part.eTag, algorithm: algorithm) else { continue }
                completed.checksums[algorithm] = checksum
            }
            done[number] = completed
            meter.finish(part: number, length: Int64(plan.range(ofPart: number).count))
        }
        let skipped = done.count
        do {
            let missing = (1...count).filter { done[$0] == nil }
            let copied = try await copyParts(missing, of: source, pinnedTo: eTag, plan: plan, to: destination, uploadID: uploadID, counters: counters, meter: meter) {
                journal?.accepted($0, algorithm: algorithm)
            }
            for part in copied { done[part.partNumber] = part }
            let lengths = (1...count).map { Int64(plan.range(ofPart: $0).count) }
            let completed = try await completeMultipartUpload(
                destination, uploadID: uploadID, parts: (1...count).map { done[$0]! }, lengths: lengths, counters: counters)
            store.remove(stored)
            return (completed, uploadID, skipped)
        } catch {
            // The store will not copy (the copy streams instead), or that version of the
            // source is never asked for again: nothing of it is left billed.
            let ends = { () async in
                _ = try? await self.abortMultipartUpload(destination, uploadID: uploadID)
                store.remove(stored)
            }
            if error is S3CopyFailure {
                await ends()
                throw error
            }
            guard var failure = error as? S3Error else { throw error }
            if [.sourceChanged, .objectExists, .conditionFailed].contains(failure.code) {
                await ends()
                failure.uploadID = nil
            } else {
                failure.uploadID = failure.uploadID ?? uploadID
            }
            throw failure
        }
    }

    /// Parts `numbers` copied with `UploadPartCopy`, up to `concurrency` at once, each with the
    /// client's retries; `accepted` called with each as the store answers; in part-number order.
    private func copyParts(
        _ numbers: [Int], of source: S3Location, pinnedTo eTag: String, plan: S3PartPlan, to destination: S3Location, uploadID: String,
        counters: S3Counters, meter: S3PartProgress, accepted: (S3CompletedPart) -> Void
    ) async throws -> [S3CompletedPart] {
        let count = numbers.count
        let copied = Lock<Int64>(0)
        return try await withThrowingTaskGroup(of: S3CompletedPart.self) { group in
            var parts: [S3CompletedPart] = []
            var next = 1
            func start() {
                let number = numbers[next - 1]
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
                accepted(part)
                parts.append(part)
                if next <= count { start() }
            }
            return parts.sorted { $0.partNumber < $1.partNumber }
        }
    }
}

/// The store's refusal to copy, thrown inside `copyByStore` for `copy` to stream instead.
private struct S3CopyFailure: Error {
    var refusal: S3CopyRefusal
    var error: S3Error
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
