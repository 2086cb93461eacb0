import Foundation
import Synchronization
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// One S3 request before it is signed: what, where, with which headers.
package struct S3Call: Sendable {
    package var method: String
    package var location: S3Location
    package var query: [SigV4QueryItem] = []
    package var headers: [SigV4Header] = []
    /// `UploadPart`, `CompleteMultipartUpload`, … for messages.
    package var action: String
    package var uploadID: String?
    package var partNumber: Int?
    /// The most bytes of the answer read, when more than `ResponseBodyHandling.answerLimit`
    /// (a `ListObjectsV2` page of 1,000 URL-encoded keys of up to 1,024 bytes each).
    package var answerLimit: Int?
    /// How long the server may keep its answer alive with whitespace before its document
    /// (`UploadOptions.answerKeepAlive`): `CompleteMultipartUpload` only.
    package var answerKeepAlive: Duration?

    /// Whether a 2xx answer counts only with an `ETag` (`PutObject`, `UploadPart`): without one
    /// nothing proves the bytes were stored. (`HeadObject` asks, and its readers check each
    /// field they use: `S3ObjectHead`.)
    package var requiresETag: Bool { action == "PutObject" || action == "UploadPart" }
}

/// A request body and how it is protected.
package enum S3RequestBody: Sendable {
    /// No body: signed with the empty body's SHA-256.
    case empty
    /// A small body held in memory (XML): signed with its SHA-256.
    case document([UInt8])
    /// Object bytes: protected as `S3Options.payloadSigning` says, with the checksum.
    case bytes(any ByteSource)
}

/// What came back: the response and the checksum of the bytes sent, when one was computed.
package struct S3Answer: Sendable {
    package var response: UploadResponse
    package var checksum: Checksum?
}

/// A signed request ready to send.
package struct S3PreparedRequest: Sendable {
    package var request: UploadRequest
    package var body: any ByteSource
    /// The aws-chunked body, whose trailer checksum is known once it was read.
    package var chunked: AWSChunkedBody?
    /// The checksum computed in a first pass, for the other modes.
    package var checksum: Checksum?

    /// The checksum of the bytes sent, if one was computed.
    package func sentChecksum() throws -> Checksum? {
        if let chunked { return try chunked.trailerChecksum() }
        return checksum
    }
}

/// Counters shared by the requests of one upload.
package final class S3Counters: Sendable {
    private let retriesCount = Atomic<Int>(0)
    private let sentCount = Atomic<Int64>(0)

    package func retried() { retriesCount.add(1, ordering: .relaxed) }
    package func sent(_ bytes: Int64) { sentCount.add(bytes, ordering: .relaxed) }
    package var retries: Int { retriesCount.load(ordering: .relaxed) }
    package var bytesSent: Int64 { sentCount.load(ordering: .relaxed) }
}

/// How one object-bytes request is protected.
package enum S3PayloadMode: Sendable, Equatable {
    case signedChunks(trailer: ChecksumAlgorithm?)
    case unsignedTrailer(ChecksumAlgorithm)
    case unsigned(checksum: ChecksumAlgorithm?)
    case sha256(checksum: ChecksumAlgorithm?)

    /// The checksum the body carries, in a header or a trailer; nil for none.
    package var checksum: ChecksumAlgorithm? {
        switch self {
        case .signedChunks(let algorithm), .unsigned(let algorithm), .sha256(let algorithm): return algorithm
        case .unsignedTrailer(let algorithm): return algorithm
        }
    }
}

extension S3Client {
    /// Bodies up to this size are sent without waiting for `100 Continue`: a refusal costs at
    /// most this much sent for nothing.
    package static let expectContinueThreshold: Int64 = 2 << 20

    /// The protection of object bytes, from the options and the scheme.
    package var payloadMode: S3PayloadMode {
        let overTLS = (configuration.endpoint?.scheme?.lowercased() ?? "https") == "https"
        switch options.payloadSigning {
        case .auto:
            if overTLS { return options.checksum.map(S3PayloadMode.unsignedTrailer) ?? .unsigned(checksum: nil) }
            return .signedChunks(trailer: options.checksum)
        case .chunked: return .signedChunks(trailer: options.checksum)
        case .trailer: return .unsignedTrailer(options.checksum ?? .crc32c)
        case .unsigned: return .unsigned(checksum: options.checksum)
        case .sha256: return .sha256(checksum: options.checksum)
        }
    }

