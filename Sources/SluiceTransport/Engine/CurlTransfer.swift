#if canImport(CCurl)
import CCurl
import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests

/// One request on the transfer engine: an easy handle driven by a `CurlLoop`.
///
/// The loop configures the handle (`begin`), runs it with every other transfer on its multi
/// handle, and calls `attemptEnded` when libcurl is done with an attempt: the transfer then
/// follows a redirect itself (replaying the body from byte 0, or refusing to) or ends. The
/// caller's continuation is resumed exactly once, in `complete`.
///
/// - Important: `cancel()` and the producer's wake may come from any thread; they poke the
///   loop through `curl_multi_wakeup`, and the transfer ends with `UploadError.cancelled`
///   within one loop turn. Memory: `options.bufferSize` for producer bodies, plus curl's
///   upload buffer and the response body as `options.responseBody` keeps it.
package final class CurlTransfer: @unchecked Sendable {
    // @unchecked: everything but `control` is touched only on the loop's thread (setup,
    // libcurl's callbacks, teardown) or before the transfer reaches a loop; `control` is
    // behind a pthread lock.

    /// Where the read callback takes the body from.
    package enum Reader {
        case none
        case random(any ByteSource, start: Int64, length: Int64)
        case pipe(CurlBodyPipe)
        /// A descriptor (stdin, a pipe) read straight into curl's buffer when it has bytes;
        /// while it has none the transfer is paused and the loop polls the descriptor.
        case descriptor(FileDescriptorStream)
    }

    private struct Control {
        package var cancelled = false
        package var loop: CurlLoop?
        package var continuation: CheckedContinuation<UploadResponse, any Error>?
        package var completed = false
    }

    package let engine: TransferEngine
    package let request: UploadRequest
    package let body: UploadBody
    package let options: UploadOptions
    package let progress: @Sendable (Int64) -> Void
    package let origin: String

    private let control = Lock(Control())

    /// What only the transfer's loop touches: the handle, the body's reader and where it is,
    /// the current attempt's answer so far. Reached through `onLoop` alone.
    package struct LoopState {
        package var easy: CurlEasy?
        package var multi: OpaquePointer?
        package var headerList: OpaquePointer?
        package var reader: Reader = .none
        /// Body bytes handed to curl in the current attempt.
        package var position: Int64 = 0
        /// The read callback paused the transfer because the producer had nothing yet.
        package var paused = false
        /// When a transfer paused by `UploadOptions.rateLimit` may send again.
        package var rateResume: ContinuousClock.Instant?
        /// Paused on a descriptor that had no bytes: the loop polls it.
        package var pausedDescriptor: Int32?
        /// The descriptor body reached its end.
        package var descriptorEnded = false
        /// Why a callback aborted the transfer.
        package var failure: UploadError?
        package var responseHeaders: [HTTPHeader] = []
        /// The body goes chunked (set once by `configure`).
        package var chunked = false
        package var lastReported: Int64 = -1
        /// The URL of the current attempt.
        package var url: URL {
            didSet { urlOrigin = url.origin }
        }
        /// `url.origin`, worked out when the URL changes (a redirect), not at every request's end.
        package var urlOrigin: String
        package var redirects = 0
        /// A small body in memory (`CurlTransfer.inlineBodyLimit`), handed to libcurl as
        /// POSTFIELDS: held here, so its bytes stay where libcurl reads them, until the handle goes.
        package var inlineBody: PinnedByteSource?
        /// Connections opened over all attempts (CURLINFO_NUM_CONNECTS).
        package var connectionsOpened = 0
        /// The current attempt's answer under `AnswerPace` (checked by the progress callback).
        package var answer: AnswerPace
    }

    private var loopState: LoopState
    package let errorBuffer: UnsafeMutablePointer<CChar>
    package let responseBody: ResponseBodyReceiver

    /// The loop-confined state: on the transfer's loop thread only (or before it reached a loop),
    /// checked in debug builds.
    package var onLoop: LoopState {
        _read {
            assert(isOnItsLoop, "CurlTransfer's loop state touched off its loop")
            yield loopState
        }
        _modify {
            assert(isOnItsLoop, "CurlTransfer's loop state touched off its loop")
            yield &loopState
        }
    }

    private var isOnItsLoop: Bool { control.withLock { $0.loop?.isCurrentThread ?? true } }

    package init(
        engine: TransferEngine, request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) {
        self.engine = engine
        self.request = request
        self.body = body
        self.options = options
        self.progress = progress
        origin = request.url.origin
        loopState = LoopState(url: request.url, urlOrigin: origin, answer: AnswerPace(stallTimeout: options.stallTimeout, keepAlive: options.answerKeepAlive))
        responseBody = ResponseBodyReceiver(options.responseBody)
        errorBuffer = .allocate(capacity: Int(SLUICE_CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(SLUICE_CURL_ERROR_SIZE))
    }

    deinit {
        errorBuffer.deallocate()
    }

    package var easyHandle: OpaquePointer? { onLoop.easy?.handle }

    // MARK: Any thread

    /// Keeps the continuation and hands the transfer to the engine.
    package func submit(_ continuation: CheckedContinuation<UploadResponse, any Error>) {
        control.withLock { $0.continuation = continuation }
        engine.enqueue(self)
    }

    /// Called by the engine, under its lock, when the transfer gets a loop.
    package func assign(_ loop: CurlLoop) {
        control.withLock { $0.loop = loop }
    }

    /// Stops the transfer from any thread; returns at once.
    package func cancel() {
        let loop = control.withLock { control -> CurlLoop? in
            control.cancelled = true
            return control.loop
        }
        if let loop {
            loop.poke(self)
        } else if engine.dequeue(self) {
            complete(.failure(cancelledError()))
        } else if let loop = control.withLock({ $0.loop }) {
            // It got a loop between the two looks.
            loop.poke(self)
        }
    }

    /// Wakes the loop (the producer has bytes after a pause).
    package func wakeUp() {
        if let loop = control.withLock({ $0.loop }) { loop.poke(self) }
    }

    package var isCancelled: Bool { control.withLock { $0.cancelled } }

    /// Resumes the caller once and gives the slot back to the engine; `keptConnection` and
    /// `connectionsOpened` are the loop's figures (none before the transfer reached it).
    package func complete(_ result: Result<UploadResponse, any Error>, keptConnection: String? = nil, connectionsOpened: Int = 0) {
        let (continuation, loop) = control.withLock { control -> (CheckedContinuation<UploadResponse, any Error>?, CurlLoop?) in
            guard !control.completed else { return (nil, nil) }
            control.completed = true
            defer { control.continuation = nil }
            return (control.continuation, control.loop)
        }
        guard let continuation else { return }
        if let loop { engine.finished(self, on: loop, keptConnection: keptConnection, connectionsOpened: connectionsOpened) }
        continuation.resume(with: result)
    }

    // MARK: The loop's thread

    /// Configures the handle and adds it to `multi`; a result when the transfer ends at once.
    package func begin(on multi: OpaquePointer) -> Result<UploadResponse, any Error>? {
        assert(control.withLock { $0.loop?.isCurrentThread ?? true }, "a transfer begins on its loop's thread")
        onLoop.multi = multi
        if isCancelled { return .failure(cancelledError()) }
        do {
            try configure()
            guard let easy = onLoop.easy else { throw UploadError(.transport, "libcurl handle missing") }
            let added = curl_multi_add_handle(multi, easy.handle)
            guard added == 0 else { throw UploadError(.transport, "curl_multi_add_handle failed (CURLMcode \(added))") }
            return nil
        } catch {
            return .failure(error)
        }
    }

    /// The loop looked again: a cancellation ends the transfer; a producer with bytes, or a
    /// read-ahead with the next chunk, unpauses it.
    package func poked() -> Result<UploadResponse, any Error>? {
        if isCancelled { return .failure(cancelledError()) }
        guard onLoop.paused, let easy = onLoop.easy else { return nil }
        switch onLoop.reader {
        case .pipe(let pipe) where !pipe.isReadable: return nil
        case .pipe, .random:
            onLoop.paused = false
            _ = curl_easy_pause(easy.handle, SLUICE_CURLPAUSE_CONT)
        case .none, .descriptor: break
        }
        return nil
    }

    /// The rate limit's wait is over: unpause (the read callback asks the limit again).
    package func rateLimitWaitEnded() {
        guard let easy = onLoop.easy, onLoop.rateResume != nil else { return }
        onLoop.rateResume = nil
        onLoop.paused = false
        _ = curl_easy_pause(easy.handle, SLUICE_CURLPAUSE_CONT)
    }

    /// The loop saw the paused descriptor readable (bytes, its end or an error): unpause.
    package func descriptorReady() {
        guard let easy = onLoop.easy, onLoop.pausedDescriptor != nil else { return }
        onLoop.pausedDescriptor = nil
        onLoop.paused = false
        _ = curl_easy_pause(easy.handle, SLUICE_CURLPAUSE_CONT)
    }

    /// libcurl finished an attempt with `code`: follows a 301/302/307/308 with the body from
    /// byte 0 (returns nil, the handle is on the multi again) or returns the final result.
    package func attemptEnded(_ code: Int32) -> Result<UploadResponse, any Error>? {
        do {
            guard let response = try finishAttempt(code) else { return nil }
            return .success(response)
        } catch {
            return .failure(error)
        }
    }

    private func finishAttempt(_ code: Int32) throws -> UploadResponse? {
        guard let easy = onLoop.easy else { throw UploadError(.transport, "libcurl handle missing") }
        onLoop.connectionsOpened += easy.long(SLUICE_CURLINFO_NUM_CONNECTS)
        let sent = bytesSent
        guard code == SLUICE_CURLE_OK else { throw error(for: code, bytesSent: sent) }
        let status = easy.long(SLUICE_CURLINFO_RESPONSE_CODE)
        if [301, 302, 307, 308].contains(status),
            let location = easy.string(SLUICE_CURLINFO_REDIRECT_URL),
            let next = URL(string: location), next.isHTTPWithHost
        {
            guard onLoop.redirects < options.maximumRedirects else {
                var error = UploadError(
                    .tooManyRedirects, "more than \(options.maximumRedirects) redirects, the last to \(location)",
                    status: status, bytesSent: sent, totalBytes: body.length.value)
                error.redirectLocation = location
                throw error
            }
            onLoop.redirects += 1
            try redirect(to: next, status: status)
            return nil
        }
        try verifyWholeBodySent(status: status, bytesSent: sent)
        let received = try responseBody.finish()
        return UploadResponse(
            status: status, headers: onLoop.responseHeaders, body: received.body, bytesSent: sent,
            url: easy.string(SLUICE_CURLINFO_EFFECTIVE_URL).flatMap(URL.init(string:)) ?? onLoop.url,
            bodyByteCount: received.byteCount, isBodyTruncated: received.isTruncated)
    }

    /// Prepares the next attempt at `next`, replaying the body from byte 0.
    ///
    /// - Throws: `.notReplayable` when body bytes were already consumed and cannot be read again.
    private func redirect(to next: URL, status: Int) throws {
        guard let easy = onLoop.easy, let multi = onLoop.multi else { return }
        _ = curl_multi_remove_handle(multi, easy.handle)
        if onLoop.position > 0 {
            guard case .random = onLoop.reader else {
                throw UploadError(
                    .notReplayable,
                    "server answered \(status) to \(next.absoluteString) after \(onLoop.position) body bytes and the body cannot be replayed",
                    status: status, bytesSent: bytesSent, totalBytes: body.length.value)
            }
        }
        // Credentials (headers and the answer to a challenge) only where the policy allows.
        let credentials = request.sendsCredentials(to: next, options: options) ? options.credentials : nil
        try easy.set(SLUICE_CURLOPT_USERNAME, string: credentials?.user)
        try easy.set(SLUICE_CURLOPT_PASSWORD, string: credentials?.password)
        // An inline body is libcurl's to send again, whole.
        onLoop.position = onLoop.inlineBody?.length ?? 0
        onLoop.paused = false
        onLoop.pausedDescriptor = nil
        onLoop.lastReported = -1
        onLoop.responseHeaders = []
        onLoop.answer = AnswerPace(stallTimeout: options.stallTimeout, keepAlive: options.answerKeepAlive)
        onLoop.url = next
        try setHeaders(easy, chunked: onLoop.chunked)
        try easy.set(SLUICE_CURLOPT_URL, string: next.absoluteString)
        let added = curl_multi_add_handle(multi, easy.handle)
        guard added == 0 else { throw UploadError(.transport, "curl_multi_add_handle failed (CURLMcode \(added))") }
    }

    /// A 2xx after a short body is never returned.
    private func verifyWholeBodySent(status: Int, bytesSent: Int64) throws {
        guard (200..<300).contains(status) else { return }
        let complete: Bool
        switch onLoop.reader {
        case .none: complete = true
        case .random(_, _, let length): complete = bytesSent == length && onLoop.position == length
        case .pipe(let pipe): complete = pipe.isComplete(pulled: onLoop.position) && bytesSent == onLoop.position
        case .descriptor(let stream):
            // A known length is complete at its last byte (libcurl asks for no more).
            complete = (stream.length.value.map { onLoop.position == $0 } ?? onLoop.descriptorEnded) && bytesSent == onLoop.position
        }
        guard complete else {
            throw UploadError(
                .protocolViolation,
                "server answered \(status) before the whole body was sent",
                status: status, bytesSent: bytesSent, totalBytes: body.length.value)
        }
    }

    /// Body bytes sent in the current attempt: what curl wrote, never more than it was given.
    package var bytesSent: Int64 {
        guard let easy = onLoop.easy else { return 0 }
        if case .none = onLoop.reader { return 0 }
        return min(easy.offset(SLUICE_CURLINFO_SIZE_UPLOAD_T), onLoop.position)
    }

    package func cancelledError() -> UploadError {
        UploadError(.cancelled, "the upload was cancelled", bytesSent: bytesSent, totalBytes: body.length.value)
    }

    /// Ends the transfer with `result`, on the loop's thread: releases libcurl's resources,
    /// then resumes the caller once the body's read-ahead (if any) has stopped, so that no read
    /// of the body outlives its request. The loop does not wait for it.
    package func finish(_ result: Result<UploadResponse, any Error>) {
        var ahead: (any ReadAheadByteSource)?
        if case .random(let source, _, _) = onLoop.reader { ahead = source as? any ReadAheadByteSource }
        let kept: String? = if case .success = result { onLoop.urlOrigin } else { nil }
        let opened = onLoop.connectionsOpened
        teardown()
        guard let ahead else { return complete(result, keptConnection: kept, connectionsOpened: opened) }
        ahead.endReading { self.complete(result, keptConnection: kept, connectionsOpened: opened) }
    }

    /// Releases every libcurl resource; called once, on the loop's thread.
    private func teardown() {
        if let multi = onLoop.multi, let easy = onLoop.easy { _ = curl_multi_remove_handle(multi, easy.handle) }
        onLoop.easy?.cleanup()
        if let headerList = onLoop.headerList { curl_slist_free_all(headerList) }
        if case .pipe(let pipe) = onLoop.reader { pipe.cancel() }
        onLoop.easy = nil
        onLoop.multi = nil
        onLoop.headerList = nil
        onLoop.inlineBody = nil
    }
}
#endif
