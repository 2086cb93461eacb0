import Foundation
import SluicePrimitives
import SluiceRequests
import SluiceByteSources

/// The front door: sends a body to a URL over a transport, with progress and cancellation.
///
/// ```swift
/// let uploader = Uploader()
/// let request = try UploadRequest(url: "http://127.0.0.1:8080/put/big.bin", method: "PUT")
/// let response = try await uploader.upload(request, body: .bytes(try FileByteSource(path: path))) { p in
///     print(p.bytesSent, p.totalBytes ?? -1)
/// }
/// ```
///
/// - Important: Cancelling the calling task stops the upload promptly and throws
///   `UploadError` with code `.cancelled`. A response is returned whatever its status;
///   use `upload(...).requireSuccess()` or check `isSuccess`.
public struct Uploader: Sendable {
    /// The transport every upload goes through.
    public let transport: any UploadTransport
    /// The options every upload uses.
    public var options: UploadOptions

    /// An uploader over a transport of kind `transport` (libcurl by default on Linux).
    ///
    /// - Parameters:
    ///   - transport: Which transport; the platform's default when nil.
    ///   - options: Framing, buffers, credentials, timeouts.
    public init(transport: TransportKind = .platformDefault, options: UploadOptions = UploadOptions()) {
        self.init(transport: transport.makeTransport(), options: options)
    }

    /// An uploader over `transport` with `options`.
    public init(transport: any UploadTransport, options: UploadOptions = UploadOptions()) {
        self.transport = transport
        self.options = options
    }

    /// Sends `body` with `request`.
    ///
    /// - Parameters:
    ///   - request: URL, method, headers.
    ///   - body: Any byte source, stream or sequential source.
    ///   - progress: Called at most once per `options.progressInterval`, and once at the end.
    /// - Returns: The response, whatever its status, once the whole body was sent.
    /// - Throws: `UploadError`.
    public func upload(
        _ request: UploadRequest, body: UploadBody,
        progress: (@Sendable (UploadProgress) -> Void)? = nil
    ) async throws -> UploadResponse {
        try options.validate()
        if request.method == "HEAD", body.length != .known(0) {
            throw UploadError(.invalidOption, "a HEAD request cannot carry a body (\(body.length) bytes given)")
        }
        let meter = ProgressMeter(total: body.length.value, interval: options.progressInterval, report: progress)
        let response = try await transport.send(request, body: body, options: options) { sent in
            meter.update(sent)
        }
        meter.finish(response.bytesSent)
        return response
    }

    /// Sends `body` and reports progress as an `AsyncSequence` alongside the result.
    ///
    /// - Returns: A stream of progress updates that finishes when the upload ends, and a
    ///   task whose value is the response.
    public func uploadWithProgress(
        _ request: UploadRequest, body: UploadBody
    ) -> (progress: AsyncStream<UploadProgress>, response: Task<UploadResponse, any Error>) {
        let (stream, task) = ProgressSequence.run { report in try await upload(request, body: body, progress: report) }
        return (stream, task)
    }
}
