import Foundation

/// What a transport does with the body of the response.
public enum ResponseBodyHandling: Sendable {
    /// `collect(limit:)`'s default: 16 MiB.
    public static let defaultLimit = 16 << 20

    /// The most bytes of a protocol's answer (an S3 error or XML document, a tus answer) that
    /// are read: theirs are a few KiB, so 1 MiB is generous.
    public static let answerLimit = 1 << 20

    /// How S3 and tus read their answers: `collectOrFail(limit: answerLimit)`.
    public static let protocolAnswer = ResponseBodyHandling.collectOrFail(limit: answerLimit)

    /// Keep up to `limit` bytes in `UploadResponse.body`. Bytes beyond it are read and
    /// dropped, and `UploadResponse.isBodyTruncated` says so; `bodyByteCount` counts them all.
    case collect(limit: Int)

    /// Keep up to `limit` bytes in `UploadResponse.body`; a longer body fails the request with
    /// `UploadError.responseTooLarge` as soon as it passes the limit, and nothing more is read
    /// (an answer that should be a few KiB, such as an S3 error or XML document, and is 1 GB
    /// or never ends costs neither memory nor time).
    case collectOrFail(limit: Int)

    /// Hand the final response's body to `sink` piece by piece as it arrives, whatever its
    /// size; `UploadResponse.body` stays empty.
    ///
    /// - Important: `sink` is called on the transport's thread, one call at a time, in order;
    ///   the bytes are valid only during the call. The transfer waits while it runs, so a slow
    ///   sink slows the download instead of using memory; so does the transport's thread, which
    ///   other requests may share (a `TransferEngine` loop, URLSession's work queue on Linux):
    ///   a sink should hand bytes on (a file, a pipe) rather than wait for something else. The body of a response that the
    ///   transport answers itself (a redirect it follows, a 401 it answers) never reaches it:
    ///   bodies of 3xx, 401 and 407 are held (up to `defaultLimit`) until the response is known
    ///   to be final. A throw ends the upload with `UploadError.responseSinkFailed`.
    case stream(@Sendable (UnsafeRawBufferPointer) throws -> Void)
}

/// The response body of one upload, for a transport: collected or streamed per
/// `ResponseBodyHandling`, reset for each response, finished once for the final one.
///
/// - Important: Not thread-safe: one thread at a time drives it (the curl transfer's thread;
///   URLSession's serial delegate queue, then the awaiting task after the task completed).
package final class ResponseBodyReceiver: @unchecked Sendable {
    // @unchecked: calls are serialized by the owner, as the Important note says; nothing is shared.
    private let handling: ResponseBodyHandling
    private var status = 0
    /// The collected body, or a held body that may belong to an intermediate response.
    private var kept = Data()
    private var count: Int64 = 0
    private var truncated = false

    package init(_ handling: ResponseBodyHandling) {
        self.handling = handling
    }

    /// A new response starts: forgets the previous one's body.
    package func begin(status: Int) {
        self.status = status
        kept = Data()
        count = 0
        truncated = false
    }

    /// A piece of the current response's body.
    ///
    /// - Throws: What the sink throws, as `UploadError.responseSinkFailed`.
    package func receive(_ bytes: UnsafeRawBufferPointer) throws {
        guard !bytes.isEmpty else { return }
        count += Int64(bytes.count)
        switch handling {
        case .collect(let limit):
            keep(bytes, limit: limit)
        case .collectOrFail(let limit):
            guard kept.count + bytes.count <= limit else {
                throw UploadError(
                    .responseTooLarge, "the server's answer (status \(status)) is longer than \(Self.size(limit)), more than an answer to this request holds; not read further",
                    status: status)
            }
            kept.append(contentsOf: bytes)
        case .stream(let sink):
            if Self.mayBeIntermediate(status) {
                keep(bytes, limit: ResponseBodyHandling.defaultLimit)
            } else {
                try deliver(bytes, to: sink)
            }
        }
    }

    /// The current response is the final one.
    ///
    /// - Returns: The kept body (empty when streamed), the body's byte count, whether bytes
    ///   were dropped at the limit.
    /// - Throws: `UploadError.responseSinkFailed` when the sink throws on a held body.
    package func finish() throws -> (body: Data, byteCount: Int64, isTruncated: Bool) {
        if case .stream(let sink) = handling, Self.mayBeIntermediate(status), !kept.isEmpty {
            let held = kept
            kept = Data()
            try held.withUnsafeBytes { try deliver($0, to: sink) }
        }
        return (kept, count, truncated)
    }

    /// `1 MiB`, `512 KiB`, `100 bytes`.
    private static func size(_ bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// 3xx, 401 and 407: statuses a transport may answer itself.
    private static func mayBeIntermediate(_ status: Int) -> Bool {
        (300..<400).contains(status) || status == 401 || status == 407
    }

    private func keep(_ bytes: UnsafeRawBufferPointer, limit: Int) {
        let room = max(0, limit - kept.count)
        if bytes.count > room { truncated = true }
        if room > 0 { kept.append(contentsOf: bytes.prefix(room)) }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer, to sink: @Sendable (UnsafeRawBufferPointer) throws -> Void) throws {
        do {
            try sink(bytes)
        } catch {
            throw UploadError(.responseSinkFailed, "the response body could not be delivered: \(error)", status: status, underlying: error)
        }
    }
}
