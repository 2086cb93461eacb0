import SluiceRequests

/// Sends one request with its body and returns the answer.
///
/// A transport follows redirects and answers auth challenges itself when it can replay
/// the body; it reports progress through `progress`, throttled by the caller.
public protocol UploadTransport: Sendable {
    /// Sends `request` with `body`.
    ///
    /// - Parameters:
    ///   - request: URL, method, headers.
    ///   - body: The body; replayed from byte 0 for 307/308 and 401 when replayable.
    ///   - options: Framing, buffers, credentials, timeouts.
    ///   - progress: Called with body bytes sent so far in the current attempt; may be called often.
    /// - Returns: The final response, whatever its status.
    /// - Throws: `UploadError` for every failure other than an HTTP status; `.cancelled`
    ///   promptly when the calling task is cancelled; `.invalidHeader` before any byte is
    ///   sent when `request.validate()` fails.
    func send(
        _ request: UploadRequest, body: UploadBody, options: UploadOptions,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> UploadResponse

    /// The longest body this transport sends with `Content-Length`; nil when any length goes
    /// with one. Protocols whose servers need a length (tus) cut their requests to it.
    var maximumSizedBody: Int64? { get }
}

extension UploadTransport {
    public var maximumSizedBody: Int64? { nil }
}

/// The transports Sluice ships.
public enum TransportKind: String, Sendable, CaseIterable {
    /// libcurl, through the transfer engine (the default on Linux).
    case curl
    /// Foundation's URLSession, the seed's technique (Sluice's bound stream pair on Linux).
    case urlsession

    /// A transport of this kind (the curl one on the shared engine).
    public func makeTransport() -> any UploadTransport {
        switch self {
        case .curl: return CurlTransport()
        case .urlsession: return URLSessionTransport()
        }
    }

    /// curl on Linux; URLSession elsewhere.
    public static var platformDefault: TransportKind {
        #if os(Linux)
        return .curl
        #else
        return .urlsession
        #endif
    }
}
