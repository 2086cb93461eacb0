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
            throw ByteSourceError.invalidSpecification("\(location): an s3:// source is read by s3 cp only")
        }
    }
}

extension SourceSpecification {
    /// Opens the source; an http(s) SOURCE is asked once (HEAD) for its length and validator,
    /// and a source without a validator is said once on stderr.
    ///
    /// - Throws: `ByteSourceError`, or `RemoteSourceError` for an http(s) source.
    func open(remote options: RemoteSourceOptions) async throws -> Opened {
        guard case .remote(let url) = self else { return try open() }
        let source = try await Self.openRemote(url, options: options)
        return Opened(body: .bytes(source), source: source, sequential: nil, close: { source.close() })
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
    /// These options with the run's stall timeout, TLS settings and retry policy.
    func adopting(_ transfer: UploadOptions, retry: RetryPolicy = RetryPolicy()) -> RemoteSourceOptions {
        var options = self
        options.stallTimeout = transfer.stallTimeout
        options.connectTimeout = transfer.connectTimeout
        options.caFile = transfer.caFile
        options.insecure = transfer.insecure
        options.retry = retry
        return options
    }
}
