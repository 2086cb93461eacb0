import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// One run of `TusClient.upload`: discovery, resume or creation, then PATCH to the end.
///
/// - Important: Used by one task only; never shared. Progress closures capture only
///   `meter` and `inFlight`, which are `Sendable`.
package final class TusUploadJob {
    private let client: TusClient
    private let options: TusOptions
    private let source: TusSource
    private let endpoint: URL
    private let length: Int64
    private let store: TusStateStore?
    private let meter: ProgressMeter
    private let inFlight = TusInFlight()
    private let start = ContinuousClock.now

    private var retrier: TusRetrier
    private var uploadURL: URL?
    private var offset: Int64 = 0
    private var resumedFrom: Int64 = 0
    private var created = false
    private var previousUploadGone: String?
    private var usesChecksums = false
    private var bytesSent: Int64 = 0
    private var dataRequests = 0
    private var offsetConflicts = 0
    private var checksumMismatches = 0
    /// Extra headers on the creation POST (`Upload-Concat: partial` for a part of a parallel upload).
    private let creationHeaders: [(String, String)]
    /// Keep the stored record when done (a parallel upload drops its parts' records itself,
    /// once the final upload exists).
    private let keepsRecord: Bool

    package init(
        client: TusClient, source: TusSource, endpoint: URL, creationHeaders: [(String, String)] = [], keepsRecord: Bool = false,
        progress: (@Sendable (UploadProgress) -> Void)?
    ) {
        self.creationHeaders = creationHeaders
        self.keepsRecord = keepsRecord
        self.client = client
        self.options = client.options
        self.source = source
        self.endpoint = endpoint
        self.length = source.bytes.length
        self.store = client.options.resumes ? TusStateStore(directory: client.options.stateDirectory) : nil
        self.meter = ProgressMeter(total: source.bytes.length, interval: client.options.transfer.progressInterval, report: progress)
        self.retrier = TusRetrier(options: client.options)
    }

    private var endpointKey: String { endpoint.absoluteString }

    /// Bytes per data request: the option, or the checksum chunk when checksums are in use,
    /// at most what the transport sends with `Content-Length` (tus servers need a length:
    /// tuspyserver ignores a chunked creation body and refuses a chunked PATCH).
    private var chunkSize: Int64 {
        let chosen = options.chunkSize ?? (usesChecksums ? options.checksumChunkSize : .max)
        return min(chosen, client.transport.maximumSizedBody ?? .max)
    }

    package func run() async throws -> TusUploadResult {
        // A record must be storable before the server holds an upload that needs one.
        try store?.prepare()
        // One run of an upload at a time: its record is this run's until it ends.
        let lock = try store?.lock(endpoint: endpointKey, identity: source.identity)
        defer { lock?.release() }
        let server = try await client.discover(endpoint)
        if let maximum = server.maximumSize, length > maximum {
            throw TusError(
                .tooLarge, "the source is \(length) bytes, more than the server's Tus-Max-Size of \(maximum)",
                totalBytes: length)
        }
        usesChecksums = options.usesChecksums && server.supports("checksum") && server.checksumAlgorithms.contains("sha1")
        let fingerprint = store == nil ? nil : try TusFingerprint(of: source)
        if let store, let fingerprint, !options.restarts {
            try await resumeStored(store: store, fingerprint: fingerprint)
        }
        if uploadURL == nil {
            try await create(server: server, fingerprint: fingerprint)
        }
        guard let url = uploadURL else { throw TusError(.protocolViolation, "no upload URL") }
        do {
            try await sendRest(to: url)
        } catch let error as TusError where error.code == .uploadGone {
            store?.remove(endpoint: endpointKey, identity: source.identity)
            var error = error
            error.message += "; the stored state was dropped, the next run starts a new upload"
            throw error
        }
        if !keepsRecord { store?.remove(endpoint: endpointKey, identity: source.identity) }
        meter.finish(length)
        let elapsed = ContinuousClock.now - start
        return TusUploadResult(
            uploadURL: url, length: length, resumedFrom: resumedFrom, created: created, bytesSent: bytesSent,
            dataRequests: dataRequests, retries: retrier.total, offsetConflicts: offsetConflicts,
            checksumMismatches: checksumMismatches, usedChecksums: usesChecksums, previousUploadGone: previousUploadGone,
            elapsed: elapsed.inSeconds)
    }

    /// Picks up the stored upload of this source, if any: checks the fingerprint, asks the
    /// server for its offset.
    private func resumeStored(store: TusStateStore, fingerprint: TusFingerprint) async throws {
        let (endpointKey, identity) = (endpointKey, source.identity)
        guard let record = try await BlockingPool.shared.run({ try store.load(endpoint: endpointKey, identity: identity) }) else { return }
        if let difference = fingerprint.difference(from: record.fingerprint) {
            throw TusError(
                .sourceChanged,
                "\(source.name) changed since the upload \(record.uploadURL) of it began (\(difference)); refusing to resume: "
                    + "terminate that upload or start a new one",
                uploadURL: record.uploadURL, totalBytes: length)
        }
        guard let url = URL(string: record.uploadURL) else {
            store.remove(endpoint: endpointKey, identity: source.identity)
            return
        }
        let status: TusUploadStatus
        do {
            status = try await client.status(of: url)
        } catch let error as TusError where error.code == .uploadGone {
            store.remove(endpoint: endpointKey, identity: source.identity)
            previousUploadGone = record.uploadURL
            return
        }
        if let serverLength = status.length, serverLength != length {
            throw TusError(
                .sourceChanged, "the upload \(record.uploadURL) is \(serverLength) bytes long at the server but the source is \(length); refusing to resume",
                uploadURL: record.uploadURL, offset: status.offset, totalBytes: length)
        }
        guard status.offset <= length else {
            throw TusError(
                .protocolViolation, "the server's offset \(status.offset) is past the source's end", uploadURL: record.uploadURL,
                offset: status.offset, totalBytes: length)
        }
        uploadURL = url
        offset = status.offset
        resumedFrom = status.offset
        retrier.confirmed(status.offset)
    }

    /// `POST endpoint`, with the first bytes when the server offers creation-with-upload,
    /// and stores the record as soon as the URL is known.
    private func create(server: TusServerInfo, fingerprint: TusFingerprint?) async throws {
        guard server.supports("creation") else {
            throw TusError(.creationUnsupported, "the server at \(endpointKey) does not offer the tus creation extension")
        }
        var metadata = options.metadata
        if options.addsDefaultMetadata {
            if metadata["filename"] == nil { metadata["filename"] = source.name }
            if metadata["filetype"] == nil { metadata["filetype"] = "application/octet-stream" }
        }
        // Every byte goes in a PATCH with its checksum when the server checks them.
        let withBody = options.usesCreationWithUpload && !usesChecksums && server.supports("creation-with-upload")
        let firstCount = withBody ? min(length, options.creationUploadLimit, chunkSize) : 0
        var headers = [("Upload-Length", "\(length)")] + creationHeaders
        if !metadata.isEmpty { headers.append(("Upload-Metadata", TusClient.encodeMetadata(metadata))) }
        if firstCount > 0 { headers.append(("Content-Type", TusClient.offsetContentType)) }
        let request = try client.makeRequest(endpoint, method: "POST", headers: headers)
        let meter = self.meter
        while true {
            do {
                let body: UploadBody? = firstCount > 0 ? .bytes(try SliceByteSource(source.bytes, range: 0..<firstCount)) : nil
                let response = try await sendCounting(request, body: body) { meter.update($0) }
                if firstCount > 0 { dataRequests += 1 }
                if [404, 405, 410].contains(response.status) {
                    throw TusError(
                        .httpStatus, "\(endpointKey) answered \(response.status) to the creation POST: is it a tus creation URL?",
                        status: response.status)
                }
                try client.check(response, url: endpoint, action: "POST (creation)")
                let url = try client.createdLocation(in: response, endpoint: endpoint, what: "the creation POST")
                uploadURL = url
                created = true
                if let store, let fingerprint {
                    // Written (and synced) whether or not the task is cancelled meanwhile: the upload exists.
                    let record = TusRecord(
                        endpoint: endpointKey, identity: source.identity, uploadURL: url.absoluteString,
                        fingerprint: fingerprint, createdAt: Date().timeIntervalSince1970)
                    try await BlockingPool.shared.run(ignoringCancellation: true) { try store.save(record) }
                }
                if firstCount > 0 {
                    if let text = response.header("Upload-Offset"), let confirmed = Int64(text), (0...length).contains(confirmed) {
                        offset = confirmed
                    } else {
                        offset = try await recoverOffset(url)
                    }
                    retrier.confirmed(offset)
                }
                return
            } catch {
                try await retrier.absorb(error, action: "POST (creation)", uploadURL: uploadURL?.absoluteString, total: length)
            }
        }
    }

    /// Sends one request and adds the body bytes it handed to the connection to
    /// `bytesSent`, whether it got an answer or failed mid-way.
    private func sendCounting(
        _ request: UploadRequest, body: UploadBody?,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse {
        do {
            let response = try await client.send(request, body: body, inFlight: inFlight, progress: progress)
            bytesSent += response.bytesSent
            return response
        } catch {
            bytesSent += max(inFlight.value, (error as? UploadError)?.bytesSent ?? 0)
            throw error
        }
    }

    /// PATCH from the server's offset to the end, in chunks, recovering from 409, 460,
    /// 423, 5xx and dropped connections.
    private func sendRest(to url: URL) async throws {
        let chunk = chunkSize
        var mismatchOffset: Int64 = -1
        var mismatchCount = 0
        let meter = self.meter
        meter.update(offset)
        while offset < length {
            if Task.isCancelled {
                throw TusError(.cancelled, "cancelled", uploadURL: url.absoluteString, offset: offset, totalBytes: length)
            }
            let base = offset
            let end = base + min(chunk, length - base)
            let slice = try SliceByteSource(source.bytes, range: base..<end)
            var headers = [("Upload-Offset", "\(base)"), ("Content-Type", TusClient.offsetContentType)]
            if usesChecksums {
                do { headers.append(("Upload-Checksum", "sha1 \(try TusClient.sha1Base64(slice))")) } catch {
                    throw TusError(
                        .source, "cannot read the source at \(base) to checksum it: \(error)",
                        uploadURL: url.absoluteString, offset: base, totalBytes: length, underlying: error)
                }
            }
            let request = try client.makeRequest(url, method: "PATCH", headers: headers)
            do {
                let response = try await sendCounting(request, body: .bytes(slice)) { meter.update(base + $0) }
                dataRequests += 1
                switch response.status {
                case 409:
                    // Offset mismatch: the server holds something else than we thought.
                    offsetConflicts += 1
                    try await retrier.absorb(
                        TusTransientStatus(status: 409, action: "PATCH at \(base)"), action: "PATCH",
                        uploadURL: url.absoluteString, offset: base, total: length)
                    offset = try await recoverOffset(url)
                    continue
                case 460:
                    checksumMismatches += 1
                    if mismatchOffset == base { mismatchCount += 1 } else { mismatchOffset = base; mismatchCount = 1 }
                    guard mismatchCount <= options.checksumRetries else {
                        throw TusError(
                            .checksumMismatch, "the server rejected the checksum of bytes \(base)..<\(end) \(mismatchCount) times",
                            uploadURL: url.absoluteString, status: 460, offset: base, totalBytes: length)
                    }
                    continue
                default:
                    try client.check(response, url: url, action: "PATCH at \(base)", offset: base, total: length)
                }
                let confirmed: Int64
                if let text = response.header("Upload-Offset"), let value = Int64(text) {
                    confirmed = value
                } else {
                    confirmed = try await recoverOffset(url)
                }
                guard confirmed >= base, confirmed <= length else {
                    throw TusError(
                        .protocolViolation, "the server answered PATCH at \(base) with Upload-Offset \(confirmed)",
                        uploadURL: url.absoluteString, status: response.status, offset: base, totalBytes: length)
                }
                if confirmed == base {
                    try await retrier.absorb(
                        TusTransientStatus(status: response.status, action: "PATCH at \(base) (no bytes taken)"),
                        action: "PATCH", uploadURL: url.absoluteString, offset: base, total: length)
                } else {
                    retrier.confirmed(confirmed)
                }
                offset = confirmed
                meter.update(offset)
            } catch {
                try await retrier.absorb(error, action: "PATCH at \(base)", uploadURL: url.absoluteString, offset: base, total: length)
                offset = try await recoverOffset(url)
                meter.update(offset)
            }
        }
    }

    /// `HEAD` until it answers, sharing the run's retry budget.
    private func recoverOffset(_ url: URL) async throws -> Int64 {
        while true {
            do {
                let status = try await client.headOnce(url)
                guard status.offset <= length else {
                    throw TusError(
                        .protocolViolation, "the server's offset \(status.offset) is past the source's end",
                        uploadURL: url.absoluteString, offset: status.offset, totalBytes: length)
                }
                retrier.confirmed(status.offset)
                return status.offset
            } catch {
                try await retrier.absorb(error, action: "HEAD", uploadURL: url.absoluteString, offset: offset, total: length)
            }
        }
    }
}
