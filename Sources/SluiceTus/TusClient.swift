import Foundation
import SluicePrimitives
import SluiceRequests
import SluiceTransport
import SluiceByteSources

/// A tus 1.0.0 client: creates an upload, sends a random-access source to it in one or more
/// PATCH requests, and resumes from the server's offset after a dropped connection or a
/// killed process.
///
/// ```swift
/// var options = TusOptions()
/// options.chunkSize = 64 << 20
/// let file = try FileByteSource(path: "big.bin")
/// defer { file.close() }
/// let result = try await TusClient(options: options)
///     .upload(TusSource(file: file), to: URL(string: "http://127.0.0.1:1080/files/")!) { print($0.bytesSent) }
/// print(result.uploadURL)
/// ```
///
/// Resume: the upload URL and a `TusFingerprint` of the source are stored per (endpoint,
/// source identity) in `TusOptions.stateDirectory`, right after creation and before any
/// byte is sent in a PATCH. A later run finds the record, checks the fingerprint (a changed
/// source is refused with `TusError.sourceChanged`), asks the server for its offset with
/// `HEAD` and reads the source only from there. The record is removed when the upload is
/// complete. When the stored upload is gone at the server (404/410 to that first `HEAD`),
/// the record is dropped and a new upload is created in the same run
/// (`TusUploadResult.previousUploadGone` says so); when it goes away mid-upload, the run
/// fails with `.uploadGone`, the record is dropped, and the next run starts a new upload.
///
/// - Important: Cancelling the calling task stops the current request promptly and throws
///   `TusError.cancelled`; the stored record is kept so the next run resumes.
public struct TusClient: Sendable {
    /// The transport every request goes through.
    public let transport: any UploadTransport
    /// Chunk size, retries, metadata, state directory and the rest.
    public var options: TusOptions

    /// A client over a transport of kind `transport` (libcurl by default on Linux).
    ///
    /// - Parameters:
    ///   - transport: Which transport; the platform's default (libcurl on Linux) by default.
    ///   - options: Chunking, metadata, retries, state directory.
    public init(transport: TransportKind = .platformDefault, options: TusOptions = TusOptions()) {
        self.init(transport: transport.makeTransport(), options: options)
    }

    /// A client sending through `transport` with `options`.
    public init(transport: any UploadTransport, options: TusOptions = TusOptions()) {
        self.transport = transport
        self.options = options
    }

    // MARK: - Library API

    /// `OPTIONS endpoint`, retried on transient failures.
    ///
    /// - Throws: `TusError`.
    public func discover(_ endpoint: URL) async throws -> TusServerInfo {
        var retrier = TusRetrier(options: options)
        while true {
            do { return try await discoverOnce(endpoint) } catch {
                try await retrier.absorb(error, action: "OPTIONS \(endpoint.absoluteString)", uploadURL: nil)
            }
        }
    }

    /// `HEAD url`: the server's offset for the upload, retried on transient failures.
    ///
    /// - Throws: `TusError` (`.uploadGone` for 404/410).
    public func status(of url: URL) async throws -> TusUploadStatus {
        var retrier = TusRetrier(options: options)
        while true {
            do { return try await headOnce(url) } catch {
                try await retrier.absorb(error, action: "HEAD", uploadURL: url.absoluteString)
            }
        }
    }

    /// `DELETE url` (termination extension), then drops every stored record pointing at it.
    ///
    /// - Throws: `TusError`.
    public func terminate(url: URL) async throws {
        let store = TusStateStore(directory: options.stateDirectory)
        var retrier = TusRetrier(options: options)
        while true {
            do {
                let response = try await send(makeRequest(url, method: "DELETE"))
                if response.status == 404 || response.status == 410 { store.remove(uploadURL: url.absoluteString) }
                try check(response, url: url, action: "DELETE")
                store.remove(uploadURL: url.absoluteString)
                return
            } catch {
                try await retrier.absorb(error, action: "DELETE", uploadURL: url.absoluteString)
            }
        }
    }

    /// Uploads `source` to the creation endpoint `endpoint`, or resumes the stored upload of it.
    ///
    /// - Parameters:
    ///   - source: Random-access bytes and their identity.
    ///   - endpoint: The creation URL.
    ///   - progress: Called at most every `options.transfer.progressInterval` seconds and once
    ///     at the end, with `bytesSent` = the server's confirmed offset + bytes of the current
    ///     request in flight (absolute in the source, never counted twice).
    /// - Returns: The upload URL and counters.
    /// - Throws: `TusError`.
    public func upload(
        _ source: TusSource, to endpoint: URL,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> TusUploadResult {
        try options.validate()
        if options.parallelUploads > 1, source.bytes.length >= Int64(options.parallelUploads) {
            let server = try await discover(endpoint)
            if server.supports("concatenation") {
                return try await TusParallelJob(client: self, source: source, endpoint: endpoint, progress: progress).run()
            }
        }
        let job = TusUploadJob(client: self, source: source, endpoint: endpoint, progress: progress)
        return try await job.run()
    }
}

/// What a tus upload did.
public struct TusUploadResult: Sendable {
    /// Where the upload lives.
    public var uploadURL: URL
    /// The source's length: what the server holds now.
    public var length: Int64
    /// The server's offset when this run started sending (0 for a new upload).
    public var resumedFrom: Int64
    /// Whether this run created the upload.
    public var created: Bool
    /// Body bytes handed to the connection over all requests of this run, retries included.
    public var bytesSent: Int64
    /// Requests that carried bytes (PATCH, and POST with creation-with-upload).
    public var dataRequests: Int
    /// Transient failures retried.
    public var retries: Int
    /// 409 answers (offset mismatch) recovered by `HEAD`.
    public var offsetConflicts: Int
    /// 460 answers (checksum mismatch) after which a chunk was resent.
    public var checksumMismatches: Int
    /// Whether `Upload-Checksum` was sent.
    public var usedChecksums: Bool
    /// A stored upload the server no longer had, replaced by this one.
    public var previousUploadGone: String?
    /// Seconds this run took.
    public var elapsed: Double

    /// Bytes sent that the server already had or did not keep: everything beyond the
    /// `length - resumedFrom` bytes this run had to deliver. Zero unless a request was cut
    /// mid-way or a chunk was resent after 460.
    public var bytesResent: Int64 { max(0, bytesSent - (length - resumedFrom)) }
}

extension TusClient {
    /// `upload(_:to:progress:)` with its progress as an `AsyncSequence`.
    ///
    /// - Parameters:
    ///   - source: Random-access bytes and their identity.
    ///   - endpoint: The creation URL.
    /// - Returns: The reports (finished when the upload ends), and the task whose value is the result.
    public func uploadWithProgress(
        _ source: TusSource, to endpoint: URL
    ) -> (progress: AsyncStream<UploadProgress>, result: Task<TusUploadResult, any Error>) {
        ProgressSequence.run { report in try await upload(source, to: endpoint, progress: report) }
    }
}
