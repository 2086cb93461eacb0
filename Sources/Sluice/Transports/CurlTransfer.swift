#if canImport(CCurl)
import CCurl
import Foundation

/// One upload over libcurl's multi interface, run on a thread of its own.
///
/// The thread configures an easy handle, drives it with `curl_multi_perform` and
/// `curl_multi_poll`, follows redirects itself (so it can replay the body from byte 0 or
/// refuse to), tears everything down and resumes the caller's continuation exactly once.
///
/// - Important: `cancel()` may be called from any thread; it wakes the loop at once through
///   `curl_multi_wakeup`, and the transfer ends with `UploadError.cancelled` within one loop
///   turn (well under 100 ms). Memory: `options.bufferSize` for producer bodies, plus curl's
///   upload buffer and the response body as `options.responseBody` keeps it.
final class CurlTransfer: @unchecked Sendable {
    // @unchecked: everything but `control` is touched only on the transfer's own thread
    // (setup, libcurl's callbacks, teardown); `control` is behind a pthread lock (ConditionLock,
    // which ThreadSanitizer can see, unlike Synchronization.Mutex on Linux).

    /// Where the read callback takes the body from.
    enum Reader {
        case none
        case random(any ByteSource, start: Int64, length: Int64)
        case pipe(CurlBodyPipe)
    }

    private struct Control {
        var cancelled = false
        /// The multi handle while it may be woken; nil once teardown begins.
        var multi: WakeHandle?
    }

    /// A multi handle that other threads may only wake.
    private struct WakeHandle: @unchecked Sendable {
        // @unchecked: the only call made through it is curl_multi_wakeup, which libcurl
        // allows from any thread, and only while `control` says the handle is alive.
        let multi: OpaquePointer
    }

    let request: UploadRequest
    let body: UploadBody
    let options: UploadOptions
    let progress: @Sendable (Int64) -> Void

    private let control = ConditionLock(Control())

    // Owned by the transfer's thread.
    var easy: CurlEasy?
    var multi: OpaquePointer?
    var headerList: OpaquePointer?
    let errorBuffer: UnsafeMutablePointer<CChar>
    var reader: Reader = .none
    /// Body bytes handed to curl in the current attempt.
    var position: Int64 = 0
    /// The read callback paused the transfer because the producer had nothing yet.
    var paused = false
    /// Why a callback aborted the transfer.
    var failure: UploadError?
    var responseHeaders: [HTTPHeader] = []
    let responseBody: ResponseBodyReceiver
    /// The body goes chunked (set once by `configure`).
    var chunked = false
    var lastReported: Int64 = -1
    /// The URL of the current attempt.
    var url: URL

    init(request: UploadRequest, body: UploadBody, options: UploadOptions, progress: @escaping @Sendable (Int64) -> Void) {
        self.request = request
        self.body = body
        self.options = options
        self.progress = progress
        self.url = request.url
        responseBody = ResponseBodyReceiver(options.responseBody)
        errorBuffer = .allocate(capacity: Int(SLUICE_CURL_ERROR_SIZE))
        errorBuffer.initialize(repeating: 0, count: Int(SLUICE_CURL_ERROR_SIZE))
    }

    /// Runs the transfer on a new thread and resumes `continuation` once, when it ends.
    func start(_ continuation: CheckedContinuation<UploadResponse, any Error>) {
        let thread = Thread { [self] in
            let result = Result { () throws -> UploadResponse in
                try configure()
                return try perform()
            }
            teardown()
            continuation.resume(with: result)
        }
        thread.name = "sluice-curl"
        thread.start()
    }

    /// Stops the transfer from any thread; returns at once.
    func cancel() {
        control.withLock { control in
            control.cancelled = true
            if let handle = control.multi { _ = curl_multi_wakeup(handle.multi) }
        }
    }

    /// Wakes the loop (the producer has bytes after a pause).
    func wakeUp() {
        control.withLock { control in
            if let handle = control.multi { _ = curl_multi_wakeup(handle.multi) }
        }
    }

    var isCancelled: Bool { control.withLock { $0.cancelled } }

    func publish(multi: OpaquePointer) {
        self.multi = multi
        let handle = WakeHandle(multi: multi)
        control.withLock { $0.multi = handle }
    }

    // MARK: The loop

