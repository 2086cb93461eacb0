import Foundation
import SluicePrimitives
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
        let (stream, continuation) = AsyncStream<UploadProgress>.makeStream(bufferingPolicy: .bufferingNewest(16))
        let task = Task {
            defer { continuation.finish() }
            return try await upload(request, body: body) { continuation.yield($0) }
        }
        return (stream, task)
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

extension UploadResponse {
    /// Throws `UploadError.httpStatus` unless the status is 2xx.
    @discardableResult
    public func requireSuccess(totalBytes: Int64? = nil) throws(UploadError) -> UploadResponse {
        guard isSuccess else {
            let text =
                String(decoding: body.prefix(200), as: UTF8.self)
                .split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            throw UploadError(
                .httpStatus, "server answered \(status)\(text.isEmpty ? "" : ": \(text)")",
                status: status, bytesSent: bytesSent, totalBytes: totalBytes)
        }
        return self
    }
}
