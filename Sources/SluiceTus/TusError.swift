import SluicePrimitives

/// Why a tus upload or termination did not end with the whole source at the server.
///
/// Switch on `code`; `uploadURL` (when known) is where the upload lives, so a later run
/// can resume it or `TusClient.terminate(url:)` can remove it.
public struct TusError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure a `TusError` is: compare it with the static values.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case versionUnsupported, creationUnsupported, terminationUnsupported
            case tooLarge, sourceChanged, sourceNotRandomAccess, uploadGone
            case checksumMismatch, retriesExhausted, httpStatus, protocolViolation
            case state, inUse, source, transport, invalidOption, cancelled
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The server does not speak tus 1.0.0 (412, or `Tus-Version` without it).
        public static let versionUnsupported = Code(.versionUnsupported)
        /// The server does not offer the creation extension, so no upload can be made.
        public static let creationUnsupported = Code(.creationUnsupported)
        /// The server does not offer the termination extension.
        public static let terminationUnsupported = Code(.terminationUnsupported)
        /// The source is longer than `Tus-Max-Size`, or the server answered 413.
        public static let tooLarge = Code(.tooLarge)
        /// The source differs from the one the stored upload was started with.
        public static let sourceChanged = Code(.sourceChanged)
        /// tus needs a source that can be read from any offset (not stdin).
        public static let sourceNotRandomAccess = Code(.sourceNotRandomAccess)
        /// The server no longer has the upload (404 or 410); the stored state was dropped.
        public static let uploadGone = Code(.uploadGone)
        /// The server rejected the same chunk's checksum (460) more often than allowed.
        public static let checksumMismatch = Code(.checksumMismatch)
        /// Transient failures (reset, timeout, 5xx, 423) went on past the retry budget.
        public static let retriesExhausted = Code(.retriesExhausted)
        /// The server answered with a status the protocol gives no way around.
        public static let httpStatus = Code(.httpStatus)
        /// The server broke the tus protocol (no `Location`, a bad `Upload-Offset`).
        public static let protocolViolation = Code(.protocolViolation)
        /// The state directory could not be read or written.
        public static let state = Code(.state)
        /// Another run holds the stored upload's record (its pid is in the message): one run
        /// of an upload at a time.
        public static let inUse = Code(.inUse)
        /// The source could not be read.
        public static let source = Code(.source)
        /// A request failed in a way retrying cannot help (bad URL, TLS, options).
        public static let transport = Code(.transport)
        /// An option is out of range or malformed.
        public static let invalidOption = Code(.invalidOption)
        /// The calling task was cancelled; the stored state is kept for a later resume.
        public static let cancelled = Code(.cancelled)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What happened, in one line.
    public var message: String
    /// The upload's URL, when one was created or found.
    public var uploadURL: String?
    /// The HTTP status, when there was one.
    public var status: Int?
    /// The offset the server confirmed last.
    public var offset: Int64?
    /// The source's length.
    public var totalBytes: Int64?
    /// The underlying error (an `UploadError`, a `ByteSourceError`, a file system error).
    public var underlying: (any Error)?

    /// Creates an error of kind `code` with a one-line message and the numbers that matter.
    public init(
        _ code: Code, _ message: String, uploadURL: String? = nil, status: Int? = nil,
        offset: Int64? = nil, totalBytes: Int64? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.uploadURL = uploadURL
        self.status = status
        self.offset = offset
        self.totalBytes = totalBytes
        self.underlying = underlying
    }

    /// One line: what happened, the confirmed offset of the total, and the upload URL (any
    /// password in a URL shown as `***`).
    public var description: String {
        var line = message
        if let offset {
            line += " (\(offset) of \(totalBytes.map(String.init) ?? "unknown") bytes at the server)"
        }
        if let uploadURL, !message.contains(uploadURL) {
            line += " [upload \(uploadURL)]"
        }
        return Redaction.secrets(in: line)
    }
}
