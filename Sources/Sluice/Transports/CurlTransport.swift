/// Sends uploads with the system's libcurl (`libcurl.so.4`): Sluice's default on Linux.
///
/// - `Content-Length` whenever the body's length is known; `Transfer-Encoding: chunked` only
///   when it is not, or when `options.forceChunked` asks; never both.
/// - Random-access bodies are read straight into libcurl's upload buffer at the tracked
///   offset; sequential and stream bodies are read by a producer thread into a ring of
///   `options.bufferSize` bytes, and the transfer pauses (no blocked thread) while it is empty.
/// - Redirects 301, 302, 307 and 308 are followed with the same method and the body
///   replayed from byte 0; 303 is returned as it is. A 401 with `options.credentials` is
///   answered by libcurl with the body replayed. A body that cannot be replayed fails with
///   `.notReplayable` rather than send something else.
/// - `Expect: 100-continue` is kept (see `CurlTransfer.expectContinueTimeoutMilliseconds`),
///   so an early 401, 413 or 307 stops the body before it is sent; a non-2xx answer during
///   the body stops sending at once.
///
/// - Important: Requests run on a `TransferEngine` (the process's shared one unless given):
///   a few loop threads that serve every request and keep connections open between them.
///   Cancelling the calling task stops the request within one loop turn and throws
///   `.cancelled`, without waiting for a producer blocked in a read.
public struct CurlTransport: UploadTransport {
    #if canImport(CCurl)
    /// The engine that runs the requests.
    public let engine: TransferEngine

    /// Sends on the process's shared engine.
    public init() { engine = .shared }

    /// Sends on `engine`.
    public init(engine: TransferEngine) { self.engine = engine }
    #else
    public init() {}
    #endif

    public func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse {
        #if canImport(CCurl)
        return try await engine.send(request, body: body, options: options, progress: progress)
        #else
        throw UploadError(.transport, "the curl transport needs libcurl (Linux only)")
        #endif
    }
}
