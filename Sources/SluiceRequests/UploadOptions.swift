import SluicePrimitives

/// How an upload behaves: framing, buffers, credentials, redirects, timeouts.
public struct UploadOptions: Sendable {
    /// Send `Transfer-Encoding: chunked` even when the length is known.
    public var forceChunked = false
    /// A cap on body bytes per second, shared by every request given the same instance (all
    /// the parts of an upload, every upload of a job); nil for none. The libcurl transport
    /// pauses a request over the cap and resumes it when the bucket refills; the URLSession
    /// transport's pump waits before it writes.
    public var rateLimit: RateLimit?
    /// Bytes in flight between the source and the connection; the upload's memory bound.
    public var bufferSize = 1 << 20
    /// Used to answer a 401 challenge; the body is replayed with them.
    public var credentials: Credentials?
    /// Follow 301/302/303/307/308 up to this many times (307/308 replay the body).
    public var maximumRedirects = 10
    /// Keep sending credentials after a redirect to another origin (scheme, host or port).
    ///
    /// Off by default: the caller's `Authorization`, `Cookie` and `Proxy-Authorization`
    /// headers and `credentials` go only to the origin of the request's URL, as libcurl does
    /// since 7.83. Turn it on only when every host in the redirect chain is trusted.
    public var keepsCredentialsAcrossOrigins = false
    /// What happens to response bodies: kept up to a limit (the default, 16 MiB) or streamed
    /// to a sink as they arrive.
    public var responseBody = ResponseBodyHandling.collect(limit: ResponseBodyHandling.defaultLimit)
    /// Fail when no byte moves for this long; more than zero, at most `maximumTimeout`.
    public var stallTimeout: Duration = .seconds(60)
    /// Fail when a connection takes longer than this; more than zero, at most `maximumTimeout`.
    public var connectTimeout: Duration = .seconds(30)
    /// PEM file with extra trusted CAs for https.
    public var caFile: String?
    /// Skip TLS verification (tests against self-signed servers only).
    public var insecure = false
    /// Minimum time between progress reports; zero reports every change.
    public var progressInterval: Duration = .milliseconds(100)
    /// The request is one of a set whose concurrency its sender bounds itself (the parts of a
    /// parallel upload: `ParallelUpload.concurrency`, `S3Options.concurrency`): the engine's
    /// per-origin limit does not hold it back, so what the caller asked for is what runs, and
    /// a request signed just before it is sent does not age in a queue.
    package var concurrencyBoundByCaller = false
    /// Send a random-access body with `Content-Length` even where the transport can do so only
    /// by holding it in memory (URLSession on Linux, up to `maximumSizedBody`): for servers that
    /// need a length (tus). Off, such a transport streams the body, chunked.
    package var prefersContentLength = false
    /// The libcurl transport lets libcurl send `Expect: 100-continue` and wait for the answer
    /// before the body (see `CurlTransfer.expectContinueTimeoutMilliseconds`). Off, the body
    /// follows the headers at once: a round trip and two wake-ups less per request, and a
    /// refusal comes after the body instead of before it (S3 turns it off for small bodies).
    package var expectsContinue = true
    /// The server may keep its answer alive with whitespace before its document for up to this
    /// long (S3's `CompleteMultipartUpload`): `AnswerPace` judges no pace until the document
    /// begins, and the libcurl transport's own stall check gives way to `AnswerPace.checkSilence`.
    package var answerKeepAlive: Duration?

    /// Options with every property at its default (given with each property).
    public init() {}

    /// A user name and password, sent as HTTP Basic when the server asks (401).
    public struct Credentials: Sendable, Equatable {
        /// The user name.
        public var user: String
        /// The password.
        public var password: String

        /// Credentials for `user` with `password`.
        public init(user: String, password: String) {
            self.user = user
            self.password = password
            // A server's error page may echo it: hidden in every line from now on.
            Redaction.register(password)
        }
    }
}

extension UploadOptions {
    /// The longest timeout accepted: 365 days.
    public static let maximumTimeout: Duration = .seconds(365 * 86_400)

    /// Checks every option's range.
    ///
    /// - Throws: `UploadError.invalidOption` naming the option and its range.
    public func validate() throws(UploadError) {
        guard bufferSize >= 1024, bufferSize <= 512 << 20 else {
            throw UploadError(.invalidOption, "buffer size \(bufferSize) is outside 1024 ... \(512 << 20) bytes")
        }
        guard maximumRedirects >= 0 else { throw UploadError(.invalidOption, "maximum redirects must not be negative") }
        for (name, timeout) in [("stall timeout", stallTimeout), ("connect timeout", connectTimeout)] {
            guard timeout > .zero, timeout <= Self.maximumTimeout else {
                throw UploadError(.invalidOption, "\(name) \(timeout) is outside 0 < timeout <= \(Self.maximumTimeout) (365 days)")
            }
        }
        guard progressInterval >= .zero, progressInterval <= Self.maximumTimeout else {
            throw UploadError(.invalidOption, "progress interval \(progressInterval) is outside 0 ... \(Self.maximumTimeout) (365 days)")
        }
        switch responseBody {
        case .collect(let limit), .collectOrFail(let limit):
            guard limit >= 0 else { throw UploadError(.invalidOption, "response body limit \(limit) must not be negative") }
        case .stream:
            break
        }
    }
}