    /// Runs attempts until a final response: follows 301/302/307/308 with the body from byte 0.
    private func perform() throws -> UploadResponse {
        guard let easy else { throw UploadError(.transport, "libcurl handle missing") }
        var redirects = 0
        while true {
            let code = try runAttempt(easy)
            let sent = bytesSent
            guard code == SLUICE_CURLE_OK else { throw error(for: code, bytesSent: sent) }
            let status = easy.long(SLUICE_CURLINFO_RESPONSE_CODE)
            if [301, 302, 307, 308].contains(status),
               let location = easy.string(SLUICE_CURLINFO_REDIRECT_URL),
               let next = URL(string: location),
               let scheme = next.scheme?.lowercased(), scheme == "http" || scheme == "https" {
                guard redirects < options.maximumRedirects else {
                    throw UploadError(
                        .tooManyRedirects, "more than \(options.maximumRedirects) redirects, the last to \(location)",
                        status: status, bytesSent: sent, totalBytes: body.length.value)
                }
                redirects += 1
                try redirect(to: next, status: status)
                continue
            }
            try verifyWholeBodySent(status: status, bytesSent: sent)
            let received = try responseBody.finish()
            return UploadResponse(
                status: status, headers: responseHeaders, body: received.body, bytesSent: sent,
                url: easy.string(SLUICE_CURLINFO_EFFECTIVE_URL).flatMap(URL.init(string:)) ?? url,
                bodyByteCount: received.byteCount, isBodyTruncated: received.isTruncated)
        }
    }

    /// Drives the multi handle until the current attempt ends; returns its CURLcode.
    private func runAttempt(_ easy: CurlEasy) throws -> Int32 {
        guard let multi else { throw UploadError(.transport, "libcurl multi handle missing") }
        var running: Int32 = 0
        while true {
            if isCancelled { throw cancelledError() }
            if paused, case .pipe(let pipe) = reader, pipe.isReadable {
                paused = false
                _ = curl_easy_pause(easy.handle, SLUICE_CURLPAUSE_CONT)
            }
            let status = curl_multi_perform(multi, &running)
            guard status == 0 else {
                throw UploadError(.transport, "curl_multi_perform failed (CURLMcode \(status))",
                                  bytesSent: bytesSent, totalBytes: body.length.value)
            }
            var result: Int32 = 0
            if sluice_curl_multi_done(multi, easy.handle, &result) == 1 { return result }
            _ = curl_multi_poll(multi, nil, 0, 100, nil)
        }
    }

    /// Prepares the next attempt at `next`, replaying the body from byte 0.
    ///
    /// - Throws: `.notReplayable` when body bytes were already consumed and cannot be read again.
    private func redirect(to next: URL, status: Int) throws {
        guard let easy, let multi else { return }
        _ = curl_multi_remove_handle(multi, easy.handle)
        if position > 0 {
            guard case .random = reader else {
                throw UploadError(
                    .notReplayable,
                    "server answered \(status) to \(next.absoluteString) after \(position) body bytes and the body cannot be replayed",
                    status: status, bytesSent: bytesSent, totalBytes: body.length.value)
            }
        }
        // Credentials (headers and the answer to a challenge) only where the policy allows.
        let credentials = request.sendsCredentials(to: next, options: options) ? options.credentials : nil
        try easy.set(SLUICE_CURLOPT_USERNAME, string: credentials?.user)
        try easy.set(SLUICE_CURLOPT_PASSWORD, string: credentials?.password)
        position = 0
        paused = false
        lastReported = -1
        responseHeaders = []
        url = next
        try setHeaders(easy, chunked: chunked)
        try easy.set(SLUICE_CURLOPT_URL, string: next.absoluteString)
        _ = curl_multi_add_handle(multi, easy.handle)
    }

    /// A 2xx after a short body is never returned.
    private func verifyWholeBodySent(status: Int, bytesSent: Int64) throws {
        guard (200..<300).contains(status) else { return }
        let complete: Bool
        switch reader {
        case .none: complete = true
        case .random(_, _, let length): complete = bytesSent == length && position == length
        case .pipe(let pipe): complete = pipe.isDrained && bytesSent == position
        }
        guard complete else {
            throw UploadError(
                .protocolViolation,
                "server answered \(status) before the whole body was sent",
                status: status, bytesSent: bytesSent, totalBytes: body.length.value)
        }
    }

    /// Body bytes sent in the current attempt: what curl wrote, never more than it was given.
    var bytesSent: Int64 {
        guard let easy else { return 0 }
        if case .none = reader { return 0 }
        return min(easy.offset(SLUICE_CURLINFO_SIZE_UPLOAD_T), position)
    }

    func cancelledError() -> UploadError {
        UploadError(.cancelled, "the upload was cancelled", bytesSent: bytesSent, totalBytes: body.length.value)
    }

    /// Releases every libcurl resource; called once, on the transfer's thread.
    private func teardown() {
        control.withLock { $0.multi = nil }
        if let multi, let easy { _ = curl_multi_remove_handle(multi, easy.handle) }
        easy?.cleanup()
        if let multi { _ = curl_multi_cleanup(multi) }
        if let headerList { curl_slist_free_all(headerList) }
        if case .pipe(let pipe) = reader { pipe.cancel() }
        easy = nil
        multi = nil
        headerList = nil
        errorBuffer.deallocate()
    }
}
#endif
