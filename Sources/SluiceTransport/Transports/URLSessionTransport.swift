import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceBoundStreams

/// Sends bodies with `URLSession`, through an `InputStreamSource` as the streamed body (a
/// caller's `.stream` body too: it is pumped through the pair and counted, never handed over).
///
/// On Linux, URLSession sends every stream body chunked (no `Content-Length`: servers that
/// need a length refuse it), re-sends an empty body when it follows a redirect itself, and
/// can hang on a 401. This transport closes those holes: every `needNewBodyStream` gets a
/// fresh stream from byte 0 (or one that fails, for a one-shot body), redirects are never
/// followed by URLSession but re-sent here with a fresh stream (307/308 only; other 3xx are
/// returned), 401 challenges complete the task and are answered here with Basic credentials
/// and a replay, and a 2xx after a short body is an error. Credentials go to another origin
/// only as `UploadRequest.sendsCredentials(to:options:)` allows.
///
/// When `options.prefersContentLength` asks (`TusClient` does), a random-access body of at most
/// `sizedBodyLimit` bytes goes with `Content-Length` instead: read into memory and handed to
/// URLSession as data (servers that need a length, such as tuspyserver's PATCH, take it);
/// `TusClient` cuts its PATCHes to that size on this transport. Under a rate limit such a body's
/// bytes are drawn from the cap before it is handed over (`RateLimit.takeWhole`).
///
/// - Important: Each `send` uses its own session, invalidated when it ends. Memory: the ring
///   (`options.bufferSize`) for a streamed body, the body itself for a sized one.
public struct URLSessionTransport: UploadTransport {
    /// The longest body sent with `Content-Length` (held in memory whole); longer ones, and
    /// bodies that cannot be read twice, are streamed, chunked on Linux.
    public static let sizedBodyLimit: Int64 = 8 << 20

    public var maximumSizedBody: Int64? { Self.sizedBodyLimit }

    /// The bound pair bodies go through: Foundation's own where it has one (Apple platforms).
    package let streams: InputStreamSource.Streams

    /// A transport whose bodies go through the platform's bound stream pair (Sluice's on Linux,
    /// Foundation's on Apple platforms).
    public init() {
        self.init(streams: .platformDefault)
    }

    /// - Parameter streams: `.foundation` on Linux runs the Apple-platform path here (tests).
    package init(streams: InputStreamSource.Streams) {
        self.streams = streams
    }

    public func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse {
        try request.validate()
        try Self.refuseSignedDotSegments(request)
        try Self.refuseIPv6Literal(request.url)
        var url = request.url
        var authorization: String?
        var redirects = 0
        var answeredChallenge = false
        /// The attempt before this one, if any.
        var previous: UploadResponse?
        let responseBody = ResponseBodyReceiver(options.responseBody)
        while true {
            if Task.isCancelled {
                throw UploadError(.cancelled, "upload cancelled", bytesSent: 0, totalBytes: body.length.value)
            }
            // A CA file (`--cacert`, `--ca-bundle`, `AWS_CA_BUNDLE`) and `-k` matter for https
            // only: plain http goes (before: every request refused whenever AWS_CA_BUNDLE was set).
            if url.scheme?.lowercased() == "https", options.caFile != nil || options.insecure {
                // URLSession on Linux has no server-trust evaluation to hook a CA file into.
                throw UploadError(
                    .invalidOption,
                    "https to \(url.hostAndPort) with a CA file or without TLS verification: these need the curl transport (URLSession uses the system trust store only)",
                    bytesSent: 0, totalBytes: body.length.value)
            }
            if let previous, !body.isReplayable {
                // What the last attempt sent is what the line counts (before: 0 after 5 MB).
                throw UploadError(
                    .notReplayable, "server answered \(previous.status) and asked for the body again, which cannot be replayed (stdin or a stream)",
                    status: previous.status, bytesSent: previous.bytesSent, totalBytes: body.length.value)
            }
            responseBody.begin(status: 0)
            let mayAuthenticate = request.sendsCredentials(to: url, options: options)
            let response = try await URLSessionAttempt(
                url: url, request: request, authorization: mayAuthenticate ? authorization : nil, body: body,
                options: options, streams: streams, responseBody: responseBody, progress: progress
            ).run()
            previous = response
            if response.status == 307 || response.status == 308, let location = response.header("Location") {
                redirects += 1
                guard redirects <= options.maximumRedirects else {
                    var error = UploadError(.tooManyRedirects, "more than \(options.maximumRedirects) redirects", status: response.status)
                    error.redirectLocation = location
                    throw error
                }
                guard let next = URL(string: location, relativeTo: url)?.absoluteURL else {
                    throw UploadError(.protocolViolation, "redirect to an invalid location '\(location)'", status: response.status)
                }
                try Self.refuseIPv6Literal(next, redirectedBy: response.status)
                url = next
                continue
            }
            if response.status == 401, let credentials = options.credentials, !answeredChallenge, mayAuthenticate {
                answeredChallenge = true
                let token = Data("\(credentials.user):\(credentials.password)".utf8).base64EncodedString()
                authorization = "Basic \(token)"
                continue
            }
            let received = try responseBody.finish()
            var final = response
            final.body = received.body
            final.bodyByteCount = received.byteCount
            final.isBodyTruncated = received.isTruncated
            return final
        }
    }
}

