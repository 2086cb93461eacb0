#if canImport(CCurl)
import CCurl
import Foundation
import SluiceByteSources
import SluiceRequests

// libcurl's callbacks, all called on the transfer's thread from inside curl_multi_perform.
extension CurlTransfer {
    /// CURLOPT_READFUNCTION: fills curl's buffer straight from the source.
    ///
    /// Random-access sources are read at the tracked offset into curl's own buffer (one that
    /// reads ahead, when its next bytes are not ready, pauses the transfer until it wakes the
    /// loop); a producer's ring is copied out, and an empty ring pauses the transfer until the
    /// producer wakes the loop. A source that ends early or fails aborts the transfer.
    package func readBody(_ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
        guard let limit = options.rateLimit, buffer != nil, capacity > 0 else { return readSource(buffer, capacity) }
        switch limit.take(upTo: capacity) {
        case .wait(let delay):
            // Over the cap: pause; the loop resumes the transfer when the bucket has refilled.
            onLoop.paused = true
            onLoop.rateResume = .now + delay
            return Int(SLUICE_CURL_READFUNC_PAUSE)
        case .send(let granted):
            let result = readSource(buffer, granted)
            // What was not sent (a short read, the end, a pause or an abort code) goes back.
            let used = (0...granted).contains(result) ? result : 0
            if used < granted { limit.giveBack(granted - used) }
            return result
        }
    }

    /// Fills up to `capacity` bytes of curl's buffer from the body, without the rate limit.
    private func readSource(_ buffer: UnsafeMutablePointer<CChar>?, _ capacity: Int) -> Int {
        guard let buffer, capacity > 0 else { return 0 }
        let target = UnsafeMutableRawBufferPointer(start: buffer, count: capacity)
        switch onLoop.reader {
        case .none:
            return 0
        case .random(let source, let start, let length):
            let remaining = length - onLoop.position
            guard remaining > 0 else { return 0 }
            let wanted = Int(min(Int64(capacity), remaining))
            let offset = start + onLoop.position
            do {
                let slice = UnsafeMutableRawBufferPointer(rebasing: target[..<wanted])
                let read: Int?
                if let ahead = source as? any ReadAheadByteSource {
                    // Never waits for the read-ahead: pause, and let it wake the loop.
                    read = try ahead.read(into: slice, at: offset) { [weak self] in self?.wakeUp() }
                } else {
                    read = try source.read(into: slice, at: offset)
                }
                guard let count = read else {
                    onLoop.paused = true
                    return Int(SLUICE_CURL_READFUNC_PAUSE)
                }
                guard count > 0 else { return abort(.sourceEndedEarly(at: offset, expected: start + length)) }
                onLoop.position += Int64(min(count, wanted))
                return min(count, wanted)
            } catch {
                return abort(.sourceFailed(error, at: offset))
            }
        case .pipe(let pipe):
            switch pipe.pull(into: target) {
            case .bytes(let count):
                onLoop.position += Int64(count)
                return count
            case .end:
                return 0
            case .empty:
                onLoop.paused = true
                return Int(SLUICE_CURL_READFUNC_PAUSE)
            case .failed(let error):
                return abort(error)
            }
        case .descriptor(let stream):
            return readDescriptor(stream, into: target)
        }
    }

    /// Reads a descriptor body straight into curl's buffer; pauses while it has no bytes.
    private func readDescriptor(_ stream: FileDescriptorStream, into target: UnsafeMutableRawBufferPointer) -> Int {
        let expected = stream.length.value
        var ready = pollfd(fd: stream.fd, events: Int16(POLLIN), revents: 0)
        if poll(&ready, 1, 0) == 0 {
            onLoop.paused = true
            onLoop.pausedDescriptor = stream.fd
            return Int(SLUICE_CURL_READFUNC_PAUSE)
        }
        var wanted = target.count
        if let expected, expected - onLoop.position < Int64(wanted) {
            // One byte past the declared length is enough to notice a source that holds more.
            wanted = Int(expected - onLoop.position) + 1
        }
        let count: Int
        do {
            count = try stream.read(into: UnsafeMutableRawBufferPointer(rebasing: target[..<wanted]))
        } catch {
            return abort(.sourceFailed(error, at: onLoop.position, totalBytes: expected))
        }
        if count == 0 {
            if let expected, onLoop.position < expected {
                return abort(.sourceEndedEarly(at: onLoop.position, expected: expected, totalBytes: expected))
            }
            onLoop.descriptorEnded = true
            return 0
        }
        if let expected, onLoop.position + Int64(count) > expected {
            return abort(
                UploadError(
                    .sourceFailed, "the source holds more than its declared \(expected) bytes",
                    totalBytes: expected, offset: expected))
        }
        onLoop.position += Int64(count)
        return count
    }

    private func abort(_ error: UploadError) -> Int {
        onLoop.failure = error
        return Int(SLUICE_CURL_READFUNC_ABORT)
    }

