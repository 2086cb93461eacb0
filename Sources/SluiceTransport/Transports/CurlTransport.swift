import SluiceRequests

/// Sends uploads with the system's libcurl (`libcurl.so.4`): Sluice's default on Linux.
///
/// - `Content-Length` whenever the body's length is known; `Transfer-Encoding: chunked` only
///   when it is not, or when `options.forceChunked` asks; never both.
/// - Random-access bodies are read straight into libcurl's upload buffer at the tracked
///   offset; stdin and pipes are read the same way when they have bytes, and the transfer
///   pauses while they have none; other sequential and stream bodies are read by a producer
///   thread into a ring of `options.bufferSize` bytes, and the transfer pauses (no blocked
///   thread) while it is empty. A signed aws-chunked body pauses the transfer while its next
///   chunk is being hashed.
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

/// The libcurl result code behind an `UploadError` (its `underlying` error), so callers can
/// classify a failure by code rather than by its text.
public struct CurlError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The `CURLcode`.
    public let code: Int32

    /// The error for libcurl's `CURLcode` `code`.
    public init(code: Int32) { self.code = code }

    /// Codes a new attempt can cure: the connection or the network, not the request or the
    /// local setup. COULDNT_RESOLVE_PROXY 5, COULDNT_RESOLVE_HOST 6, COULDNT_CONNECT 7,
    /// HTTP2 16, PARTIAL_FILE 18, OPERATION_TIMEDOUT 28, GOT_NOTHING 52, SEND_ERROR 55,
    /// RECV_ERROR 56, HTTP2_STREAM 92.
    public static let transientCodes: Set<Int32> = [5, 6, 7, 16, 18, 28, 52, 55, 56, 92]

    /// TLS codes: SSL_CONNECT_ERROR 35, the SSL engine 53/54/66, certificate and cipher
    /// problems 58/59/60/77/80/82/83/90/91/98.
    public static let tlsCodes: Set<Int32> = [35, 53, 54, 58, 59, 60, 66, 77, 80, 82, 83, 90, 91, 98]

    /// Whether `code` is one of `transientCodes`: a failure worth another attempt.
    public var isTransient: Bool { Self.transientCodes.contains(code) }
    /// Whether `code` is one of `tlsCodes`: a handshake, certificate or cipher failure.
    public var isTLS: Bool { Self.tlsCodes.contains(code) }
    public var description: String { "CURLcode \(code)" }
}