extension URLSessionTransport {
    /// Refuses a signed request (a SigV4 `Authorization` header, or a presigned URL's
    /// `X-Amz-Signature`) whose path holds `.` or `..` segments, before any byte is sent.
    ///
    /// FoundationNetworking hands the URL to libcurl without `CURLOPT_PATH_AS_IS`, and libcurl
    /// removes dot segments: `/bucket/a/../b` goes out as `/bucket/b`. The signature covers the
    /// path as written, so the server would refuse it (`SignatureDoesNotMatch`), or a server
    /// that does not check would store another key. Percent-encoding the dots is no way out:
    /// whether a server signs the path as received or decoded differs from server to server.
    /// Unsigned requests are sent as URLSession sends them (dot segments removed, as `curl`
    /// does by default).
    ///
    /// - Throws: `UploadError.invalidURL`.
    package static func refuseSignedDotSegments(_ request: UploadRequest) throws(UploadError) {
        #if canImport(FoundationNetworking)
        guard request.isSigV4Signed, let path = request.url.dotSegmentPath else { return }
        throw UploadError(
            .invalidURL,
            "the signed path \(path) has '.' or '..' segments, which URLSession on Linux removes (libcurl in FoundationNetworking) so the signature would not match: the curl transport (the default) sends the path as written"
        )
        #endif
    }
}

extension URLSessionTransport {
    /// Refuses a URL whose host is an IPv6 literal (`http://[::1]:8080/`) before any byte is
    /// sent: FoundationNetworking (Linux) hands libcurl the host without its brackets, and
    /// every such request fails with `NSURLErrorDomain -1000` (bad URL). The curl transport
    /// reaches them.
    ///
    /// - Parameter status: The redirect that led there, if any.
    /// - Throws: `UploadError.invalidURL`.
    package static func refuseIPv6Literal(_ url: URL, redirectedBy status: Int? = nil) throws(UploadError) {
        #if canImport(FoundationNetworking)
        guard url.hasIPv6LiteralHost else { return }
        let how =
            status.map { "the server redirected (\($0)) to \(url.hostAndPort), an IPv6 literal" }
            ?? "\(url.hostAndPort) is an IPv6 literal"
        throw UploadError(
            .invalidURL, "\(how), which URLSession on Linux cannot reach (FoundationNetworking drops the brackets): the curl transport (the default) can",
            status: status)
        #endif
    }
}

extension UploadRequest {
    /// Whether the request carries a SigV4 signature over its path: an `AWS4-HMAC-SHA256`
    /// `Authorization` header or a presigned URL's `X-Amz-Signature` query item.
    package var isSigV4Signed: Bool {
        if header("Authorization")?.hasPrefix("AWS4-HMAC-SHA256") == true { return true }
        let items = URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQueryItems ?? []
        return items.contains { $0.name.caseInsensitiveCompare("X-Amz-Signature") == .orderedSame }
    }
}

extension URL {
    /// The percent-encoded path when one of its segments is `.` or `..` (which a client that
    /// normalises paths removes), else nil.
    package var dotSegmentPath: String? {
        guard let path = URLComponents(url: self, resolvingAgainstBaseURL: false)?.percentEncodedPath else { return nil }
        return path.split(separator: "/", omittingEmptySubsequences: false).contains { $0 == "." || $0 == ".." } ? path : nil
    }
}

