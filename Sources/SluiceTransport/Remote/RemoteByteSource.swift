#if canImport(CCurl)
import CCurl
import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceByteSources
import SluiceRequests

/// The bytes of an http(s) URL, read by range: a `ByteSource`, so every upload, tus, S3 and
/// job path takes it as it takes a file.
///
/// `open` asks once (HEAD, or a GET of byte 0 when HEAD is refused) for the length and a
/// validator: a strong `ETag`, else `Last-Modified`. Every range is then a GET with `Range`, pinned by `If-Match` (or
/// `If-Unmodified-Since`), so an answer of another version (412, another validator or length,
/// a 200 where a 206 was asked for, a short range) fails the read with a `RemoteSourceError`:
/// never a mixed object. A source with no validator is read unpinned; `validator` is nil then
/// and callers should not resume it.
///
/// Each reader of a range (a part) gets a GET of its own, from the offset it asks for to the
/// next multiple of `RemoteSourceOptions.window`, streamed on a thread of its own into a ring
/// of `bufferSize` bytes that the reader drains: the source's memory is that ring per range
/// read at once, whatever the object's or a part's size. A reader that goes on where a GET
/// ended gets the next GET on the same connection. A GET that fails with a transient error
/// (a reset, a stall, a 5xx) is asked again from the byte it reached under the shared
/// `RetryPolicy`; redirects are followed with `headers` kept for the source's own origin.
///
/// - Important: `read(into:at:)` may block the calling thread until the range's bytes come,
///   up to the stall timeout. Call `close()` once when done: it ends every GET and their
///   threads.
public final class RemoteByteSource: ByteSource {
    /// The URL the source was opened with.
    public let url: URL
    /// The length the first answer named.
    public let length: Int64
    /// What pins every range; nil when the source named none (read unpinned, not resumable).
    public let validator: RemoteValidator?
    /// Whether its ranges are pinned to one version: it has a `validator`.
    public var isPinned: Bool { validator != nil }
    /// How ranges are asked for.
    public let options: RemoteSourceOptions
    /// Where the first answer came from (after redirects), and whether `headers` go there.
    package let home: Location

    private let state = Lock(State())

    /// Where requests go: a URL, and whether the source's headers may go with them.
    package struct Location: Sendable {
        package var url: URL
        package var sendsHeaders: Bool

        package init(url: URL, sendsHeaders: Bool) {
            self.url = url
            self.sendsHeaders = sendsHeaders
        }
    }

    /// An easy handle no thread uses, kept for its connection.
    private struct IdleHandle: @unchecked Sendable {
        // @unchecked: a pooled handle is used by no thread; taking it hands it to one.
        let easy: CurlEasy
    }

    private struct State: Sendable {
        var idle: [RemoteRangeStream] = []
        var live: [ObjectIdentifier: RemoteRangeStream] = [:]
        var handles: [IdleHandle] = []
        var closed = false
        /// The size of the pieces readers take (`readsInPieces(of:)`), 0 for none known.
        var piece: Int64 = 0
    }

    /// The most streams kept between reads, waiting for a reader to go on where they stand.
    static let idleLimit = 16

    private init(url: URL, length: Int64, validator: RemoteValidator?, options: RemoteSourceOptions, home: Location) {
        self.url = url
        self.length = length
        self.validator = validator
        self.options = options
        self.home = home
    }

    /// Opens the source: one HEAD (redirects followed, transient failures retried) learns its
    /// length and validator; a source that refuses HEAD (405, 403, 501: some presigned GET URLs
    /// and object servers) is asked one ranged GET of its first byte instead.
    ///
    /// - Parameters:
    ///   - url: An http or https URL.
    ///   - options: Headers, retries, timeouts, TLS.
    /// - Returns: The source; call `close()` after the upload.
    /// - Throws: `RemoteSourceError` when the source cannot be asked or names no length.
    public static func open(_ url: URL, options: RemoteSourceOptions = RemoteSourceOptions()) async throws -> RemoteByteSource {
        try await BlockingPool.shared.run { try RemoteByteSource.probe(url, options: options) }
    }

    /// The statuses to HEAD after which the first byte is asked for with a GET instead.
    static let headRefusals: Set<Int> = [403, 405, 501]

