#if canImport(CCurl)
import CCurl
import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceRequests

/// One range of a `RemoteByteSource`: a pinned GET streamed on a thread of its own into a
/// ring that one reader at a time drains.
///
/// The GET's thread waits while the ring is full (so a slow reader slows the source, not
/// memory) and asks again from the byte it reached after a transient failure; an answer of
/// another version fails the stream once, for its reader.
///
/// - Important: Memory: `RemoteSourceOptions.bufferSize` for the ring, plus libcurl's 64 KiB
///   receive buffer. `close()` ends the GET at its next callback (at once when it waits for
///   room); the thread then ends by itself.
package final class RemoteRangeStream: @unchecked Sendable {
    // @unchecked: `ring` is read and written only with `state`'s lock held; the rest is `let`.
    /// The bytes this stream delivers.
    let range: Range<Int64>
    private let source: RemoteByteSource
    private let ring: UnsafeMutableRawBufferPointer
    private let state: Lock<State>

    private struct State {
        /// Where the ring's first unread byte is.
        var head = 0
        /// Unread bytes in the ring.
        var count = 0
        /// The offset of the next byte the reader gets.
        var position: Int64
        /// The offset of the next byte the GET delivers.
        var fetched: Int64
        var failure: RemoteSourceError?
        var closed = false
    }

    init(source: RemoteByteSource, range: Range<Int64>) {
        self.source = source
        self.range = range
        self.ring = .allocate(byteCount: max(source.options.bufferSize, 16 << 10), alignment: 16)
        self.state = Lock(State(position: range.lowerBound, fetched: range.lowerBound))
    }

    deinit { ring.deallocate() }

    /// The offset of the next byte the reader gets.
    var position: Int64 { state.withLock { $0.position } }

    /// Whether the reader got every byte of the range.
    var isExhausted: Bool { state.withLock { $0.position >= range.upperBound } }

    /// Starts the GET's thread.
    ///
    /// - Parameter easy: A handle with an open connection to reuse, or nil for a new one.
    func start(easy: CurlEasy?) throws {
        let handle = try easy ?? CurlEasy()
        let box = HandleBox(easy: handle)
        let thread = Thread { [self] in
            nameCurrentThread("sluice-source")
            fetch(box.easy)
        }
        thread.name = "sluice-source"
        thread.start()
    }

    private struct HandleBox: @unchecked Sendable {
        // @unchecked: handed from the starting thread to the GET's thread, then used only there.
        let easy: CurlEasy
    }

    /// Ends the GET; a read waiting on it fails. Idempotent.
    func close() {
        state.withLockBroadcasting { $0.closed = true }
    }

    /// Copies the next bytes of the range into `buffer`, waiting for them up to the stall timeout.
    ///
    /// - Returns: The bytes copied; 0 only at the range's end.
    /// - Throws: `RemoteSourceError`: the GET's failure, a stall, a close.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let capacity = ring.count
        let ring = self.ring
        let outcome = state.wait(timeout: source.options.stallTimeout.inSeconds) { state -> Result<Int, RemoteSourceError>? in
            if state.count > 0 {
                let count = min(state.count, buffer.count)
                let first = min(count, capacity - state.head)
                buffer.baseAddress!.copyMemory(from: ring.baseAddress! + state.head, byteCount: first)
                if first < count {
                    (buffer.baseAddress! + first).copyMemory(from: ring.baseAddress!, byteCount: count - first)
                }
                state.head = (state.head + count) % capacity
                state.count -= count
                state.position += Int64(count)
                return .success(count)
            }
            if let failure = state.failure { return .failure(failure) }
            if state.closed { return .failure(RemoteSourceError(.closed, "the source was closed", url: source.url)) }
            if state.position >= range.upperBound { return .success(0) }
            return nil
        }
        // The GET may wait for room.
        state.broadcast()
        guard let outcome else {
            throw RemoteSourceError(
                .stalled, "sent nothing for \(source.options.stallTimeout) at byte \(position)", url: source.url, offset: position)
        }
        return try outcome.get()
    }

    /// Puts a piece of the GET's body into the ring, waiting for room.
    ///
    /// - Returns: false when the stream was closed (the GET stops).
    private func deliver(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let capacity = ring.count
        let ring = self.ring
        var done = 0
        while done < bytes.count {
            let copied = state.wait { state -> Int? in
                if state.closed { return -1 }
                let room = capacity - state.count
                guard room > 0 else { return nil }
                let count = min(room, bytes.count - done)
                let tail = (state.head + state.count) % capacity
                let first = min(count, capacity - tail)
                (ring.baseAddress! + tail).copyMemory(from: bytes.baseAddress! + done, byteCount: first)
                if first < count {
                    ring.baseAddress!.copyMemory(from: bytes.baseAddress! + done + first, byteCount: count - first)
                }
                state.count += count
                state.fetched += Int64(count)
                return count
            }
            guard copied > 0 else { return false }
            state.broadcast()
            done += copied
        }
        return true
    }

    /// `deliver`, grant by grant of `RemoteSourceOptions.rateLimit` when there is one, waiting
    /// while the cap holds none (a close ends the wait at once).
    ///
    /// - Returns: false when the stream was closed (the GET stops).
    private func deliverPaced(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let limit = source.options.rateLimit else { return deliver(bytes) }
        var done = 0
        while done < bytes.count {
            switch limit.take(upTo: bytes.count - done) {
            case .send(let granted):
                guard deliver(UnsafeRawBufferPointer(rebasing: bytes[done..<(done + granted)])) else {
                    limit.giveBack(granted)
                    return false
                }
                done += granted
            case .wait(let delay):
                if state.wait(timeout: delay.inSeconds, { $0.closed ? true : nil }) != nil { return false }
            }
        }
        return true
    }

    private func fail(_ error: RemoteSourceError) {
        state.withLockBroadcasting { if $0.failure == nil { $0.failure = error } }
    }

    /// What to do with an answer's headers.
    private enum Verdict {
        case body
        case redirect([String: String])
        case refuse(RemoteSourceError)
    }

    /// The GET's thread: asks for what is missing of the range until it all came, the
    /// stream is closed, or an answer fails it.
    private func fetch(_ easy: CurlEasy) {
        let options = source.options
        let exchange = RemoteExchange()
        let clock = StallClock(timeout: options.stallTimeout)
        var location = source.home
        var redirects = 0
        var failuresInARow = 0
        var verdict: Verdict?
        var asked: ClosedRange<Int64> = range.lowerBound...range.lowerBound
        exchange.accept = { [unowned self] status, fields in
            verdict = self.judge(status: status, fields: fields, asked: asked)
            if case .body = verdict { return true }
            return false
        }
        exchange.body = { [unowned self] bytes in
            clock.reset()
            let fits = self.state.withLock { $0.fetched + Int64(bytes.count) <= self.range.upperBound }
            guard fits else {
                verdict = .refuse(
                    RemoteSourceError(
                        .shortRange, "sent more than the \(asked.count) bytes of range \(asked.lowerBound)-\(asked.upperBound)", url: self.source.url, offset: asked.lowerBound))
                return false
            }
            let delivered = self.deliverPaced(bytes)
            clock.reset()
            return delivered
        }
        exchange.tick = { [unowned self] in
            !self.state.withLock { $0.closed } && clock.isWithin()
        }
        while true {
            let (closed, fetched) = state.withLock { ($0.closed, $0.fetched) }
            if closed { return easy.cleanup() }
            if fetched >= range.upperBound {
                return source.recycle(easy)
            }
            asked = fetched...(range.upperBound - 1)
            var pins = [HTTPHeader(name: "Range", value: "bytes=\(asked.lowerBound)-\(asked.upperBound)")]
            if let validator = source.validator { pins.append(validator.condition) }
            verdict = nil
            clock.reset()
            let code: Int32
            do {
                let headers = try RemoteByteSource.headers(for: location, method: "GET", adding: pins, options: options)
                code = try exchange.perform(easy, url: location.url, head: false, headers: headers, options: options)
            } catch {
                fail(RemoteSourceError(.transport, "\(error)", url: source.url, offset: fetched, underlying: error))
                return easy.cleanup()
            }
            let (closedNow, reached) = state.withLock { ($0.closed, $0.fetched) }
            if closedNow { return easy.cleanup() }
            if reached > fetched { failuresInARow = 0 }
            let failure: RemoteSourceError
            switch verdict {
            case .redirect(let fields):
                redirects += 1
                do {
                    location = try RemoteByteSource.follow(
                        from: location, fields: fields, redirects: redirects, original: source.url, options: options)
                } catch let error as RemoteSourceError {
                    fail(error)
                    return easy.cleanup()
                } catch {
                    return easy.cleanup()
                }
                continue
            case .refuse(let error):
                failure = error
            case .body where code == SLUICE_CURLE_OK:
                if reached >= range.upperBound { continue }
                failure = RemoteSourceError(
                    .shortRange, "the answer for bytes \(asked.lowerBound)-\(asked.upperBound) ended after \(reached - fetched) bytes",
                    url: source.url, offset: reached)
            case .body, nil:
                if clock.expired {
                    failure = RemoteSourceError(.stalled, "sent nothing for \(options.stallTimeout) at byte \(reached)", url: source.url, offset: reached)
                } else {
                    failure = RemoteSourceError(
                        CurlError.transientCodes.contains(code) ? .transport : .status,
                        "bytes \(reached)-\(asked.upperBound): \(exchange.failureText(code))", url: source.url, offset: reached,
                        underlying: CurlError(code: code))
                }
            }
            failuresInARow += 1
            guard failure.isTransient, failuresInARow <= options.retry.retries else {
                fail(failure)
                return easy.cleanup()
            }
            let delay = options.retry.delay(attempt: failuresInARow).inSeconds
            // A close ends the wait at once.
            _ = state.wait(timeout: delay) { $0.closed ? true : nil }
        }
    }

    /// Whether an answer to a pinned range request is that range of the pinned version.
    private func judge(status: Int, fields: [String: String], asked: ClosedRange<Int64>) -> Verdict {
        let url = source.url
        let span = "bytes \(asked.lowerBound)-\(asked.upperBound)"
        switch status {
        case 206:
            guard let (first, last, total) = Self.contentRange(fields["content-range"]) else {
                return .refuse(RemoteSourceError(.shortRange, "answered 206 to \(span) without a usable Content-Range", url: url, offset: asked.lowerBound, status: status))
            }
            if total != source.length {
                return .refuse(
                    RemoteSourceError(
                        .changed, "the source changed: it is now \(total.map(String.init) ?? "*") bytes, was \(source.length) (at \(span))", url: url, offset: asked.lowerBound,
                        status: status))
            }
            if let mismatch = source.validator?.mismatch(in: fields) {
                return .refuse(RemoteSourceError(.changed, "the source changed: \(mismatch) (at \(span))", url: url, offset: asked.lowerBound, status: status))
            }
            guard first == asked.lowerBound, last == asked.upperBound else {
                return .refuse(RemoteSourceError(.shortRange, "answered bytes \(first)-\(last) to a request for \(span)", url: url, offset: asked.lowerBound, status: status))
            }
            if let text = fields["content-length"], let count = Int64(text), count != Int64(asked.count) {
                return .refuse(
                    RemoteSourceError(.shortRange, "answered \(count) bytes to a request for the \(asked.count) of \(span)", url: url, offset: asked.lowerBound, status: status))
            }
            return .body
        case 200:
            return .refuse(
                RemoteSourceError(
                    .rangeIgnored, "answered 200 (the whole object) to a request for \(span): it does not serve ranges, or the source changed", url: url, offset: asked.lowerBound,
                    status: status))
        case 412:
            let pin = source.validator.map { " (pinned by its \($0))" } ?? ""
            return .refuse(
                RemoteSourceError(.changed, "the source changed since it was opened: 412 Precondition Failed for \(span)\(pin)", url: url, offset: asked.lowerBound, status: status)
            )
        case 416:
            return .refuse(
                RemoteSourceError(
                    .changed, "the source changed since it was opened: 416 Range Not Satisfiable for \(span) of its \(source.length) bytes", url: url, offset: asked.lowerBound,
                    status: status))
        case 301, 302, 303, 307, 308:
            return .redirect(fields)
        default:
            return .refuse(RemoteSourceError(.status, "answered \(status) to \(span)", url: url, offset: asked.lowerBound, status: status))
        }
    }

    /// `bytes FIRST-LAST/TOTAL` (TOTAL may be `*`, nil then).
    package static func contentRange(_ text: String?) -> (Int64, Int64, Int64?)? {
        guard let text, text.lowercased().hasPrefix("bytes ") else { return nil }
        let rest = text.dropFirst(6)
        guard let dash = rest.firstIndex(of: "-"), let slash = rest.firstIndex(of: "/"), dash < slash,
            let first = Int64(rest[..<dash].trimmingCharacters(in: .whitespaces)),
            let last = Int64(rest[rest.index(after: dash)..<slash].trimmingCharacters(in: .whitespaces)), first <= last
        else { return nil }
        let totalText = rest[rest.index(after: slash)...].trimmingCharacters(in: .whitespaces)
        if totalText == "*" { return (first, last, nil) }
        guard let total = Int64(totalText) else { return nil }
        return (first, last, total)
    }
}
#endif
