import Foundation
import Synchronization
import SluicePrimitives
import SluiceByteSources
import SluiceRequests
import SluiceTransport

/// The bytes the current request has handed to the connection, for progress and counters.
package final class TusInFlight: Sendable {
    private let sent = Atomic<Int64>(0)

    package func reset() { sent.store(0, ordering: .relaxed) }
    package func update(_ value: Int64) { sent.store(value, ordering: .relaxed) }
    package var value: Int64 { sent.load(ordering: .relaxed) }
}

/// Where an upload stands at the server, as `HEAD` tells.
public struct TusUploadStatus: Sendable, Equatable {
    /// `Upload-Offset`: bytes the server holds.
    public var offset: Int64
    /// `Upload-Length`, when the server says.
    public var length: Int64?
}

extension TusClient {
    package static let version = "1.0.0"
    package static let offsetContentType = "application/offset+octet-stream"

    /// A request with `Tus-Resumable` and the caller's extra headers.
    package func makeRequest(_ url: URL, method: String, headers: [(String, String)] = []) throws -> UploadRequest {
        do {
            var all = [HTTPHeader(name: "Tus-Resumable", value: Self.version)]
            for (name, value) in headers { all.append(HTTPHeader(name: name, value: value)) }
            all += options.headers
            let request = try UploadRequest(url: url, method: method, headers: all)
            try request.validate()
            return request
        } catch {
            throw TusError(.invalidOption, "\(error)", underlying: error)
        }
    }

    /// Sends one request; an empty body when `body` is nil.
    ///
    /// - Throws: `UploadError` from the transport, unchanged, so callers can tell transient
    ///   failures from the rest (`isTransient`).
    package func send(
        _ request: UploadRequest, body: UploadBody? = nil, inFlight: TusInFlight? = nil,
        progress: (@Sendable (Int64) -> Void)? = nil
    ) async throws -> UploadResponse {
        inFlight?.reset()
        var transfer = options.transfer
        // tus servers need a length (tuspyserver ignores a chunked creation body, refuses a chunked PATCH).
        transfer.prefersContentLength = true
        return try await transport.send(request, body: body ?? .bytes(MemoryByteSource([])), options: transfer) { sent in
            inFlight?.update(sent)
            progress?(sent)
        }
    }

    /// `OPTIONS endpoint`: versions, extensions, limits.
    ///
    /// A server that does not answer `OPTIONS` with 2xx is assumed to offer tus 1.0.0 with
    /// creation only (no checksums, no creation-with-upload, no termination).
    ///
    /// - Throws: `TusError.versionUnsupported` when the server lists versions without 1.0.0
    ///   or answers 412; `UploadError` for transport failures.
    package func discoverOnce(_ endpoint: URL) async throws -> TusServerInfo {
        let response = try await send(makeRequest(endpoint, method: "OPTIONS"))
        if response.status == 412 { throw versionError(response) }
        guard response.isSuccess else { return TusServerInfo(versions: [], extensions: ["creation"]) }
        let info = TusServerInfo(response)
        if !info.versions.isEmpty, !info.versions.contains(Self.version) { throw versionError(response) }
        return info
    }

    package func versionError(_ response: UploadResponse) -> TusError {
        let offered = response.header("Tus-Version") ?? "none listed"
        return TusError(
            .versionUnsupported, "the server does not support tus \(Self.version) (it offers \(offered))",
            status: response.status)
    }

    /// `HEAD url` once.
    ///
    /// - Throws: `TusError` (`.uploadGone` for 404/410, `.versionUnsupported`, `.httpStatus`,
    ///   `.protocolViolation`); `UploadError` for transport failures; `TusTransientStatus` for 423 and 5xx.
    package func headOnce(_ url: URL) async throws -> TusUploadStatus {
        let response = try await send(makeRequest(url, method: "HEAD"))
        try check(response, url: url, action: "HEAD")
        guard let text = response.header("Upload-Offset"), let offset = Int64(text), offset >= 0 else {
            throw TusError(
                .protocolViolation, "the server's answer to HEAD has no valid Upload-Offset", uploadURL: url.absoluteString,
                status: response.status)
        }
        return TusUploadStatus(offset: offset, length: response.header("Upload-Length").flatMap { Int64($0) })
    }

    /// The upload URL a creation POST's answer names in `Location` (resolved against
    /// `endpoint`).
    ///
    /// - Parameter what: The request in words, for the error ("the creation POST").
    /// - Throws: `TusError` with code `.protocolViolation` when there is no valid `Location`.
    package func createdLocation(in response: UploadResponse, endpoint: URL, what: String) throws -> URL {
        guard let location = response.header("Location"), let url = URL(string: location, relativeTo: endpoint)?.absoluteURL else {
            throw TusError(.protocolViolation, "the server's answer \(response.status) to \(what) has no valid Location", status: response.status)
        }
        return url
    }

    /// Turns a non-2xx status into the error it means; returns for 2xx.
    package func check(_ response: UploadResponse, url: URL, action: String, offset: Int64? = nil, total: Int64? = nil) throws {
        let status = response.status
        if response.isSuccess { return }
        let where_ = url.absoluteString
        switch status {
        case 404, 410:
            throw TusError(
                .uploadGone, "the server no longer has the upload \(where_) (\(status) \(status == 410 ? "Gone" : "Not Found") to \(action))",
                uploadURL: where_, status: status, offset: offset, totalBytes: total)
        case 412:
            throw versionError(response)
        case 413:
            throw TusError(
                .tooLarge, "the server refused the upload as too large (413 to \(action))",
                uploadURL: where_, status: status, offset: offset, totalBytes: total)
        case _ where status == 423 || RetryPolicy.isTransient(status: status):
            throw TusTransientStatus(status: status, action: action)
        default:
            let text =
                String(decoding: response.body.prefix(200), as: UTF8.self)
                .split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
            throw TusError(
                .httpStatus, "the server answered \(status) to \(action)\(text.isEmpty ? "" : ": \(text)")",
                uploadURL: where_, status: status, offset: offset, totalBytes: total)
        }
    }

    /// `Upload-Metadata`: sorted `key base64(value)` pairs.
    package static func encodeMetadata(_ metadata: [String: String]) -> String {
        metadata.keys.sorted().map { key in
            let value = metadata[key] ?? ""
            return value.isEmpty ? key : "\(key) \(Data(value.utf8).base64EncodedString())"
        }.joined(separator: ",")
    }

    /// The SHA-1 of `source`, base64, read in 1 MiB pieces.
    package static func sha1Base64(_ source: any ByteSource) throws -> String {
        let digest = Digest(.sha1)
        let size = Int(min(Int64(1 << 20), max(1, source.length)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < source.length {
            let count = try source.read(into: buffer, at: offset)
            if count == 0 { throw ByteSourceError.endedEarly(offset: offset, expected: source.length) }
            digest.update(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            offset += Int64(count)
        }
        return Data(digest.finalize()).base64EncodedString()
    }
}

/// A status worth retrying after a pause: 423 Locked, or 408, 429 or a 5xx (`RetryPolicy.isTransient(status:)`).
package struct TusTransientStatus: Error {
    package var status: Int
    package var action: String
}
