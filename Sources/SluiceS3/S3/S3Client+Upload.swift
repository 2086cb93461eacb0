import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// Aggregate progress of parts in flight: bytes of finished parts plus each part's bytes so far.
package final class S3PartProgress: Sendable {
    private struct State {
        package var finished: Int64 = 0
        package var inFlight: [Int: Int64] = [:]
        /// The engine's own count for the parts it runs (finished and in flight).
        package var engine: Int64 = 0
        package var total: Int64 { finished + engine + inFlight.values.reduce(0, +) }
    }
    private let state = Lock(State())
    private let meter: ProgressMeter

    package init(total: Int64?, interval: Duration, report: (@Sendable (UploadProgress) -> Void)?) {
        meter = ProgressMeter(total: total, interval: interval, report: report)
    }

    /// Part `number` (of `length` bytes) has sent `bytes` of its body in this attempt.
    package func update(part number: Int, bytes: Int64, length: Int64) {
        let total = state.withLock { state -> Int64 in
            state.inFlight[number] = min(bytes, length)
            return state.total
        }
        meter.update(total)
    }

    /// Part `number` is at the server.
    package func finish(part number: Int, length: Int64) {
        let total = state.withLock { state -> Int64 in
            state.inFlight[number] = nil
            state.finished += length
            return state.total
        }
        meter.update(total)
    }

    /// The part scheduler has `bytes` of its parts sent or done.
    package func update(engineBytes bytes: Int64) {
        meter.update(
            state.withLock { state -> Int64 in
                state.engine = bytes
                return state.total
            })
    }

    package func end() { meter.finish(state.withLock { $0.total }) }
}