    /// `open`, on the calling thread.
    package static func probe(_ url: URL, options: RemoteSourceOptions) throws -> RemoteByteSource {
        guard url.isHTTPWithHost else {
            throw RemoteSourceError(.status, "not an http or https URL with a host", url: url)
        }
        let easy = try CurlEasy()
        let exchange = RemoteExchange()
        var location = Location(url: url, sendsHeaders: true)
        var redirects = 0
        var failures = 0
        // HEAD, else (refused) `Range: bytes=0-0` by GET, whose body is not read past its headers.
        var probe = Probe.head
        var answer: (status: Int, fields: [String: String])?
        exchange.accept = { status, fields in
            answer = (status, fields)
            return false
        }
        let deadline = StallClock(timeout: options.stallTimeout)
        exchange.tick = { deadline.isWithin() }
        while true {
            answer = nil
            deadline.reset()
            let code = try exchange.perform(
                easy, url: location.url, head: probe == .head,
                headers: headers(for: location, method: probe.method, adding: probe.headers, options: options), options: options)
            let failure: RemoteSourceError
            if let (status, fields) = answer {
                switch status {
                case _ where (200..<300).contains(status) || (status == 416 && probe == .firstByte):
                    let length: Int64
                    do { length = try probe.length(status: status, fields: fields, url: url) } catch {
                        easy.cleanup()
                        throw error
                    }
                    let validator = RemoteValidator(fields: fields)
                    let source = RemoteByteSource(url: url, length: length, validator: validator, options: options, home: location)
                    source.state.withLock { $0.handles.append(IdleHandle(easy: easy)) }
                    return source
                case 301, 302, 303, 307, 308:
                    redirects += 1
                    location = try follow(from: location, fields: fields, redirects: redirects, original: url, options: options)
                    continue
                case let refused where probe == .head && headRefusals.contains(refused):
                    probe = .firstByte
                    continue
                default:
                    failure = RemoteSourceError(.status, "answered \(status) to \(probe.asked)", url: url, status: status)
                }
            } else if deadline.expired {
                failure = RemoteSourceError(.stalled, "sent nothing for \(options.stallTimeout)", url: url)
            } else {
                failure = RemoteSourceError(
                    .transport, exchange.failureText(code), url: url, underlying: CurlError(code: code))
                if !CurlError.transientCodes.contains(code) {
                    easy.cleanup()
                    throw failure
                }
            }
            failures += 1
            guard failure.isTransient, failures <= options.retry.retries else {
                easy.cleanup()
                throw failure
            }
            Thread.sleep(forTimeInterval: options.retry.delay(attempt: failures).inSeconds)
        }
    }

    /// How `probe` asks for the length: HEAD, or a GET of the first byte.
    private enum Probe: Equatable {
        case head
        case firstByte

        var method: String { self == .head ? "HEAD" : "GET" }
        var headers: [HTTPHeader] { self == .head ? [] : [HTTPHeader(name: "Range", value: "bytes=0-0")] }
        var asked: String { self == .head ? "HEAD" : "a GET of bytes 0-0 (after HEAD was refused)" }

        /// The length an answer names: `Content-Length` of a HEAD or of a 200 (the whole
        /// object, not read), the total of `Content-Range` of a 206 (`bytes 0-0/LEN`) or of a
        /// 416 (`bytes */0`: an empty source).
        func length(status: Int, fields: [String: String], url: URL) throws -> Int64 {
            if self == .firstByte, status == 206 || status == 416 {
                let text = fields["content-range"] ?? ""
                if text.hasSuffix("/*") {
                    throw RemoteSourceError(
                        .noLength, "its answer to \(asked) names no length (Content-Range: \(text)); a source read by ranges needs its length", url: url, status: status)
                }
                let usable = status == 206 ? RemoteRangeStream.contentRange(text)?.2 : text.lowercased().hasPrefix("bytes */") ? Int64(text.dropFirst(8)) : nil
                guard let length = usable, length >= 0 else {
                    throw RemoteSourceError(.noLength, "answered \(status) to \(asked) without a usable Content-Range", url: url, status: status)
                }
                return length
            }
            guard let text = fields["content-length"], let length = Int64(text), length >= 0 else {
                throw RemoteSourceError(.noLength, "its answer to \(asked) names no Content-Length; a source read by ranges needs its length", url: url, status: status)
            }
            return length
        }
    }

    /// The headers for a request at `location`: `extra`, and the source's own (signed by
    /// `authorize`) only at its origin.
    ///
    /// - Throws: What `authorize` throws.
    package static func headers(
        for location: Location, method: String, adding extra: [HTTPHeader], options: RemoteSourceOptions
    ) throws -> [HTTPHeader] {
        guard location.sendsHeaders else { return extra }
        let all = options.headers + extra
        guard let authorize = options.authorize else { return all }
        return try authorize(method, location.url, all)
    }