/// One request/response exchange over a private URLSession.
package final class URLSessionAttempt: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: NSObject subclass; mutable state lives in `state`, a lock; the rest is immutable.
    private let url: URL
    private let request: UploadRequest
    private let authorization: String?
    private let body: UploadBody
    private let options: UploadOptions
    private let streams: InputStreamSource.Streams
    private let responseBody: ResponseBodyReceiver
    private let progress: @Sendable (Int64) -> Void

    private struct State {
        package var source: InputStreamSource?
        /// The body handed to URLSession as data (sent with `Content-Length`), and its bytes sent.
        package var sized: (count: Int64, sent: Int64)?
        package var streamsHanded = 0
        /// `streamsHanded` when the last response arrived.
        package var streamsAtResponse = 0
        package var response: HTTPURLResponse?
        /// Set when a second response came in the same task (libcurl sent the request again,
        /// after a 417 during the body) with no new body stream asked for: the first response's
        /// status. That request's body did not start at byte 0, so its answer is for a short body.
        package var resentWithoutReplayAfter: Int?
        /// The response-body sink threw, or the answer broke `AnswerPace`: the task was
        /// cancelled and this is the outcome.
        package var sinkFailure: UploadError?
        /// The answer's pace, checked as its bytes arrive (`AnswerPace`).
        package var answer: AnswerPace
        package var continuation: CheckedContinuation<Void, Never>?
        package var error: (any Error)?
        package var completed = false
        package var cancelled = false
        package var notReplayable = false
        /// A 401 challenge was cancelled so the task would end: its response is the outcome.
        package var challenged = false
        package var task: URLSessionTask?
    }

    private let state: Lock<State>

    /// URLSession's own idle timeout, a little above the stall timeout: when the body source
    /// is what stalled, the pair's reader gives up first (at the stall timeout) and names it,
    /// instead of URLSession's generic "timed out talking to …" winning the race under load.
    package static func requestTimeout(stallTimeout: Duration) -> TimeInterval {
        let seconds = min(stallTimeout, UploadOptions.maximumTimeout).inSeconds
        return seconds + max(1, seconds / 4)
    }

    /// The body source stalled when the pair's reader gave up waiting for it (URLSession's
    /// queue is shared: it must not wait longer), or when URLSession's own timeout won that
    /// race (under load) while the pump still waits inside the source with every byte read.
    package static func stalledSource(_ source: InputStreamSource, error: (any Error)?, stallTimeout: Duration) -> BoundStreamPair.ProducerStalled? {
        if let stalled = source.pairFailure as? BoundStreamPair.ProducerStalled { return stalled }
        guard (error as? URLError)?.code == .timedOut, source.isWaitingOnSource else { return nil }
        return BoundStreamPair.ProducerStalled(timeout: stallTimeout)
    }

    package init(
        url: URL, request: UploadRequest, authorization: String?, body: UploadBody, options: UploadOptions,
        streams: InputStreamSource.Streams, responseBody: ResponseBodyReceiver, progress: @escaping @Sendable (Int64) -> Void
    ) {
        self.url = url
        self.request = request
        self.authorization = authorization
        self.body = body
        self.options = options
        self.streams = streams
        self.responseBody = responseBody
        self.progress = progress
        state = Lock(State(answer: AnswerPace(stallTimeout: options.stallTimeout, keepAlive: options.answerKeepAlive)))
    }

    package func run() async throws -> UploadResponse {
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = request.method
        urlRequest.timeoutInterval = Self.requestTimeout(stallTimeout: options.stallTimeout)
        for header in request.headers(for: url, options: options) where header.name.lowercased() != "content-length" {
            urlRequest.addValue(header.value, forHTTPHeaderField: header.name)
        }
        if let authorization { urlRequest.setValue(authorization, forHTTPHeaderField: "Authorization") }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = Self.requestTimeout(stallTimeout: options.stallTimeout)
        configuration.urlCredentialStorage = nil
        // Cookies only as the caller's own header, under the credential policy.
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        let sizedBody = try readSizedBody()
        if let sizedBody {
            state.withLock { $0.sized = (Int64(sizedBody.count), 0) }
            // Handed over as data, it goes at whatever pace libcurl has: its bytes are drawn
            // from the cap before it goes (before: sized bodies ran uncapped).
            do {
                try await options.rateLimit?.takeWhole(Int64(sizedBody.count))
            } catch {
                throw UploadError(.cancelled, "upload cancelled", bytesSent: 0, totalBytes: body.length.value)
            }
        }
        let queue = BoundedDelegateQueue(streaming: { if case .stream = options.responseBody { true } else { false } }())
        // On Linux, URLSession drives every task of the process from one shared queue, and
        // making a session or task, resume and invalidate wait for it (sync). While a body's
        // reader waits there (a producer that stalled, up to the stall timeout), such a call
        // must not hold one of Swift's few cooperative threads: make them on a dispatch thread.
        let (session, task) = await Self.offCooperativePool { [urlRequest] in
            let session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
            if let sizedBody { return (session, session.uploadTask(with: urlRequest, from: sizedBody)) }
            return (session, session.uploadTask(withStreamedRequest: urlRequest))
        }
        defer { DispatchQueue.global().async { session.finishTasksAndInvalidate() } }
        state.withLock { $0.task = task }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let done = state.withLock { state -> Bool in
                    if state.completed { return true }
                    state.continuation = continuation
                    return false
                }
                if done { continuation.resume() } else { DispatchQueue.global().async { task.resume() } }
            }
        } onCancel: {
            let source = state.withLock { state -> InputStreamSource? in
                state.cancelled = true
                return state.source
            }
            // The source first: it wakes URLSession's stream queue if it is blocked in our
            // stream's read. `task.cancel()` waits for that queue (a sync call on Linux), so
            // it runs off this thread and cannot stall the canceller.
            source?.cancel()
            Self.cancel(task)
        }
        let result = Result { try outcome() }
        // The task is over: a source still pumping (the server answered before the last byte)
        // stops, and an async sequence body's iterating task ends.
        state.withLock { $0.source }?.cancel()
        return try result.get()
    }

    /// The body, read whole, when it goes with `Content-Length`: asked for
    /// (`prefersContentLength`), random access, a known length up to
    /// `URLSessionTransport.sizedBodyLimit`, and no `forceChunked`.
    ///
    /// - Throws: `UploadError.sourceFailed` naming the offset where the source failed or ended.
    private func readSizedBody() throws -> Data? {
        guard options.prefersContentLength, !options.forceChunked, case .random(let source, let start) = body.storage,
            source.length - start <= URLSessionTransport.sizedBodyLimit
        else { return nil }
        var data = Data(count: Int(source.length - start))
        var offset = start
        do {
            try data.withUnsafeMutableBytes { buffer in
                while offset < source.length {
                    let target = UnsafeMutableRawBufferPointer(rebasing: buffer[Int(offset - start)...])
                    let count = try source.read(into: target, at: offset)
                    if count == 0 { throw ByteSourceError.endedEarly(offset: offset, expected: source.length) }
                    offset += Int64(count)
                }
            }
        } catch {
            throw UploadError(
                .sourceFailed, "source failed at byte \(offset): \(error)", bytesSent: 0,
                totalBytes: source.length - start, offset: offset, underlying: error)
        }
        return data
    }

    /// Cancels `task` from a dispatch thread, never from the caller's. On Linux `cancel` runs
    /// synchronously on URLSession's work queue, the queue that calls `needNewBodyStream` (from
    /// libcurl's seek callback) and waits for the delegate queue: called from either, it would
    /// wait for itself. Every cancel of a task goes through here.
    package static func cancel(_ task: URLSessionTask) {
        DispatchQueue.global().async { task.cancel() }
    }

    /// Runs `body` on a dispatch thread and returns its result.
    private static func offCooperativePool<T>(_ body: @escaping @Sendable () -> T) async -> T {
        let box = await withCheckedContinuation { (continuation: CheckedContinuation<UncheckedBox<T>, Never>) in
            DispatchQueue.global().async { continuation.resume(returning: UncheckedBox(value: body())) }
        }
        return box.value
    }

    /// Hands a URLSession object from the thread that made it to the task that uses it.
    private struct UncheckedBox<T>: @unchecked Sendable {
        // @unchecked: the value is handed over once and then used by the receiving task only.
        package let value: T
    }

    private func outcome() throws -> UploadResponse {
        var (response, error, source, cancelled, notReplayable, sinkFailure) = state.withLock {
            ($0.response, $0.error, $0.source, $0.cancelled, $0.notReplayable, $0.sinkFailure)
        }
        if state.withLock({ $0.challenged }), response?.statusCode == 401 {
            error = nil
        }
        let total = body.length.value
        let sized = state.withLock { $0.sized }
        let sent = source?.bytesRead ?? sized?.sent ?? 0
        if var sinkFailure {
            sinkFailure.bytesSent = sent
            sinkFailure.totalBytes = total
            throw sinkFailure
        }
        if cancelled {
            throw UploadError(.cancelled, "upload cancelled", bytesSent: sent, totalBytes: total)
        }
        if notReplayable {
            throw UploadError(.notReplayable, "URLSession asked for the body again and it cannot be replayed", bytesSent: sent, totalBytes: total)
        }
        if let earlier = state.withLock({ $0.resentWithoutReplayAfter }) {
            throw UploadError(
                .transport,
                "the server answered \(earlier) during the body and URLSession sent the request again without its first bytes: the answer to that (\(response?.statusCode ?? 0)) is not for the whole body",
                status: response?.statusCode, bytesSent: sent, totalBytes: total)
        }
        if let source, let stalled = Self.stalledSource(source, error: error, stallTimeout: options.stallTimeout) {
            throw UploadError(.timedOut, "\(stalled)", status: response?.statusCode, bytesSent: sent, totalBytes: total, underlying: stalled)
        }
        if let source, let failure = source.finishedFailure as? InputStreamSource.SourceFailure {
            throw UploadError(
                .sourceFailed, "source failed at byte \(failure.offset): \(failure.underlying)",
                status: response?.statusCode, bytesSent: sent, totalBytes: total, offset: failure.offset, underlying: failure)
        }
        if let error {
            throw Self.map(error, bytesSent: sent, total: total, url: url, stallTimeout: options.stallTimeout)
        }
        guard let response else {
            throw UploadError(.noResponse, "no response from \(url.absoluteString)", bytesSent: sent, totalBytes: total)
        }
        let headers = response.allHeaderFields.compactMap { key, value -> HTTPHeader? in
            guard let name = key as? String, let value = value as? String, HTTPSyntax.isToken(name) else { return nil }
            return HTTPHeader(name: name, value: value)
        }
        let result = UploadResponse(status: response.statusCode, headers: headers, body: Data(), bytesSent: sent, url: response.url ?? url)
        if result.isSuccess {
            // Never a 2xx after a short body.
            let complete: Bool
            if let source {
                let written = source.finishedBytes
                complete = written != nil && sent == written! && (total == nil || sent == total!)
            } else if let sized {
                complete = sized.sent == sized.count
            } else {
                complete = true
            }
            if !complete {
                throw UploadError(
                    .sourceFailed, "server answered \(result.status) but only part of the body was sent",
                    status: result.status, bytesSent: sent, totalBytes: total)
            }
        }
        return result
    }

    package static func map(_ error: any Error, bytesSent: Int64, total: Int64?, url: URL, stallTimeout: Duration) -> UploadError {
        let host = url.hostAndPort
        guard let urlError = error as? URLError else {
            return UploadError(.transport, "upload failed: \(error)", bytesSent: bytesSent, totalBytes: total, underlying: error)
        }
        let code: UploadError.Code
        let message: String
        switch urlError.code {
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
            code = .connectionFailed; message = "could not connect to \(host)"
        case .networkConnectionLost:
            code = .connectionReset; message = "connection to \(host) lost"
        case .timedOut:
            // URLSession's idle timeout (`requestTimeout`): the line names it and the stall
            // timeout it comes from, as libcurl's names its window.
            let idle = String(format: "%g", Self.requestTimeout(stallTimeout: stallTimeout))
            let stall = String(format: "%g", min(stallTimeout, UploadOptions.maximumTimeout).inSeconds)
            code = .timedOut
            message = "timed out talking to \(host): nothing sent or received for \(idle) s (the stall timeout of \(stall) s and a margin)"
        case .cancelled:
            code = .cancelled; message = "upload cancelled"
        case .badServerResponse, .zeroByteResource, .cannotParseResponse:
            code = .noResponse; message = "no valid response from \(host)"
        case .secureConnectionFailed, .serverCertificateUntrusted, .serverCertificateHasBadDate,
            .serverCertificateNotYetValid, .serverCertificateHasUnknownRoot, .clientCertificateRejected,
            .clientCertificateRequired:
            code = .tls; message = "TLS failed with \(host): \(urlError.localizedDescription)"
        case .unknown where libcurlReportsTLS(urlError.localizedDescription):
            // FoundationNetworking (Linux) gives libcurl's TLS failures no code of their own: an
            // untrusted server certificate arrives as -1 (.unknown) whose only description is
            // libcurl's error text ("SSL certificate problem: unable to get local issuer
            // certificate"), so for that catch-all code alone the text decides.
            code = .tls; message = "TLS failed with \(host): \(urlError.localizedDescription)"
        default:
            code = .transport; message = "upload to \(host) failed: \(urlError.localizedDescription)"
        }
        return UploadError(code, message, bytesSent: bytesSent, totalBytes: total, underlying: error)
    }

    /// Whether libcurl's error text (as FoundationNetworking passes it on) names a TLS failure.
    package static func libcurlReportsTLS(_ text: String) -> Bool {
        text.hasPrefix("SSL") || text.contains("SSL_") || text.contains("TLS") || text.contains("certificate")
    }

    // MARK: URLSession delegate

    private func makeStream() -> InputStream {
        switch body.storage {
        case .random(let source, let start):
            let fresh = InputStreamSource(
                filler: .random(source, range: start..<source.length), bufferSize: options.bufferSize, queue: nil,
                readerStallTimeout: options.stallTimeout, streams: streams,
                rateLimit: options.rateLimit)
            let old = state.withLock { state -> InputStreamSource? in
                defer { state.source = fresh }
                return state.source
            }
            old?.cancel()
            watch(fresh)
            fresh.start()
            return fresh.inputStream
        case .sequential(let source):
            let fresh = InputStreamSource(
                filler: .sequential(source), bufferSize: options.bufferSize, queue: nil,
                readerStallTimeout: options.stallTimeout, streams: streams,
                rateLimit: options.rateLimit)
            state.withLock { $0.source = fresh }
            watch(fresh)
            fresh.start()
            return fresh.inputStream
        case .stream(let length, let make):
            // Never the caller's stream itself: pumped through the pair on a queue of our own,
            // so its bytes are counted (a short stream cannot end in success) and a read that
            // blocks stalls only that queue; a cancel wakes URLSession's reader at once.
            let queue = DispatchQueue(label: "sluice.stream-body")
            let caller = InputStreamByteSource(make(), length: length)
            let fresh = InputStreamSource(
                filler: .sequential(caller), bufferSize: options.bufferSize, queue: queue,
                readerStallTimeout: options.stallTimeout, streams: streams,
                rateLimit: options.rateLimit)
            fresh.onFinish { _ in queue.async { caller.close() } }
            state.withLock { $0.source = fresh }
            watch(fresh)
            fresh.start()
            return fresh.inputStream
        }
    }

    /// Foundation's pair cannot fail its reader (Apple platforms): a source that fails ends
    /// the task instead, so URLSession never sees the end of a short body.
    private func watch(_ source: InputStreamSource) {
        guard source.streams == .foundation else { return }
        source.onFinish { [state] result in
            guard case .failure = result, let task = state.withLock({ $0.task }) else { return }
            Self.cancel(task)
        }
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void) {
        let handed = state.withLock { state -> Int in
            state.streamsHanded += 1
            return state.streamsHanded
        }
        if handed > 1 && !body.isReplayable {
            // Never hand URLSession nil (an empty body) or a used stream: fail the task instead.
            state.withLock { $0.notReplayable = true }
            let failed = BoundStreamPair(capacity: 1)
            failed.fail(UploadError(.notReplayable, "the body cannot be replayed"))
            completionHandler(failed.inputStream)
            // This runs on URLSession's work queue, inside libcurl's seek callback, and
            // `cancel` waits for that queue: cancelling here would never return.
            Self.cancel(task)
            return
        }
        completionHandler(makeStream())
    }

    package func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // URLSession would re-send an empty body; the transport replays it itself.
        completionHandler(nil)
    }

    package func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard
            challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodHTTPBasic
                || challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodHTTPDigest,
            (challenge.failureResponse as? HTTPURLResponse)?.statusCode == 401 || state.withLock({ $0.response?.statusCode == 401 })
        else {
            completionHandler(.performDefaultHandling, nil)
            return
        }
        // On Linux, `.performDefaultHandling` without a credential never completes the task (a
        // hang). Cancel instead, and report the 401 we already have: the transport answers it
        // with credentials and a fresh body, or returns it.
        state.withLock { $0.challenged = true }
        completionHandler(.cancelAuthenticationChallenge, nil)
    }

    package func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        // FoundationNetworking hands interim answers (100 Continue) to the delegate too.
        guard status >= 200 else {
            completionHandler(.allow)
            return
        }
        let resent = state.withLock { state -> Bool in
            // libcurl may send the request again inside one task (a 417 while the body is sent)
            // and should rewind the body through `needNewBodyStream`; when the connection broke
            // at that moment, FoundationNetworking has been seen to skip the rewind and go on
            // with the rest of the old stream.
            if let earlier = state.response, state.streamsHanded == state.streamsAtResponse {
                state.resentWithoutReplayAfter = earlier.statusCode
            }
            state.streamsAtResponse = state.streamsHanded
            state.response = response as? HTTPURLResponse
            state.answer.begin(at: .now)
            return state.resentWithoutReplayAfter != nil
        }
        if resent {
            completionHandler(.cancel)
            return
        }
        responseBody.begin(status: status)
        completionHandler(.allow)
    }

    /// Runs on the serial delegate queue, as `ResponseBodyReceiver` requires.
    package func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let violation = state.withLock { state -> AnswerPace.Violation? in
            guard state.sinkFailure == nil else { return nil }
            data.withUnsafeBytes { state.answer.receivedBody($0, at: .now) }
            guard let violation = state.answer.check(at: .now) else { return nil }
            state.sinkFailure = UploadError(.timedOut, violation.describe(host: url.hostAndPort))
            return violation
        }
        if violation != nil { Self.cancel(dataTask) }
        guard state.withLock({ $0.sinkFailure == nil }) else { return }
        do {
            try data.withUnsafeBytes { try responseBody.receive($0) }
        } catch {
            let failure = error as? UploadError ?? UploadError(.responseSinkFailed, "\(error)", underlying: error)
            state.withLock { $0.sinkFailure = failure }
            // Off the delegate queue: URLSession's work queue may be waiting for it (BoundedDelegateQueue).
            Self.cancel(dataTask)
        }
    }

    package func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64,
        totalBytesSent: Int64, totalBytesExpectedToSend: Int64
    ) {
        let sent = state.withLock { state -> Int64 in
            if let source = state.source { return source.bytesRead }
            if state.sized != nil { state.sized!.sent = totalBytesSent }
            if totalBytesExpectedToSend > 0, totalBytesSent >= totalBytesExpectedToSend { state.answer.begin(at: .now) }
            return totalBytesSent
        }
        progress(sent)
    }

    package func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let (continuation, source) = state.withLock { state in
            if state.response == nil { state.response = task.response as? HTTPURLResponse }
            state.error = error
            state.completed = true
            defer { state.continuation = nil }
            return (state.continuation, state.source)
        }
        if error != nil { source?.cancel() }
        continuation?.resume()
    }
}

/// URLSession's serial delegate queue; when the response body is streamed, at most
/// `limit` callbacks wait in it.
///
/// URLSession on Linux hands each piece of a response body to the delegate queue without
/// waiting, so a sink slower than the network (a slow stdout) would queue the whole body in
/// memory. Here the session's work queue waits in `addOperation` until a callback finishes:
/// memory stays at about `limit` pieces (libcurl hands at most 16 KiB each by default).
///
/// - Important: While it waits, URLSession's work queue (on Linux shared with every session of
///   the process) waits too: a slow sink slows every URLSession task. No callback on this
///   queue may wait for URLSession (cancel from another queue).
private final class BoundedDelegateQueue: OperationQueue, @unchecked Sendable {
    // @unchecked: OperationQueue is thread-safe; `slots` is a semaphore.
    private let slots: DispatchSemaphore?

    package init(streaming: Bool, limit: Int = 32) {
        slots = streaming ? DispatchSemaphore(value: limit) : nil
        super.init()
        maxConcurrentOperationCount = 1
    }

    package override func addOperation(_ block: @escaping @Sendable () -> Void) {
        guard let slots else {
            super.addOperation(block)
            return
        }
        slots.wait()
        super.addOperation {
            block()
            slots.signal()
        }
    }
}
