import Foundation
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceBoundStreams
import SluiceTransport

extension S3Client {
    /// A client configured as the AWS CLI is: credentials, region, endpoint, addressing style
    /// and CA bundle from the environment (`AWS_PROFILE`, `AWS_ENDPOINT_URL`, …), `~/.aws/config`
    /// and `~/.aws/credentials` (`S3Configuration.resolve(_:environment:home:)`), each overridden
    /// by what `overrides` names.
    ///
    /// ```swift
    /// let client = try S3Client()
    /// try await client.upload(file: "/data/big.iso", to: "s3://bucket/big.iso")
    /// ```
    ///
    /// - Parameters:
    ///   - overrides: Settings that win over the environment and the files (a profile, an endpoint).
    ///   - options: Part size, concurrency, checksum and the rest; nil for the defaults with the
    ///     profile's transfer settings applied (`multipart_chunksize`, `multipart_threshold`,
    ///     `max_concurrent_requests`, `max_bandwidth`: `S3TransferSettings`).
    ///   - transport: Which transport (libcurl by default on Linux).
    ///   - environment: The environment to read; the process's by default.
    ///   - home: Where `~` points; `HOME` by default.
    /// - Throws: `S3Error` with code `.configuration` or `.credentials`, as `resolve` does.
    public init(
        _ overrides: S3ConfigurationOverrides = S3ConfigurationOverrides(), options: S3Options? = nil,
        transport: TransportKind = .platformDefault,
        environment: [String: String] = ProcessInfo.processInfo.environment, home: String? = nil
    ) throws {
        let configuration = try S3Configuration.resolve(overrides, environment: environment, home: home)
        // Unless told otherwise, the profile's transfer settings too (`s3 =`), as the AWS CLI.
        self.init(configuration: configuration, options: options ?? S3Options().applying(configuration.transfer), transport: transport)
    }

    /// Uploads the file at `path` to `destination` in one call: a `PutObject` below the part
    /// size, else a resumable multipart upload (the same call after a crash resumes it); a key
    /// ending in `/` gets the file's name, as `aws s3 cp` gives it. A FIFO, or a file whose size
    /// is not its length (`/proc`), is read once as a stream.
    ///
    /// - Parameters:
    ///   - path: The file; relative to the current directory unless absolute.
    ///   - destination: `s3://BUCKET/KEY`, or `s3://BUCKET/PREFIX/`.
    ///   - progress: Called with the bytes sent, at most every `options.transfer.progressInterval`
    ///     and once at the end, from any thread.
    /// - Returns: What the upload did: the object, its unquoted ETag, the verified checksum.
    /// - Throws: `S3Error` (`.invalidLocation` for a destination that is no S3 URL, `.source`
    ///   for a file that cannot be opened or read, and the upload's errors).
    public func upload(
        file path: String, to destination: String, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3UploadResult {
        try await upload(file: path, to: try S3Location(parsing: destination), progress: progress)
    }

    /// Uploads the file at `path` to `location` in one call (see `upload(file:to:progress:)`
    /// with a string destination).
    ///
    /// - Parameters:
    ///   - path: The file; relative to the current directory unless absolute.
    ///   - location: The object, or a prefix ending in `/` that gets the file's name.
    ///   - progress: Called with the bytes sent, from any thread.
    /// - Returns: What the upload did.
    /// - Throws: `S3Error`.
    public func upload(
        file path: String, to location: S3Location, progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> S3UploadResult {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        var client = self
        client.options.object = options.object.forFile(atPath: absolute)
        let opened: OpenedFile
        do { opened = try OpenedFile(path: absolute) } catch {
            throw S3Error(.source, "\(error)", underlying: error)
        }
        defer { opened.close() }
        let target = try location.resolvingKey(forSourceNamed: (absolute as NSString).lastPathComponent)
        switch opened {
        case .randomAccess(let file):
            return try await client.upload(
                S3Source(file, identity: "file:\(absolute)", fingerprint: S3SourceFingerprint(file: file)), to: target,
                progress: progress)
        case .sequential(let stream):
            // A FIFO, or a /proc file whose size says 0: read once, as stdin is. Closing
            // it ends a wait for a writer or for bytes within 100 ms.
            return try await client.uploadStream(stream, to: target, progress: progress, onCancel: stream.close)
        }
    }

    /// `uploadStream`, with `onCancel` run when the task is cancelled (Ctrl-C) or the stream is
    /// silent for the stall timeout: the stream is read on a thread of its own, which only the
    /// stream can wake. A read failure that cancellation caused is reported as `.cancelled`.
    package func uploadStream(
        _ stream: any SequentialByteSource, to location: S3Location, progress: (@Sendable (UploadProgress) -> Void)?,
        onCancel: @escaping @Sendable () -> Void
    ) async throws -> S3UploadResult {
        // A source silent for the stall timeout fails the upload, as a silent server does.
        let guarded = StallGuardedStream(stream, timeout: options.transfer.stallTimeout, interrupt: onCancel)
        do {
            return try await withTaskCancellationHandler {
                try await uploadStream(guarded, to: location, progress: progress)
            } onCancel: {
                onCancel()
            }
        } catch var error as S3Error where Task.isCancelled && error.code == .source {
            error.code = .cancelled
            throw error
        }
    }
}

extension S3Client {
    /// `upload(_:to:progress:)` with its progress as an `AsyncSequence`.
    ///
    /// ```swift
    /// let (progress, upload) = client.uploadWithProgress(source, to: location)
    /// for await report in progress { print(report.bytesSent, report.totalBytes ?? -1) }
    /// let result = try await upload.value
    /// ```
    ///
    /// - Returns: The reports (finished when the upload ends), and the task whose value is the result.
    public func uploadWithProgress(
        _ source: S3Source, to location: S3Location
    ) -> (progress: AsyncStream<UploadProgress>, result: Task<S3UploadResult, any Error>) {
        ProgressSequence.run { report in try await upload(source, to: location, progress: report) }
    }

    /// `upload(file:to:progress:)` with its progress as an `AsyncSequence`.
    ///
    /// - Returns: The reports (finished when the upload ends), and the task whose value is the result.
    public func uploadWithProgress(
        file path: String, to destination: String
    ) -> (progress: AsyncStream<UploadProgress>, result: Task<S3UploadResult, any Error>) {
        ProgressSequence.run { report in try await upload(file: path, to: destination, progress: report) }
    }

    /// `uploadStream(_:to:progress:)` with its progress as an `AsyncSequence`.
    ///
    /// - Returns: The reports (finished when the upload ends), and the task whose value is the result.
    public func uploadStreamWithProgress(
        _ stream: any SequentialByteSource, to location: S3Location
    ) -> (progress: AsyncStream<UploadProgress>, result: Task<S3UploadResult, any Error>) {
        ProgressSequence.run { report in try await uploadStream(stream, to: location, progress: report) }
    }
}