    /// Object bodies shorter than this are signed in the header where `.auto` would sign
    /// aws-chunked (http): hashed in a first pass and sent plain, the checksum in a header. The
    /// same protection (the payload signed, the checksum checked by the server) without the
    /// framing and its three signatures a body (the chunk's, the final chunk's, the
    /// trailer's), which in a job of 10,000 files of 16 KiB cost more than reading each file
    /// twice; servers also parse a plain body for less.
    package static let headerSignedBodyLimit: Int64 = 64 << 10

    /// The protection of an object body of `length` bytes (see `headerSignedBodyLimit`).
    package func payloadMode(for length: Int64) -> S3PayloadMode {
        if options.payloadSigning == .auto, length < Self.headerSignedBodyLimit, case .signedChunks(let trailer) = payloadMode {
            return .sha256(checksum: trailer)
        }
        return payloadMode
    }

    package func makeSigner() throws -> SigV4Signer {
        guard let credentials = configuration.credentials else {
            throw S3Error(.credentials, "no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use a profile (AWS_PROFILE, ~/.aws/credentials)")
        }
        // What a request carries is hidden in every line, however a server echoes it.
        Redaction.register(credentials.secretAccessKey)
        if let token = credentials.sessionToken { Redaction.register(token) }
        return SigV4Signer(credentials: credentials, region: configuration.region)
    }

    /// The request to sign for `call`.
    package func signingRequest(_ call: S3Call) throws -> SigV4Request {
        let (endpoint, path) = configuration.target(for: call.location)
        do {
            return try SigV4Request(method: call.method, endpoint: endpoint, path: path, query: call.query, headers: call.headers)
        } catch {
            throw S3Error(.configuration, "cannot address \(call.location): \(error)", underlying: error)
        }
    }

    /// Signs and sends `call` once.
    ///
    /// - Throws: `S3Error` with code `.server` for a non-2xx answer; `UploadError` from the
    ///   transport, unchanged, so the retry loop can tell transient failures.
    /// Signs `call` with its body protected as the options say.
    ///
    /// - Returns: The request to send, the body as sent (aws-chunked or not), and how to get
    ///   the checksum of the bytes once they were sent.
    /// - Throws: `S3Error`, or a source's error from a first pass (checksum, SHA-256).
    package func prepare(_ call: S3Call, body: S3RequestBody) throws -> S3PreparedRequest {
        let signer = try checkedSigner ?? makeSigner()
        var request = try signingRequest(call)
        let uploadBody: any ByteSource
        let signature: SigV4Signature
        var checksum: Checksum?
        var chunked: AWSChunkedBody?
        switch body {
        case .empty:
            uploadBody = MemoryByteSource([])
            signature = signer.sign(request, payload: .empty)
        case .document(let bytes):
            uploadBody = MemoryByteSource(bytes)
            request.headers.append(SigV4Header("Content-Type", "application/xml"))
            signature = signer.sign(request, payload: .sha256(of: bytes))
        case .bytes(let source):
            let mode = payloadMode(for: source.length)
            // botocore's ChecksumAlgorithm member of PutObject and UploadPart: S3 requires it (or
            // Content-MD5) for an object under Object Lock, and moto keeps a checksum only with it.
            if let algorithm = mode.checksum {
                request.headers.append(SigV4Header("x-amz-sdk-checksum-algorithm", algorithm.s3Name))
            }
            switch mode {
            case .signedChunks(let trailer):
                let signed = try signer.signChunked(
                    request, body: source, mode: trailer.map { .signedWithTrailer($0) } ?? .signed,
                    readAhead: options.signedReadAhead)
                (signature, chunked) = (signed.signature, signed.body)
                uploadBody = signed.body
            case .unsignedTrailer(let algorithm):
                let signed = try signer.signChunked(request, body: source, mode: .unsignedWithTrailer(algorithm))
                (signature, chunked) = (signed.signature, signed.body)
                uploadBody = signed.body
            case .unsigned(let algorithm):
                if let algorithm {
                    checksum = try ChecksumHasher.checksum(algorithm, of: source)
                    request.headers.append(SigV4Header(algorithm.headerName, checksum!.base64))
                }
                uploadBody = source
                signature = signer.sign(request, payload: .unsigned)
            case .sha256(let algorithm):
                // One pass for both: the part is read once before it is sent, not twice.
                let digest = Digest(.sha256)
                let hasher = algorithm.map(ChecksumHasher.init)
                try source.forEachChunk {
                    digest.update($0); hasher?.update($0)
                }
                if let hasher {
                    checksum = hasher.finalize()
                    request.headers.append(SigV4Header(hasher.algorithm.headerName, checksum!.base64))
                }
                uploadBody = source
                signature = signer.sign(request, payload: .sha256(hex: digest.finalize().hexString))
            }
        }
        do {
            return S3PreparedRequest(
                request: try signature.uploadRequest(for: request), body: uploadBody, chunked: chunked,
                checksum: checksum)
        } catch {
            throw S3Error(.invalidOption, "\(call.action): \(error)", underlying: error)
        }
    }

