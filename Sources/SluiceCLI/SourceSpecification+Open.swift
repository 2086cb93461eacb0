import Foundation
import Sluice

extension SourceSpecification {
    /// An opened SOURCE: its upload body, and how to release it.
    struct Opened: Sendable {
        let body: UploadBody
        /// The random-access source, when there is one (regular files and synthetic).
        let source: (any ByteSource)?
        /// The sequential source, when there is one: stdin, a FIFO, a file whose size is
        /// reported as 0 but that has content (`/proc/cpuinfo`).
        let sequential: (any SequentialByteSource)?
        /// Releases file descriptors (idempotent; they are released when the last copy goes
        /// away in any case). Call after the upload.
        let close: @Sendable () -> Void
    }

    /// Opens the source for reading, never blocking (see `OpenedFile`).
    ///
    /// - Throws: `ByteSourceError` for a missing, unreadable or unsupported path.
    func open() throws -> Opened {
        switch self {
        case .file(let path):
            let file = try OpenedFile(path: path)
            switch file {
            case .randomAccess(let source):
                return Opened(body: .bytes(source), source: source, sequential: nil, close: { file.close() })
            case .sequential(let stream):
                return Opened(body: .sequential(stream), source: nil, sequential: stream, close: { file.close() })
            }
        case .standardInput:
            let stdin = FileDescriptorStream.standardInput
            return Opened(body: .sequential(stdin), source: nil, sequential: stdin, close: {})
        case .synthetic(let length, let seed):
            let source = SyntheticByteSource(length: length, seed: seed)
            return Opened(body: .bytes(source), source: source, sequential: nil, close: {})
        case .remote(let url):
            throw ByteSourceError.invalidSpecification("\(RemoteSourceError.shown(url)): an http(s) source is read by upload, tus and s3 cp, not here")
        case .object(let location):
            throw ByteSourceError.invalidSpecification("\(location): an s3:// source is read by upload, tus and s3 cp, not here")
        }
    }
}

extension SourceSpecification {
    /// Opens the source; an http(s) SOURCE is asked once (HEAD) for its length and validator,
    /// and a source without a validator is said once on stderr; an s3:// SOURCE is read with
    /// `store`'s configuration (`S3Client.remoteSource(of:)`: ranges pinned to its ETag).
    ///
    /// - Throws: `ByteSourceError`, `RemoteSourceError` for an http(s) source, `S3Error` for
    ///   an s3:// one.
    func open(remote options: RemoteSourceOptions, store: SourceStore = SourceStore()) async throws -> Opened {
        let source: RemoteByteSource
        switch self {
        case .remote(let url): source = try await Self.openRemote(url, options: options)
        case .object(let location): source = try await Self.openObject(location, store: store, options: options)
        default: return try open()
        }
        return Opened(body: .bytes(source), source: source, sequential: nil, close: { source.close() })
    }

    /// Opens an s3:// source with `store`'s configuration (else the environment's and the
    /// default profile's, as an `s3` command).
    static func openObject(_ location: S3Location, store: SourceStore, options: RemoteSourceOptions) async throws -> RemoteByteSource {
        let configuration: S3Configuration
        do { configuration = try S3Configuration.resolve(store.overrides(over: S3ConfigurationOverrides())) } catch var error as S3Error {
            error.message = "the source's configuration: \(error.message)"
            throw error
        }
        let client = S3Client(configuration: configuration)
        do {
            guard try await client.headObject(location) != nil else { throw S3Error(.source, "\(location): no such object (HeadObject answered 404)") }
        } catch var error as S3Error where error.code != .source {
            error.message = "the source \(location): \(error.message)"
            throw error
        }
        return try await client.remoteSource(of: location, options: options)
    }

    /// Opens an http(s) source, saying once when it names no validator.
    static func openRemote(_ url: URL, options: RemoteSourceOptions) async throws -> RemoteByteSource {
        warnIfUnpinned(try await RemoteByteSource.open(url, options: options))
    }

    /// Says once on stderr when a remote source names no validator; returns it.
    static func warnIfUnpinned(_ source: RemoteByteSource) -> RemoteByteSource {
        if source.validator == nil {
            Terminal.error(
                "sluice: warning: \(RemoteSourceError.shown(source.url)) names no strong ETag or Last-Modified: its ranges cannot be pinned to one version, and an interrupted copy will not be resumed"
            )
        }
        return source
    }

    /// What a resumed upload of a remote source is matched by: its URL and validator; a source
    /// without one gets an identity of its own each run, so it is never resumed.
    static func remoteIdentity(_ source: RemoteByteSource) -> String {
        guard let validator = source.validator else { return "url:\(source.url.absoluteString) unpinned \(UUID().uuidString)" }
        return "url:\(source.url.absoluteString) \(source.length) \(validator)"
    }

    /// The name a remote source goes by: its path's last component.
    static func remoteName(_ url: URL) -> String? {
        let name = url.lastPathComponent
        return name.isEmpty || name == "/" ? nil : name
    }
}

extension RemoteSourceOptions {
    /// These options with the run's stall timeout, TLS settings, retry policy and
    /// `--limit-rate` (a cap of the source's own, of the same value: the source's GETs and the
    /// upload each keep to it, as curl's `--limit-rate` caps either way).
    func adopting(_ transfer: UploadOptions, retry: RetryPolicy = RetryPolicy()) -> RemoteSourceOptions {
        var options = self
        options.rateLimit = transfer.rateLimit.flatMap { try? RateLimit(bytesPerSecond: $0.bytesPerSecond) }
        options.stallTimeout = transfer.stallTimeout
        options.connectTimeout = transfer.connectTimeout
        options.caFile = transfer.caFile
        options.insecure = transfer.insecure
        options.retry = retry
        return options
    }
}