    /// CURLOPT_SEEKFUNCTION: libcurl rewinds to replay the body (an auth round, a retry).
    ///
    /// A random-access body restarts at the asked offset; any other body accepts only a
    /// rewind to where it already is (nothing sent yet) and otherwise fails the transfer
    /// with `.notReplayable` rather than send something else.
    package func seekBody(to offset: Int64, origin: Int32) -> Int32 {
        guard origin == SEEK_SET else { return SLUICE_CURL_SEEKFUNC_CANTSEEK }
        if offset == onLoop.position { return SLUICE_CURL_SEEKFUNC_OK }
        switch onLoop.reader {
        case .random(_, _, let length) where offset >= 0 && offset <= length:
            onLoop.position = offset
            return SLUICE_CURL_SEEKFUNC_OK
        default:
            onLoop.failure = UploadError(
                .notReplayable,
                "the server asked for the body again after \(onLoop.position) bytes (an auth challenge or a retry) and it cannot be replayed",
                bytesSent: onLoop.position, totalBytes: body.length.value)
            return SLUICE_CURL_SEEKFUNC_FAIL
        }
    }

    /// CURLOPT_HEADERFUNCTION: keeps the headers of the latest response only.
    package func receiveHeader(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let buffer, count > 0 else { return count }
        var bytes = UnsafeRawBufferPointer(start: buffer, count: count)[...]
        while let last = bytes.last, last == 0x0A || last == 0x0D { bytes = bytes.dropLast() }
        let line = String(decoding: bytes, as: UTF8.self)
        onLoop.answer.received(count)
        if line.hasPrefix("HTTP/") {
            // A new status line (100 Continue, a 401 before the auth round, the final answer).
            onLoop.responseHeaders = []
            let status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
            // A final answer begins the answer's clock, even before the body is all sent.
            if status >= 200 { onLoop.answer.begin(at: .now) }
            if status == 417 { rewindForResendAfterRefusedExpectation() }
            responseBody.begin(status: status)
        } else if let colon = line.firstIndex(of: ":"), HTTPSyntax.isToken(line[..<colon]) {
            onLoop.responseHeaders.append(HTTPHeader(name: String(line[..<colon]), value: String(line[line.index(after: colon)...])))
        }
        return count
    }

    /// A 417 to `Expect: 100-continue`: libcurl sends the request again without Expect. When the
    /// server closed the connection with its 417, libcurl 7.88 does so without rewinding the body:
    /// the second request declares the whole `Content-Length` and carries only the rest, the
    /// server waits for bytes that never come, and the attempt ends only at the stall timeout.
    /// A random-access body starts again at byte 0 here, as libcurl's own rewind does when the
    /// server drained the refused body (its seek to 0 then finds the body there). Another body
    /// cannot start again: its resend fails as before.
    private func rewindForResendAfterRefusedExpectation() {
        guard case .random = onLoop.reader else { return }
        onLoop.position = 0
    }

    /// CURLOPT_WRITEFUNCTION: hands the response body to `responseBody` (kept or streamed);
    /// a sink that throws aborts the transfer.
    package func receiveBody(_ buffer: UnsafeMutablePointer<CChar>?, _ count: Int) -> Int {
        guard let buffer, count > 0 else { return count }
        onLoop.answer.receivedBody(UnsafeRawBufferPointer(start: buffer, count: count), at: .now)
        do {
            try responseBody.receive(UnsafeRawBufferPointer(start: buffer, count: count))
            return count
        } catch {
            onLoop.failure = error as? UploadError ?? UploadError(.responseSinkFailed, "\(error)", underlying: error)
            return 0
        }
    }

    /// Whether libcurl has sent the whole body (`uploaded`, its count of the attempt's bytes).
    private func bodyAllSent(_ uploaded: Int64) -> Bool {
        switch onLoop.reader {
        case .none: return true
        case .random(_, _, let length): return uploaded >= length
        case .pipe(let pipe): return pipe.isComplete(pulled: onLoop.position) && uploaded >= onLoop.position
        case .descriptor: return onLoop.descriptorEnded && uploaded >= onLoop.position
        }
    }

    /// CURLOPT_XFERINFOFUNCTION (libcurl calls it at least once a second): reports bytes sent,
    /// aborts when cancelled, and holds the answer to `AnswerPace` once the body is all sent.
    package func reportProgress(_ uploaded: Int64) -> Int32 {
        if isCancelled { return 1 }
        // The clock is read only where an answer is timed: from the body's last byte (or a
        // keep-alive answer's silence from the start); before that, no check can fail.
        // (`hasBegun` asked once: a call into another module, once a callback.)
        var timed = onLoop.answer.hasBegun
        var now: ContinuousClock.Instant?
        if !timed, bodyAllSent(uploaded) {
            now = .now
            onLoop.answer.begin(at: now!)
            timed = true
        }
        if timed || onLoop.answer.keepAlive != nil {
            let now = now ?? .now
            if let violation = onLoop.answer.check(at: now) ?? onLoop.answer.checkSilence(sent: uploaded, at: now) {
                onLoop.failure = UploadError(
                    .timedOut, violation.describe(host: onLoop.url.hostAndPort),
                    bytesSent: bytesSent, totalBytes: body.length.value)
                return 1
            }
        }
        if case .none = onLoop.reader { return 0 }
        let sent = min(uploaded, onLoop.position)
        if sent != onLoop.lastReported {
            onLoop.lastReported = sent
            progress(sent)
        }
        return 0
    }
}
#endif