    /// Signs and sends `call` once.
    ///
    /// - Throws: `S3Error` with code `.server` for a non-2xx answer; `UploadError` from the
    ///   transport, unchanged, so the retry loop can tell transient failures.
    package func sendOnce(
        _ call: S3Call, body: S3RequestBody, counters: S3Counters?, progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> S3Answer {
        let prepared = try prepare(call, body: body)
        let upload = prepared.request
        let uploadBody = prepared.body
        let sent = Atomic<Int64>(0)
        let response: UploadResponse
        var transfer = requestTransfer
        if let limit = call.answerLimit { transfer.responseBody = .collectOrFail(limit: limit) }
        transfer.answerKeepAlive = call.answerKeepAlive
        // A small object goes without `Expect: 100-continue`, as aws-sdk-go (s5cmd's SDK) sends
        // it only above 2 MiB: waiting for the server's go-ahead cost a round trip per object.
        // Parts keep it (only a last part is small): a part reset before any answer is then
        // retried by the retry policy, which counts it, not silently by libcurl.
        transfer.expectsContinue = call.partNumber != nil || uploadBody.length > Self.expectContinueThreshold
        do {
            response = try await transport.send(upload, body: .bytes(uploadBody), options: transfer) { bytes in
                sent.store(bytes, ordering: .relaxed)
                progress?(bytes)
            }
        } catch {
            await prepared.chunked?.endReading()
            counters?.sent(sent.load(ordering: .relaxed))
            throw error
        }
        // The request ended: its read-ahead ends too, whatever the transport (the engine's
        // loops end it themselves).
        await prepared.chunked?.endReading()
        counters?.sent(response.bytesSent)
        if let refusal = try S3ServerError.refusal(in: response, action: call.action) {
            throw refusal.error(status: response.status, action: call.action, uploadID: call.uploadID, partNumber: call.partNumber)
        }
        if call.requiresETag, response.header("ETag")?.isEmpty ?? true {
            throw S3Error(
                .malformedResponse, "the server's \(response.status) answer to \(call.action) has no ETag: nothing proves the object was stored",
                status: response.status, uploadID: call.uploadID, partNumber: call.partNumber)
        }
        return S3Answer(response: response, checksum: try prepared.sentChecksum())
    }

    /// Sends `call`, retrying transient failures (connection failures, 5xx, `SlowDown`) under
    /// the options' `RetryPolicy`; the body is read again from its start for each attempt.
    /// Each attempt holds a permit of `options.requestBudget` while it is sent, and none
    /// through the backoff before the next: every request of a job (`PutObject`, `Create`,
    /// `Complete`, `ListParts`, `Abort`) counts against one number, as the parts do.
    ///
    /// - Throws: `S3Error`.
    package func send(
        _ call: S3Call, body: S3RequestBody = .empty, counters: S3Counters? = nil,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> S3Answer {
        var budget = RetryBudget(options.retryPolicy)
        while true {
            do {
                return try await withRequestPermit { try await sendOnce(call, body: body, counters: counters, progress: progress) }
            } catch {
                let failure = classify(error, call)
                guard failure.retryable else { throw failure.error }
                switch budget.failed() {
                case .failure:
                    var final = failure.error
                    final.message = "\(failure.error.message) (after \(counted(budget.failures, "attempt")))"
                    if final.code != .server { final.code = .retriesExhausted }
                    throw final
                case .success(let delay):
                    counters?.retried()
                    do { try await Task.sleep(for: delay) } catch {
                        throw S3Error(.cancelled, "cancelled while waiting to retry \(call.action)", uploadID: call.uploadID, partNumber: call.partNumber)
                    }
                }
            }
        }
    }

    /// What an error from `sendOnce` means: an `S3Error`, and whether another attempt may help.
    package func classify(_ error: any Error, _ call: S3Call) -> (error: S3Error, retryable: Bool) {
        let part = call.partNumber.map { " of part \($0)" } ?? ""
        switch error {
        case let error as S3Error:
            if error.code == .server, let status = error.status {
                return (error, S3ServerError(code: error.serverCode ?? "", message: "").isRetryable(status: status))
            }
            return (error, false)
        case is CancellationError:
            return (S3Error(.cancelled, "cancelled during \(call.action)\(part)", uploadID: call.uploadID, partNumber: call.partNumber), false)
        case let error as UploadError:
            let (code, retryable) = S3Error.Code.of(transport: error)
            let message =
                switch error.code {
                case .cancelled: "cancelled during \(call.action)\(part)"
                case .tooManyRedirects: "\(call.action)\(part) was \(error.unfollowedRedirect)"
                case .invalidURL: "\(call.location): \(error.message)"
                default: "\(call.action)\(part) failed: \(error.message)"
                }
            let number = code == .invalidLocation ? nil : call.partNumber
            let status = code == .server ? error.status : nil
            return (S3Error(code, message, status: status, uploadID: call.uploadID, partNumber: number, underlying: error), retryable)
        case let error as ByteSourceError:
            return (
                S3Error(
                    .source, "\(call.action)\(part) failed: \(error)", uploadID: call.uploadID, partNumber: call.partNumber,
                    underlying: error), false
            )
        default:
            return (
                S3Error(
                    .transport, "\(call.action)\(part) failed: \(error)", uploadID: call.uploadID, partNumber: call.partNumber,
                    underlying: error), false
            )
        }
    }

    // MARK: - The operations

    /// The headers of `CreateMultipartUpload`: the object's, the checksum algorithm and type.
    package var createMultipartUploadHeaders: [SigV4Header] {
        var headers = options.object.headers(for: .createMultipartUpload)
        if let checksum = options.checksum { headers.append(SigV4Header("x-amz-checksum-algorithm", checksum.s3Name)) }
        // Sent when it is not S3's own default for the algorithm (COMPOSITE where none is sent).
        if let type = options.effectiveChecksumType, type == .fullObject || options.checksumType != nil {
            headers.append(SigV4Header("x-amz-checksum-type", type.rawValue))
        }
        return headers
    }

    /// `CreateMultipartUpload`.
    package func createMultipartUpload(_ location: S3Location, counters: S3Counters) async throws -> String {
        let headers = createMultipartUploadHeaders
        let call = S3Call(
            method: "POST", location: location, query: [SigV4QueryItem("uploads")], headers: headers,
            action: "CreateMultipartUpload")
        let answer = try await send(call, counters: counters)
        return try S3CreatedUpload(xml: answer.response.body).uploadID
    }

    /// Part `number` as Complete lists it, from the server's answer to `UploadPart` and the
    /// checksum of the bytes sent.
    ///
    /// - Throws: `S3Error.malformedResponse` without an ETag; `S3Error.verification` when the
    ///   server returns the part's checksum and it differs from the one of the bytes sent.
    package static func completedPart(_ number: Int, response: UploadResponse, sent: Checksum?, uploadID: String) throws -> S3CompletedPart {
        guard let eTag = response.header("ETag"), !eTag.isEmpty else {
            throw S3Error(.malformedResponse, "the server's answer to UploadPart of part \(number) has no ETag", uploadID: uploadID, partNumber: number)
        }
        var checksums: [ChecksumAlgorithm: String] = [:]
        if let sent {
            let name = sent.algorithm.s3Name
            if let theirs = response.header(sent.algorithm.headerName), theirs != sent.base64 {
                throw S3Error(
                    .verification, "the server's \(name) of part \(number) is \(theirs), the bytes sent give \(sent.base64)",
                    uploadID: uploadID, partNumber: number)
            }
            checksums[sent.algorithm] = sent.base64
        }
        return S3CompletedPart(partNumber: number, eTag: eTag, checksums: checksums)
    }

    /// `ListParts`, every page.
    package func listParts(_ location: S3Location, uploadID: String, counters: S3Counters) async throws -> [S3ListedPart] {
        var parts: [S3ListedPart] = []
        var marker: Int?
        repeat {
            var query = [SigV4QueryItem("uploadId", uploadID)]
            if let marker { query.append(SigV4QueryItem("part-number-marker", "\(marker)")) }
            let call = S3Call(method: "GET", location: location, query: query, action: "ListParts", uploadID: uploadID)
            let page = try S3PartsPage(xml: try await send(call, counters: counters).response.body)
            parts += page.parts
            guard page.isTruncated, let next = page.nextPartNumberMarker else { break }
            guard next > (marker ?? 0) else {
                throw S3Error(.malformedResponse, "the server's ListParts pages do not advance (marker \(next))", uploadID: uploadID)
            }
            // An upload has at most 10,000 parts: pages that go on past them never end.
            guard next < S3PartPlan.maximumParts, parts.count < S3PartPlan.maximumParts else {
                throw S3Error(
                    .malformedResponse,
                    "the server's ListParts pages go on past S3's \(S3PartPlan.maximumParts) parts (marker \(next), \(parts.count) parts listed): the server is wrong",
                    uploadID: uploadID)
            }
            marker = next
        } while true
        return parts
    }

    /// The whole object's checksum from its parts' (`lengths` in part order), for a FULL_OBJECT
    /// upload; nil otherwise.
    package func fullObjectChecksum(_ parts: [S3CompletedPart], lengths: [Int64]) -> Checksum? {
        guard let algorithm = options.checksum, options.effectiveChecksumType == .fullObject, parts.count == lengths.count else { return nil }
        let checksums = parts.compactMap { $0.checksums[algorithm].flatMap { Checksum(algorithm: algorithm, base64: $0) } }
        guard checksums.count == parts.count else { return nil }
        return Checksum.fullObject(of: zip(checksums, lengths).map { (checksum: $0.0, length: $0.1) })
    }

    /// The headers of `CompleteMultipartUpload`: the object's (conditions, SSE-C), and for a
    /// FULL_OBJECT checksum the type and the whole object's checksum.
    package func completeMultipartUploadHeaders(_ parts: [S3CompletedPart], lengths: [Int64]) -> [SigV4Header] {
        var headers = options.object.headers(for: .completeMultipartUpload)
        if let whole = fullObjectChecksum(parts, lengths: lengths) {
            headers.append(SigV4Header("x-amz-checksum-type", S3ChecksumType.fullObject.rawValue))
            headers.append(SigV4Header(whole.algorithm.headerName, whole.base64))
        }
        return headers
    }

    /// The longest `CompleteMultipartUpload` may keep its answer alive with whitespace.
    package static let completionKeepAlive: Duration = .seconds(30 * 60)

    /// `CompleteMultipartUpload`, with the object's conditions and SSE-C key, and for a
    /// FULL_OBJECT checksum the whole object's, combined from the parts' (`lengths`).
    ///
    /// - Throws: `S3Error`; `.objectExists` / `.conditionFailed` when the object's condition
    ///   refused it (412), the upload then aborted.
    package func completeMultipartUpload(
        _ location: S3Location, uploadID: String, parts: [S3CompletedPart], lengths: [Int64], counters: S3Counters
    ) async throws -> S3CompletedUpload {
        let headers = completeMultipartUploadHeaders(parts, lengths: lengths)
        // S3 answers 200 at once and sends a space every few seconds while it joins the parts,
        // which "could take several minutes": not a trickle (AnswerPace), up to half an hour.
        let call = S3Call(
            method: "POST", location: location, query: [SigV4QueryItem("uploadId", uploadID)], headers: headers,
            action: "CompleteMultipartUpload", uploadID: uploadID, answerKeepAlive: Self.completionKeepAlive)
        let document = Array(S3CompletedPart.completionDocument(parts))
        // A 200 whose body is an error document is that error (`sendOnce`), retried as it says.
        let answer: S3Answer
        do { answer = try await send(call, body: .document(document), counters: counters) } catch let error as S3Error {
            guard var refused = conditionRefusal(error, location: location) else { throw error }
            // Refused by the object's condition: nothing to resume, nothing to leave billed.
            if (try? await abortMultipartUpload(location, uploadID: uploadID, counters: counters)) != nil {
                refused.message += "; upload \(uploadID) was aborted"
            }
            throw refused
        }
        return try S3CompletedUpload(xml: answer.response.body)
    }

    /// The error to report when `error` is the object's condition refusing a write (412
    /// `PreconditionFailed`); nil for any other error.
    package func conditionRefusal(_ error: S3Error, location: S3Location) -> S3Error? {
        guard error.status == 412 || error.serverCode == "PreconditionFailed", let condition = options.object.condition else { return nil }
        var refused = error
        refused.uploadID = nil
        switch condition {
        case .noClobber:
            refused.code = .objectExists
            refused.message = "\(location) exists, kept (If-None-Match: * refused by the server)"
        case .ifMatch(let eTag):
            refused.code = .conditionFailed
            refused.message = "\(location) does not have ETag \(eTag) (If-Match refused by the server); nothing written"
        }
        return refused
    }

    /// `AbortMultipartUpload`. A missing upload (`NoSuchUpload`) counts as aborted.
    ///
    /// - Returns: false when the server did not have the upload.
    @discardableResult
    package func abortMultipartUpload(_ location: S3Location, uploadID: String, counters: S3Counters? = nil) async throws -> Bool {
        let call = S3Call(
            method: "DELETE", location: location, query: [SigV4QueryItem("uploadId", uploadID)],
            action: "AbortMultipartUpload", uploadID: uploadID)
        do {
            _ = try await send(call, counters: counters)
            return true
        } catch let error as S3Error where error.serverCode == "NoSuchUpload" || error.status == 404 {
            return false
        }
    }

    /// The most `ListMultipartUploads` pages read for one key: S3 lists 1,000 uploads a page,
    /// so this is 100,000 uploads in progress of one key; pages past it never end.
    package static let uploadListingPageLimit = 100

    /// `ListMultipartUploads` for exactly `location.key`, every page (at most
    /// `uploadListingPageLimit`), each upload once.
    package func listMultipartUploads(_ location: S3Location) async throws -> [S3UploadInProgress] {
        var found: [S3UploadInProgress] = []
        var seen: Set<String> = []
        var keyMarker: String?
        var idMarker: String?
        let bucket = try S3Location(bucket: location.bucket, key: "")
        var pages = 0
        repeat {
            pages += 1
            guard pages <= Self.uploadListingPageLimit else {
                throw S3Error(
                    .malformedResponse,
                    "the server's ListMultipartUploads pages for \(location) go on past \(Self.uploadListingPageLimit) pages (\(found.count) uploads of the key): the server is wrong"
                )
            }
            var query = [SigV4QueryItem("uploads"), SigV4QueryItem("prefix", location.key)]
            if let keyMarker { query.append(SigV4QueryItem("key-marker", keyMarker)) }
            if let idMarker { query.append(SigV4QueryItem("upload-id-marker", idMarker)) }
            let call = S3Call(method: "GET", location: bucket, query: query, action: "ListMultipartUploads")
            let page = try S3UploadsPage(xml: try await send(call).response.body)
            // A listing that repeats an upload counts it once.
            found += page.uploads.filter { $0.key == location.key && seen.insert($0.uploadID).inserted }
            guard page.isTruncated, page.nextKeyMarker != nil || page.nextUploadIDMarker != nil else { break }
            guard page.nextKeyMarker != keyMarker || page.nextUploadIDMarker != idMarker else { break }
            keyMarker = page.nextKeyMarker
            idMarker = page.nextUploadIDMarker
        } while true
        return found
    }
}

extension S3Configuration {
    /// The endpoint (scheme, host, port, path prefix) and the decoded path for `location`.
    package func target(for location: S3Location) -> (endpoint: URL, path: String) {
        let base = endpoint ?? URL(string: "https://s3.\(region).amazonaws.com")!
        let overTLS = base.scheme?.lowercased() == "https"
        let virtual: Bool
        switch addressingStyle {
        case .path: virtual = false
        case .virtual: virtual = true
        case .auto: virtual = isAWS && location.isDNSCompatible(overTLS: overTLS)
        }
        if virtual {
            var components = URLComponents(url: base, resolvingAgainstBaseURL: false)!
            components.host = "\(location.bucket).\(components.host ?? "")"
            return (components.url!, "/" + location.key)
        }
        return (base, "/\(location.bucket)/\(location.key)")
    }
}

extension UploadError {
    /// A redirect `S3Client` did not follow (it follows none), in words:
    /// `redirected (307) to URL; …`.
    package var unfollowedRedirect: String {
        let location = redirectLocation.map { " to \($0)" } ?? ""
        return "redirected (\(status.map(String.init) ?? "3xx"))\(location); S3 requests are signed for one endpoint and not followed: check the endpoint URL and the region"
    }
}
