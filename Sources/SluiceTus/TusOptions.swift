import SluiceRequests
import SluiceTransport

/// How a tus upload behaves: chunking, metadata, checksums, retries and where resume state lives.
public struct TusOptions: Sendable {
    /// Bytes per PATCH; `nil` sends everything left in one PATCH (split only when checksums
    /// are in use, see `checksumChunkSize`).
    public var chunkSize: Int64?
    /// `Upload-Metadata` pairs; values are sent base64-encoded. When `filename` or `filetype`
    /// is missing and `addsDefaultMetadata` is on, the source's name and
    /// `application/octet-stream` are added (servers such as tuspyserver require both).
    public var metadata: [String: String] = [:]
    /// Adds `filename` and `filetype` to `metadata` when absent.
    public var addsDefaultMetadata = true
    /// The directory that keeps one small record per (endpoint, source); `nil` uses
    /// `TusStateStore.defaultDirectory` (`$XDG_CACHE_HOME/sluice/tus` or `~/.cache/sluice/tus`).
    public var stateDirectory: String?
    /// Keep resume state at all; without it every run creates a new upload.
    public var resumes = true
    /// Ignore a stored upload for this source (even a changed source) and create a new one.
    public var restarts = false
    /// Transient failures in a row (reset, refused, timeout, no answer, 5xx, 423) retried
    /// before giving up; the count starts again whenever the server's offset moves forward.
    public var retries = 5
    /// Transient failures retried in all, progress or not: a server whose offset goes back
    /// and forth cannot keep an upload retrying for ever.
    public var maximumRetries = 100
    /// First backoff delay; doubled per consecutive failure up to `maximumRetryDelay`.
    public var retryDelay: Duration = .milliseconds(250)
    /// Longest backoff delay; at most `UploadOptions.maximumTimeout`.
    public var maximumRetryDelay: Duration = .seconds(8)
    /// Send `Upload-Checksum: sha1 ...` with every PATCH when the server lists the
    /// checksum extension with sha1.
    public var usesChecksums = true
    /// Chunk size used when checksums are in use and `chunkSize` is nil: each chunk is read
    /// twice (once for its digest, once to send it), and a 460 resends only that chunk.
    public var checksumChunkSize: Int64 = 64 << 20
    /// How many times one chunk is resent after a 460 (checksum mismatch).
    public var checksumRetries = 3
    /// Put the first bytes in the creation request when the server offers creation-with-upload.
    public var usesCreationWithUpload = true
    /// At most this many bytes go in the creation request: they are sent before the upload
    /// URL is known and stored, so a process killed during that request loses them.
    public var creationUploadLimit: Int64 = 4 << 20
    /// Partial uploads sent at once when the server offers the concatenation extension
    /// (`Upload-Concat: partial`, joined by `Upload-Concat: final;...`); 1 sends one upload.
    /// A server without concatenation gets one upload whatever this says.
    public var parallelUploads = 1
    /// Extra headers on every request (authorization, for instance).
    public var headers: [HTTPHeader] = []
    /// Transport options: buffers, timeouts, TLS, credentials. `progressInterval` throttles
    /// the tus progress callback. Answers are read up to `ResponseBodyHandling.answerLimit`
    /// (`.protocolAnswer`): a tus server's are a few bytes.
    public var transfer: UploadOptions = {
        var options = UploadOptions()
        options.responseBody = .protocolAnswer
        return options
    }()

    /// Options with every property at its default (given with each property).
    public init() {}

    /// The policy every request of the upload follows.
    public var retryPolicy: RetryPolicy {
        RetryPolicy(retries: retries, maximumRetries: maximumRetries, baseDelay: retryDelay, maximumDelay: maximumRetryDelay)
    }

    /// Whether `key` can name an `Upload-Metadata` pair: non-empty ASCII without spaces or
    /// commas (tus separates pairs with commas and key from value with a space).
    package static func isValidMetadataKey(_ key: String) -> Bool {
        !key.isEmpty && !key.contains(" ") && !key.contains(",") && key.unicodeScalars.allSatisfy(\.isASCII)
    }

    package func validate() throws(TusError) {
        guard parallelUploads >= 1, parallelUploads <= 64 else {
            throw TusError(.invalidOption, "parallel uploads must be 1 ... 64")
        }
        for key in metadata.keys
        where !Self.isValidMetadataKey(key) {
            throw TusError(.invalidOption, "metadata key '\(key)' must be non-empty ASCII without spaces or commas")
        }
        if let chunkSize, chunkSize < 1 {
            throw TusError(.invalidOption, "chunk size must be at least 1 byte")
        }
        guard retries >= 0, maximumRetries >= 0, checksumRetries >= 0 else {
            throw TusError(.invalidOption, "retry counts must not be negative")
        }
        for delay in [retryDelay, maximumRetryDelay] where delay < .zero || delay > UploadOptions.maximumTimeout {
            throw TusError(.invalidOption, "retry delay \(delay) is outside 0 ... \(UploadOptions.maximumTimeout) (365 days)")
        }
        guard checksumChunkSize >= 1, creationUploadLimit >= 0 else {
            throw TusError(.invalidOption, "sizes must not be negative")
        }
        do { try transfer.validate() } catch { throw TusError(.invalidOption, "\(error)", underlying: error) }
    }
}