    /// The location a redirect answer names.
    ///
    /// - Throws: `RemoteSourceError.redirect` past `maximumRedirects` or without a `Location`.
    package static func follow(
        from location: Location, fields: [String: String], redirects: Int, original: URL, options: RemoteSourceOptions
    ) throws -> Location {
        guard redirects <= options.maximumRedirects else {
            throw RemoteSourceError(.redirect, "more than \(options.maximumRedirects) redirects", url: original)
        }
        guard let text = fields["location"], let target = URL(string: text, relativeTo: location.url)?.absoluteURL,
            target.isHTTPWithHost
        else {
            throw RemoteSourceError(.redirect, "a redirect without a usable Location", url: original)
        }
        // The source's headers (a token) stay with its origin: a redirect elsewhere goes without.
        return Location(url: target, sendsHeaders: location.sendsHeaders && target.origin == original.origin)
    }

    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
        guard !buffer.isEmpty, offset < length else { return 0 }
        guard offset >= 0 else { throw ByteSourceError.offsetOutOfRange(offset: offset, length: length) }
        let stream = try checkOut(at: offset)
        let count: Int
        do { count = try stream.read(into: buffer) } catch {
            retire(stream)
            throw error
        }
        checkIn(stream)
        return count
    }

    /// Tells the source that readers take it in pieces of `size` bytes from offset 0 (the
    /// parts of a multipart upload): no GET then runs past the end of the piece it starts in, so a
    /// part that is not a multiple of `RemoteSourceOptions.window` asks for none of the next
    /// part's bytes, which another reader may be reading at the same time.
    public func readsInPieces(of size: Int64) {
        state.withLock { $0.piece = max(size, 0) }
    }

    /// Ends every GET and its thread; reads after it fail. Idempotent.
    public func close() {
        let (streams, handles) = state.withLock { state -> ([RemoteRangeStream], [IdleHandle]) in
            state.closed = true
            let streams = Array(state.live.values)
            state.live = [:]
            state.idle = []
            let handles = state.handles
            state.handles = []
            return (streams, handles)
        }
        for stream in streams { stream.close() }
        for handle in handles { handle.easy.cleanup() }
    }

    /// The stream whose next byte is `offset`, or a new GET from there.
    private func checkOut(at offset: Int64) throws -> RemoteRangeStream {
        let window = max(options.window, 1)
        let taken = try state.withLock { state -> (RemoteRangeStream?, IdleHandle?, Int64) in
            guard !state.closed else { throw RemoteSourceError(.closed, "read after the source was closed", url: url) }
            if let index = state.idle.firstIndex(where: { $0.position == offset }) {
                return (state.idle.remove(at: index), nil, state.piece)
            }
            return (nil, state.handles.popLast(), state.piece)
        }
        if let stream = taken.0 { return stream }
        var end = min(length, (offset / window + 1) * window)
        if taken.2 > 0 { end = min(end, (offset / taken.2 + 1) * taken.2) }
        let stream = RemoteRangeStream(source: self, range: offset..<end)
        let added = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.live[ObjectIdentifier(stream)] = stream
            return true
        }
        guard added else {
            taken.1?.easy.cleanup()
            throw RemoteSourceError(.closed, "read after the source was closed", url: url)
        }
        try stream.start(easy: taken.1?.easy)
        return stream
    }

    /// Keeps a stream for the reader that goes on where it stands (the oldest past the limit ends).
    private func checkIn(_ stream: RemoteRangeStream) {
        guard !stream.isExhausted else { return retire(stream) }
        let evicted = state.withLock { state -> RemoteRangeStream? in
            guard !state.closed else { return stream }
            state.idle.append(stream)
            guard state.idle.count > Self.idleLimit else { return nil }
            let oldest = state.idle.removeFirst()
            state.live[ObjectIdentifier(oldest)] = nil
            return oldest
        }
        evicted?.close()
    }

    /// Ends a stream that is done with; its thread returns its handle.
    private func retire(_ stream: RemoteRangeStream) {
        state.withLock { $0.live[ObjectIdentifier(stream)] = nil }
        stream.close()
    }

    /// Takes back a handle whose GET ended cleanly, for the next GET's connection.
    package func recycle(_ easy: CurlEasy) {
        let kept = state.withLock { state -> Bool in
            guard !state.closed, state.handles.count < Self.idleLimit else { return false }
            state.handles.append(IdleHandle(easy: easy))
            return true
        }
        if !kept { easy.cleanup() }
    }
}

/// The stall timeout's clock for one thread's transfer: the time since the last sign of life.
///
/// - Important: Used by the one thread that performs the transfer.
package final class StallClock: @unchecked Sendable {
    // @unchecked: one thread uses it (the Important note).
    private let timeout: Duration
    private var last = ContinuousClock.now
    private(set) var expired = false

    package init(timeout: Duration) { self.timeout = timeout }

    /// Something happened now.
    package func reset() {
        last = .now
        expired = false
    }

    /// Whether the last sign of life is within the timeout; records when it is not.
    package func isWithin() -> Bool {
        if ContinuousClock.now - last > timeout { expired = true }
        return !expired
    }
}

#endif