extension S3Client {
    /// Uploads a random-access source: one `PutObject` below the part size, otherwise a
    /// resumable multipart upload (see the type's documentation).
    ///
    /// - Throws: `S3Error`; `uploadID` is set when a multipart upload exists.
    public func upload(
        _ source: S3Source, to location: S3Location, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3UploadResult {
        try await upload(source, to: location, records: nil, progress: progress)
    }

    /// `upload(_:to:progress:)`, asking `records` (the state directory listed once for a job of
    /// many files) whether a small file has a stored upload to settle, instead of the disk.
    package func upload(
        _ source: S3Source, to location: S3Location, records: S3StateStore.Listing?,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3UploadResult {
        if checkedSigner == nil { try checkBeforeAnyEffect() }
        let start = ContinuousClock.now
        let counters = S3Counters()
        let length = source.bytes.length
        let fresh = try S3PartPlan(length: length, partSize: plannedPartSize)
        let small = length < options.multipartThreshold ?? fresh.partSize
        try checkSizedBody(small ? length : fresh.partSize, small ? "the object" : "each part")
        let meter = S3PartProgress(total: length, interval: options.transfer.progressInterval, report: progress)
        defer { meter.end() }
        if length >= Self.headerSignedBodyLimit {
            // A body read as it streams (not once into memory): its first read only once every
            // later write moves the file's change time, so the check after it sees them all.
            do { try await options.snapshot.settle(source.bytes) } catch {
                throw Self.snapshotError(error, location: location, when: "since it was opened")
            }
        }
        let store = S3StateStore(directory: options.stateDirectory)
        let endpoint = configuration.endpointIdentity
        // A PutObject needs no record, but a stored upload of the same object and source (one
        // interrupted before the file shrank below the part size) is settled first: resumed,
        // refused or aborted below, never left billed.
        if small, !store.hasRecord(endpoint: endpoint, bucket: location.bucket, key: location.key, source: source.identity, listing: records) {
            return try await putObject(source, to: location, counters: counters, meter: meter, start: start)
        }

        // Where a record will go must take one before anything happens at the server (a
        // restart's abort, an upload to be billed).
        try store.prepare()
        // One run per upload: a second one is refused before it reads or changes anything.
        let lock = try store.lock(endpoint: endpoint, bucket: location.bucket, key: location.key, source: source.identity)
        defer { lock.release() }
        var record: S3UploadRecord?
        do {
            let (bucket, key, identity) = (location.bucket, location.key, source.identity)
            record = try await BlockingPool.shared.run { try store.load(endpoint: endpoint, bucket: bucket, key: key, source: identity) }
        } catch let error as S3Error where error.code == .state && options.restart {
            // Unreadable (truncated, edited): a restart forgets it. The upload it named, if
            // any, is no longer known here; `abort` without an id lists and removes it.
            store.removeRecord(endpoint: endpoint, bucket: location.bucket, key: location.key, source: source.identity)
        }
        var listed: [Int: S3ListedPart] = [:]
        var resumed = false
        if let stored = record {
            let change = source.fingerprint.difference(from: stored.fingerprint)
            if options.restart || (change != nil && options.restartWhenSourceChanged) {
                try await abortMultipartUpload(location, uploadID: stored.uploadID, counters: counters)
                store.remove(stored)
                record = nil
            } else if let change {
                throw S3Error(
                    .sourceChanged,
                    "the source changed since upload \(stored.uploadID) of \(location) began (\(change)): restart the upload to abort it and start again",
                    uploadID: stored.uploadID)
            } else if let difference = settingsDiffer(from: stored, fresh: fresh) {
                // Its parts were cut and checked so: resuming would silently use them instead.
                throw S3Error(
                    .state, "upload \(stored.uploadID) of \(location) was started with \(difference): give those to resume it, or restart the upload to start again with these",
                    uploadID: stored.uploadID)
            } else if let held = try await heldParts(of: stored, at: location, store: store, counters: counters) {
                listed = held
                resumed = true
            } else {
                record = nil
            }
        }
        if record == nil, small {
            return try await putObject(source, to: location, counters: counters, meter: meter, start: start)
        }
        if record == nil {
            record = try await createRecordedUpload(
                location, source: source.identity, fingerprint: source.fingerprint, plan: fresh, store: store, counters: counters)
        }
        let stored = record!
        // The parts already sent carry the stored upload's checksum: keep to it.
        var client = self
        client.options.checksum = stored.checksum
        client.options.checksumType = stored.checksumType ?? client.options.effectiveChecksumType
        do {
            return try await client.sendMissingParts(
                source, of: stored, to: location, listed: listed, resumed: resumed, counters: counters,
                meter: meter, start: start, store: store)
        } catch var error as S3Error {
            // A condition's refusal aborted the upload: no id to name.
            if error.code != .objectExists, error.code != .conditionFailed { error.uploadID = error.uploadID ?? stored.uploadID }
            if error.serverCode == "NoSuchUpload" {
                // Completed or aborted by someone else (another run that resumed it): nothing
                // is left to resume.
                store.remove(stored)
                error.message += "; upload \(stored.uploadID) is gone, its stored state dropped"
                error.uploadID = nil
            }
            // It ended early because it shrank (or was replaced), or the server refused bytes
            // that changed after they were hashed: say that, not "resume" or BadDigest.
            throw Self.changedSource(error, source) {
                "upload \(stored.uploadID) of \(location) was not completed; restart the upload to send it again"
            }
        }
    }

    /// A new multipart upload of `location`, recorded in `store` (with this client's part plan,
    /// checksum and SSE-C key fingerprint) before any part is sent, so a later run can resume it.
    ///
    /// - Throws: `S3Error`; when the record cannot be written the upload is aborted (nothing could
    ///   resume it) and the error says so instead of naming it as kept.
    package func createRecordedUpload(
        _ location: S3Location, source identity: String, fingerprint: S3SourceFingerprint, plan: S3PartPlan, store: S3StateStore,
        counters: S3Counters
    ) async throws -> S3UploadRecord {
        let uploadID = try await createMultipartUpload(location, counters: counters)
        var created = S3UploadRecord(
            endpoint: configuration.endpointIdentity, bucket: location.bucket, key: location.key, uploadID: uploadID, source: identity,
            fingerprint: fingerprint, plan: plan, checksum: options.checksum, createdAt: Date().timeIntervalSince1970)
        created.checksumType = options.effectiveChecksumType
        created.customerKeyFingerprint = options.object.customerKey?.fingerprint
        // Written (and synced) whether or not the task is cancelled meanwhile: the upload exists.
        do { try await BlockingPool.shared.run(ignoringCancellation: true) { [created] in try store.save(created) } } catch var error as S3Error {
            if (try? await abortMultipartUpload(location, uploadID: uploadID, counters: counters)) != nil {
                error.uploadID = nil
                error.message += "; upload \(uploadID) was aborted"
            }
            throw error
        }
        return created
    }

    /// The parts the server holds of `stored`'s upload, by number (the latest of each); nil when
    /// the upload is gone (completed or aborted elsewhere): its record is forgotten then.
    package func heldParts(
        of stored: S3UploadRecord, at location: S3Location, store: S3StateStore, counters: S3Counters
    ) async throws -> [Int: S3ListedPart]? {
        do {
            return S3ListedPart.latest(try await listParts(location, uploadID: stored.uploadID, counters: counters)).compactMapValues(\.last)
        } catch let error as S3Error where error.serverCode == "NoSuchUpload" {
            store.remove(stored)
            return nil
        }
    }

    /// Sends the parts the server does not hold, completes, verifies, forgets the record.
    private func sendMissingParts(
        _ source: S3Source, of record: S3UploadRecord, to location: S3Location, listed: [Int: S3ListedPart], resumed: Bool,
        counters: S3Counters, meter: S3PartProgress, start: ContinuousClock.Instant, store: S3StateStore
    ) async throws -> S3UploadResult {
        let plan = record.plan
        let count = plan.partCount ?? 1
        let algorithm = options.checksum
        // Each part's GETs end at its last byte: none reads into a part another reader takes.
        (source.bytes as? RemoteByteSource)?.readsInPieces(of: plan.partSize)
        // A pinned source's parts are journaled as S3 accepts them: a later run takes their
        // checksums from there instead of reading the parts again. Without checksums Complete
        // names ETags alone, which the listing gives: nothing would read a journal.
        let journal =
            source.bytes.isPinned && algorithm != nil ? try await BlockingPool.shared.run { S3PartsJournal(store: store, record: record) } : nil
        defer { journal?.close() }
        var done: [Int: S3CompletedPart] = [:]
        for number in 1...count {
            guard let part = listed[number], part.size == Int64(plan.range(ofPart: number).count) else { continue }
            var completed = S3CompletedPart(partNumber: number, eTag: part.eTag)
            if let algorithm {
                // The part was sent with this checksum; Complete must name it for every part.
                // Where the server lists it, a different value means a different part: send it again.
                let ours: String
                if let recorded = journal?.checksum(ofPart: number, eTag: part.eTag, algorithm: algorithm) {
                    ours = recorded
                } else {
                    ours = try ChecksumHasher.checksum(algorithm, of: SliceByteSource(source.bytes, range: plan.range(ofPart: number))).base64
                }
                if let theirs = part.checksums[algorithm], theirs != ours { continue }
                completed.checksums[algorithm] = ours
            }
            done[number] = completed
            meter.finish(part: number, length: Int64(plan.range(ofPart: number).count))
        }
        let skipped = done.count
        let missing = (1...count).filter { done[$0] == nil }
        let uploadID = record.uploadID
        let sent = try await sendParts(
            missing, of: source.bytes, plan: plan, to: location, uploadID: uploadID,
            counters: counters, meter: meter, accepted: journal.map { journal in { journal.accepted($0, algorithm: algorithm) } })
        for part in sent { done[part.partNumber] = part }
        let parts = (1...count).map { done[$0]! }
        try Task.checkCancellation()
        if let change = Self.change(during: source) {
            // Parts may hold old and new bytes: not completed; a rerun finds the change and
            // asks for a restart.
            throw S3Error(
                .sourceChanged, "the source changed while it was sent (\(change)): upload \(uploadID) of \(location) was not completed; restart the upload to send it again",
                uploadID: uploadID)
        }
        let completed: S3CompletedUpload
        do {
            completed = try await completeMultipartUpload(
                location, uploadID: uploadID, parts: parts,
                lengths: (1...count).map { Int64(plan.range(ofPart: $0).count) }, counters: counters)
        } catch let error as S3Error where error.code == .objectExists || error.code == .conditionFailed {
            // Aborted: nothing is left to resume.
            store.remove(record)
            throw error
        } catch var error as S3Error where error.code == .cancelled {
            // Interrupted while the server completes: if the upload is gone, say what is true
            // instead of naming it as kept (outside the cancelled task: the questions must go out).
            let client = self
            if let completion = await Task.detached(operation: {
                await client.completionIfGone(location, uploadID: uploadID, partCount: count, length: source.bytes.length)
            }).value {
                store.remove(record)
                error.completion = completion
            }
            throw error
        }
        store.remove(record)
        let verified = try verify(completed, parts: parts, lengths: (1...count).map { Int64(plan.range(ofPart: $0).count) }, uploadID: uploadID)
        var result = S3UploadResult(
            location: location, length: source.bytes.length, eTag: completed.eTag, uploadID: uploadID, partCount: count,
            partsSkipped: skipped, resumed: resumed, bytesSent: counters.bytesSent, retries: counters.retries,
            checksum: verified, elapsed: Self.seconds(since: start))
        result.bytesSkipped = done.keys.filter { !missing.contains($0) }.reduce(0) { $0 + Int64(plan.range(ofPart: $1).count) }
        return result
    }

    /// How the part size asked for (when one was) and the checksum differ from those a stored
    /// upload was started with, in words; nil when they agree.
    package func settingsDiffer(from stored: S3UploadRecord, fresh: S3PartPlan) -> String? {
        var differences: [String] = []
        if options.partSize != nil, fresh.partSize != stored.plan.partSize {
            differences.append("\(stored.plan.partSize)-byte parts, not \(fresh.partSize)")
        }
        if options.checksum != stored.checksum {
            let name = { (algorithm: ChecksumAlgorithm?) in algorithm.map { $0.rawValue.lowercased() } ?? "none" }
            differences.append("checksum \(name(stored.checksum)), not \(name(options.checksum))")
        } else if let type = stored.checksumType, type != options.effectiveChecksumType {
            differences.append("checksum type \(type), not \(options.effectiveChecksumType.map(\.description) ?? "none")")
        }
        // Compared by fingerprint: the record never holds the key.
        if stored.customerKeyFingerprint != options.object.customerKey?.fingerprint {
            differences.append(stored.customerKeyFingerprint == nil ? "no SSE-C key" : "another SSE-C key (fingerprint \(stored.customerKeyFingerprint!))")
        }
        return differences.isEmpty ? nil : differences.joined(separator: " and ")
    }

    /// What can be found wrong before any effect, local (a state directory) or remote: the
    /// options, and that there are credentials to sign with.
    ///
    /// - Throws: `S3Error` (`.invalidOption`, `.credentials`).
    public func checkBeforeAnyEffect() throws {
        try options.validate()
        _ = try makeSigner()
    }

    /// This client with its options checked (`checkBeforeAnyEffect`) and its signer made, once
    /// for many uploads: each then neither checks the options again nor makes a signer a
    /// request. Only for options changed afterwards in ways that cannot fail the check.
    ///
    /// - Throws: `S3Error` (`.invalidOption`, `.credentials`).
    package func checkedOnce() throws -> S3Client {
        try options.validate()
        var client = self
        client.checkedSigner = try makeSigner()
        return client
    }

    /// How a file source differs now from its fingerprint (taken when it was opened, or
    /// checked against the stored one on resume): written to, grown, shrunk or replaced while
    /// it was being sent. Nil when it did not change, or is not a file.
    package static func change(during source: S3Source) -> String? {
        var descriptorChanged: String?
        if let file = source.bytes as? any ChangeTimedSource, let now = try? file.currentSizeAndChangeTime() {
            // The bytes read (`fstat` of the descriptor): a write within the file's
            // granularity of the open is seen here because the reads began after it (`settle`).
            if now.size != file.length { return "its size is \(now.size), was \(file.length)" }
            if now.change != file.openedChangeTime { descriptorChanged = "its inode change time changed" }
        }
        guard let file = source.bytes as? FileByteSource, source.fingerprint.inode != nil,
            let now = try? S3SourceFingerprint(path: file.path)
        else { return descriptorChanged }
        // The path's fingerprint says more when it differs (the modification time, a file
        // replaced); the descriptor's change time catches what it cannot see.
        return now.difference(from: source.fingerprint) ?? descriptorChanged
    }

    /// Checks Complete's answer against what was sent: the part count in a multipart ETag and
    /// the object checksum (composite `…-N`, or full-object) where the server returns one.
    ///
    /// - Returns: The verified checksum, if the server gave one.
    /// - Throws: `S3Error.verification`.
    package func verify(_ completed: S3CompletedUpload, parts: [S3CompletedPart], lengths: [Int64], uploadID: String) throws -> S3ObjectChecksum? {
        if let count = completed.eTagPartCount, count != parts.count {
            throw S3Error(.verification, "the server assembled \(count) parts, \(parts.count) were sent (ETag \(completed.eTag))", uploadID: uploadID)
        }
        guard let algorithm = options.checksum, let theirs = completed.checksums[algorithm] else { return nil }
        let checksums = parts.compactMap { $0.checksums[algorithm].flatMap { Checksum(algorithm: algorithm, base64: $0) } }
        guard checksums.count == parts.count else { return nil }
        let expected: S3ObjectChecksum?
        if theirs.contains("-") {
            expected = Checksum.composite(of: checksums).map(S3ObjectChecksum.init(composite:))
        } else {
            expected = Checksum.fullObject(of: Array(zip(checksums, lengths)).map { (checksum: $0.0, length: $0.1) })
                .map(S3ObjectChecksum.init(fullObject:))
        }
        guard let expected else { return nil }
        guard expected.s3Value == theirs else {
            throw S3Error(.verification, "the server's \(algorithm.s3Name) of the object is \(theirs), the parts sent give \(expected.s3Value)", uploadID: uploadID)
        }
        return expected
    }

    /// A single `PutObject` of a random-access source: below `headerSignedBodyLimit` read
    /// once into the buffer that is hashed and sent (`SourceSnapshot`: a file as it was at
    /// rest, or refused); longer ones checked for a change while they were sent.
    private func putObject(
        _ source: S3Source, to location: S3Location, counters: S3Counters, meter: S3PartProgress, start: ContinuousClock.Instant
    ) async throws -> S3UploadResult {
        if source.bytes.length < Self.headerSignedBodyLimit {
            let bytes: any ByteSource
            do { bytes = try await options.snapshot.read(source.bytes) } catch {
                throw Self.snapshotError(error, location: location)
            }
            return try await putObject(bytes, to: location, counters: counters, meter: meter, start: start)
        }
        let result: S3UploadResult
        do { result = try await putObject(source.bytes, to: location, counters: counters, meter: meter, start: start) } catch let error as S3Error {
            throw Self.changedSource(error, source) { "the object \(location) was not written; upload it again" }
        }
        if let change = Self.change(during: source) {
            throw S3Error(.sourceChanged, "the source changed while it was sent (\(change)): the object \(location) may hold old and new bytes; upload it again")
        }
        return result
    }

    /// What a `SourceSnapshot` threw, as the upload's error: a change (nothing was sent), a
    /// cancel, a failed read; any other error as it is.
    package static func snapshotError(_ error: any Error, location: S3Location, when: String = "while it was read") -> any Error {
        switch error {
        case let changed as SourceSnapshot.Changed:
            return S3Error(
                .sourceChanged, "the source changed \(when) (\(changed)): nothing was sent to \(location); upload it again once it is no longer written to",
                underlying: changed)
        case is CancellationError: return S3Error(.cancelled, "upload cancelled")
        case let error as ByteSourceError: return S3Error(.source, "PutObject failed: \(error)", underlying: error)
        default: return error
        }
    }

    /// `error` as a changed source when the file changed while it was sent and the error is
    /// what such a change causes: a short read (`.source`), or the server's refusal of bytes
    /// that no longer match the checksum or SHA-256 read before them (`BadDigest`,
    /// `XAmzContentSHA256Mismatch`); else `error` unchanged.
    package static func changedSource(_ error: S3Error, _ source: S3Source, then: () -> String) -> S3Error {
        let digestRefused = ["BadDigest", "XAmzContentSHA256Mismatch", "InvalidDigest"].contains(error.serverCode ?? "")
        guard error.code == .source || digestRefused, let change = change(during: source) else { return error }
        var changed = error
        changed.code = .sourceChanged
        changed.message = "the source changed while it was sent (\(change)): \(then())"
        return changed
    }

    /// A single `PutObject`.
    package func putObject(
        _ bytes: any ByteSource, to location: S3Location, counters: S3Counters, meter: S3PartProgress, start: ContinuousClock.Instant
    ) async throws -> S3UploadResult {
        let call = S3Call(method: "PUT", location: location, headers: options.object.headers(for: .putObject), action: "PutObject")
        let length = bytes.length
        let answer: S3Answer
        do {
            answer = try await send(call, body: .bytes(bytes), counters: counters) { sent in
                meter.update(part: 1, bytes: sent, length: length)
            }
        } catch let error as S3Error {
            throw conditionRefusal(error, location: location) ?? error
        }
        meter.finish(part: 1, length: length)
        var verified: S3ObjectChecksum?
        if let checksum = answer.checksum, let theirs = answer.response.header(checksum.algorithm.headerName) {
            guard theirs == checksum.base64 else {
                throw S3Error(.verification, "the server's \(checksum.algorithm.s3Name) of the object is \(theirs), the bytes sent give \(checksum.base64)")
            }
            verified = S3ObjectChecksum(fullObject: checksum)
        }
        return S3UploadResult(
            location: location, length: length, eTag: answer.response.header("ETag") ?? "", uploadID: nil, partCount: 1,
            partsSkipped: 0, resumed: false, bytesSent: counters.bytesSent, retries: counters.retries, checksum: verified,
            elapsed: Self.seconds(since: start))
    }

    /// Runs `body` holding a permit of `options.requestBudget`, if there is one.
    ///
    /// - Throws: `S3Error.cancelled` when the task is cancelled while it waits; what `body` throws.
    package func withRequestPermit<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        guard let budget = options.requestBudget else { return try await body() }
        do { try await budget.acquire() } catch { throw S3Error(.cancelled, "cancelled while waiting for a request slot") }
        defer { budget.release() }
        return try await body()
    }

    package static func seconds(since start: ContinuousClock.Instant) -> Double {
        (ContinuousClock.now - start).inSeconds
    }

    // MARK: - Abort

    /// Aborts the multipart upload `uploadID` of `location`, or, when nil, every upload of
    /// exactly that key the server lists; forgets the stored records of them.
    ///
    /// - Returns: The upload ids aborted.
    /// - Throws: `S3Error` (`.server` with `NoSuchUpload` when a given id does not exist).
    public func abort(_ location: S3Location, uploadID: String? = nil) async throws -> [String] {
        try checkBeforeAnyEffect()
        let store = S3StateStore(directory: options.stateDirectory)
        let records = store.records(endpoint: configuration.endpointIdentity, bucket: location.bucket, key: location.key)
        var ids: [String]
        if let uploadID {
            ids = [uploadID]
        } else {
            ids = try await listMultipartUploads(location).map(\.uploadID)
            for record in records where !ids.contains(record.uploadID) { ids.append(record.uploadID) }
        }
        var aborted: [String] = []
        for id in ids {
            let existed = try await abortMultipartUpload(location, uploadID: id)
            if !existed, uploadID != nil {
                for record in records where record.uploadID == id { store.remove(record) }
                throw S3Error(
                    .server, "there is no multipart upload \(id) of \(location) (NoSuchUpload)", status: 404,
                    serverCode: "NoSuchUpload", uploadID: id)
            }
            if existed { aborted.append(id) }
            for record in records where record.uploadID == id { store.remove(record) }
        }
        return aborted
    }
}

extension S3Configuration {
    /// What resume records are keyed by: the endpoint, or `aws:REGION`.
    package var endpointIdentity: String { endpoint?.absoluteString ?? "aws:\(region)" }
}
