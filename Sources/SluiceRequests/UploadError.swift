import SluicePrimitives
import SluiceByteSources

/// Why an upload did not end in a complete body and a 2xx answer.
///
/// Switch on `code`; read the numbers that matter from the other properties.
public struct UploadError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure an `UploadError` is: compare it with the static values.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidURL, invalidHeader, invalidOption
            case connectionFailed, connectionReset, noResponse, timedOut
            case httpStatus, sourceFailed, notReplayable, cancelled
            case tooManyRedirects, tls, transport, protocolViolation, responseSinkFailed, responseTooLarge
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The URL is not an http(s) URL with a host.
        public static let invalidURL = Code(.invalidURL)
        /// A header name or value would break the request (CR, LF, bad token).
        public static let invalidHeader = Code(.invalidHeader)
        /// An option is out of range or contradicts another.
        public static let invalidOption = Code(.invalidOption)
        /// No connection could be made (refused, unreachable, DNS).
        public static let connectionFailed = Code(.connectionFailed)
        /// The connection broke while the body was being sent or the answer read.
        public static let connectionReset = Code(.connectionReset)
        /// The server closed the connection without answering.
        public static let noResponse = Code(.noResponse)
        /// Nothing moved for longer than the stall timeout.
        public static let timedOut = Code(.timedOut)
        /// The server answered with a status that is not 2xx.
        public static let httpStatus = Code(.httpStatus)
        /// The byte source failed or ended early; `offset` says where.
        public static let sourceFailed = Code(.sourceFailed)
        /// The server asked for the body again (redirect, auth) and it cannot be replayed.
        public static let notReplayable = Code(.notReplayable)
        /// The upload was cancelled.
        public static let cancelled = Code(.cancelled)
        /// Redirects went on past the limit.
        public static let tooManyRedirects = Code(.tooManyRedirects)
        /// TLS setup or verification failed.
        public static let tls = Code(.tls)
        /// Any other transport failure.
        public static let transport = Code(.transport)
        /// The server broke the protocol (tus or HTTP).
        public static let protocolViolation = Code(.protocolViolation)
        /// The response body's sink (`ResponseBodyHandling.stream`) threw; `underlying` is its error.
        public static let responseSinkFailed = Code(.responseSinkFailed)
        /// The response body passed the limit of `ResponseBodyHandling.collectOrFail`.
        public static let responseTooLarge = Code(.responseTooLarge)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What happened, in one line.
    public var message: String
    /// The HTTP status, when there was one.
    public var status: Int?
    /// Body bytes sent before the failure.
    public var bytesSent: Int64?
    /// The body's length, when known.
    public var totalBytes: Int64?
    /// Where in the source a source failure happened.
    public var offset: Int64?
    /// The underlying error.
    public var underlying: (any Error)?
    /// Where the last redirect pointed (`.tooManyRedirects`), as the server wrote it.
    public var redirectLocation: String?

    /// Creates an error of kind `code` with a one-line message and the numbers that matter.
    public init(
        _ code: Code, _ message: String, status: Int? = nil, bytesSent: Int64? = nil,
        totalBytes: Int64? = nil, offset: Int64? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.bytesSent = bytesSent
        self.totalBytes = totalBytes
        self.offset = offset
        self.underlying = underlying
    }

    /// The error for a URL that is not http(s) with a host; `text` is the URL as given.
    public static func invalidURL(_ text: String) -> UploadError {
        UploadError(.invalidURL, "invalid URL '\(text)': expected http:// or https:// with a host")
    }

    /// The error for a header that would break the request; `message` says which and why.
    public static func invalidHeader(_ message: String) -> UploadError {
        UploadError(.invalidHeader, message)
    }

    /// A read of the body's source that threw at `offset`.
    package static func sourceFailed(_ error: any Error, at offset: Int64, totalBytes: Int64? = nil) -> UploadError {
        UploadError(.sourceFailed, "the source failed at byte \(offset): \(error)", totalBytes: totalBytes, offset: offset, underlying: error)
    }

    /// A body's source that ended at `offset`, before `expected`.
    package static func sourceEndedEarly(at offset: Int64, expected: Int64, totalBytes: Int64? = nil) -> UploadError {
        let cause = ByteSourceError.endedEarly(offset: offset, expected: expected)
        return UploadError(.sourceFailed, "the source ended early: \(cause)", totalBytes: totalBytes, offset: offset, underlying: cause)
    }

    /// One line: what happened, the status, bytes sent of total (not for a request with no
    /// body: a GET's "0 of 0 bytes sent" tells nothing), the cause; any password in a URL
    /// shown as `***`.
    public var description: String {
        var line = message
        if let bytesSent, bytesSent > 0 || totalBytes != 0 {
            line += " (\(bytesSent) of \(totalBytes.map(String.init) ?? "unknown") bytes sent)"
        }
        return Redaction.secrets(in: line)
    }
}
