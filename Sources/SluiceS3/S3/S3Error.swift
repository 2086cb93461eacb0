import SluicePrimitives

/// Why an S3 command did not end with the object in place (or the upload aborted).
///
/// Switch on `code`; `serverCode` is S3's own error code (`SignatureDoesNotMatch`, …) when
/// the server sent one; `uploadID` (when known) names the multipart upload a later run can
/// resume or `sluice s3 abort` can remove.
public struct S3Error: Error, Sendable, CustomStringConvertible {
    /// What kind of failure an `S3Error` is: compare it with the static values.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidLocation, configuration, credentials, invalidOption
            case tooManyParts, partTooLarge, objectTooLarge
            case server, malformedResponse, verification
            case sourceChanged, state, stateDirectory, inUse, source, transport, retriesExhausted, cancelled
            case objectExists, conditionFailed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An `s3://BUCKET/KEY` that does not parse, or a key S3 cannot store.
        public static let invalidLocation = Code(.invalidLocation)
        /// A config or credentials file that cannot be read or parsed, a missing profile.
        public static let configuration = Code(.configuration)
        /// No credentials, or only half of a key pair.
        public static let credentials = Code(.credentials)
        /// An option out of range or malformed.
        public static let invalidOption = Code(.invalidOption)
        /// The plan needs more than 10,000 parts (a part size too small, or equal parts on a long stream).
        public static let tooManyParts = Code(.tooManyParts)
        /// A part would be larger than S3's 5 GiB limit.
        public static let partTooLarge = Code(.partTooLarge)
        /// The object is larger than 10,000 parts of 5 GiB.
        public static let objectTooLarge = Code(.objectTooLarge)
        /// The server answered with an error (`status`, `serverCode`).
        public static let server = Code(.server)
        /// The server's answer is not the XML S3 sends.
        public static let malformedResponse = Code(.malformedResponse)
        /// The server's account of the object (part count, composite checksum) differs from ours.
        public static let verification = Code(.verification)
        /// The source differs from the one the stored upload was started with.
        public static let sourceChanged = Code(.sourceChanged)
        /// The resume state could not be read or written.
        public static let state = Code(.state)
        /// The resume state directory cannot be used (it cannot be created, is not a directory,
        /// or cannot be written): another directory is what helps, not a restart.
        public static let stateDirectory = Code(.stateDirectory)
        /// Another run holds the resume state of the same upload: the message names its pid.
        public static let inUse = Code(.inUse)
        /// The source could not be read.
        public static let source = Code(.source)
        /// A request failed in a way retrying cannot help (TLS, bad URL).
        public static let transport = Code(.transport)
        /// Transient failures (resets, 5xx, `SlowDown`) went on past the retry budget.
        public static let retriesExhausted = Code(.retriesExhausted)
        /// The calling task was cancelled; the stored state is kept for a later resume.
        public static let cancelled = Code(.cancelled)
        /// `S3WriteCondition.noClobber`: an object has the key, and was kept (a multipart upload
        /// refused at Complete was aborted).
        public static let objectExists = Code(.objectExists)
        /// `S3WriteCondition.ifMatch`: the object's ETag is not the one given (412); nothing written.
        public static let conditionFailed = Code(.conditionFailed)

        public var description: String { base.rawValue }
    }

    /// What kind of failure this is.
    public var code: Code
    /// What happened, in one line.
    public var message: String
    /// The HTTP status, when there was one.
    public var status: Int?
    /// S3's error code from the error document (`AccessDenied`, `SlowDown`, …).
    public var serverCode: String?
    /// The request id from the error document, for the server's operator.
    public var requestID: String?
    /// The multipart upload this concerns, when there is one.
    public var uploadID: String?
    /// The part this concerns (1-based), when there is one.
    public var partNumber: Int?
    /// The underlying error (an `UploadError`, a `ByteSourceError`, a file system error).
    public var underlying: (any Error)?
    /// What the server says of an upload whose `CompleteMultipartUpload` was interrupted
    /// (`.cancelled`), when the upload is gone: nil while it is still there (kept for a resume).
    public var completion: S3InterruptedCompletion?

    /// Creates an error of kind `code` with a one-line message and what the server said.
    public init(
        _ code: Code, _ message: String, status: Int? = nil, serverCode: String? = nil, requestID: String? = nil,
        uploadID: String? = nil, partNumber: Int? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.serverCode = serverCode
        self.requestID = requestID
        self.uploadID = uploadID
        self.partNumber = partNumber
        self.underlying = underlying
    }

    /// The message, with any password in a URL shown as `***`.
    public var description: String { Redaction.secrets(in: message) }

    /// Whether the same request, made again as it is, may succeed: a failure of the network or
    /// of the server's moment (a retryable S3 error, retries run out), an interruption, a source
    /// that changed while it was read, a record held by another run. Not a refusal the same
    /// request would meet again: a key or option S3 cannot take, an object over its limits, a
    /// server's answer that is not a pause (AccessDenied, NoSuchBucket), an existing object.
    public var isTransient: Bool {
        switch code {
        case .transport, .retriesExhausted, .cancelled, .sourceChanged, .inUse, .malformedResponse: return true
        case .server: return S3ServerError.isRetryable(code: serverCode ?? "", status: status ?? 0)
        default: return false
        }
    }
}
