import Foundation
import Sluice
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LoopbackReceiver {
    /// How a connection's descriptor is closed once it has been served.
    enum Closing {
        /// Everything sent was read: close at once.
        case now
        /// An error response went out before the request was read: drain, then close.
        case lingering
    }

    /// A connection's fixed receive buffer; `start ..< end` holds bytes not yet consumed.
    struct ReceiveBuffer {
        let storage: UnsafeMutableRawBufferPointer
        var start = 0
        var end = 0

        init(capacity: Int) {
            storage = .allocate(byteCount: capacity, alignment: 16)
        }

        func deallocate() { storage.deallocate() }

        var isEmpty: Bool { start == end }
        var count: Int { end - start }
        var unread: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: storage[start..<end]) }

        /// Receives more bytes after the unread ones, moving those to the front first when the
        /// buffer's tail is full.
        mutating func fill(from fd: Int32) -> ReceiverSocket.Received {
            if isEmpty {
                start = 0
                end = 0
            } else if end == storage.count {
                storage.baseAddress!.copyMemory(from: storage.baseAddress! + start, byteCount: count)
                end = count
                start = 0
            }
            let received = ReceiverSocket.receive(fd, into: UnsafeMutableRawBufferPointer(rebasing: storage[end...]))
            if case .bytes(let n) = received { end += n }
            return received
        }
    }

    /// Where one body goes while it arrives: the digest and, with a store directory, a file.
    final class BodySink {
        let digest = Digest(.sha256)
        private(set) var bytes: Int64 = 0
        private var file: Int32 = -1
        private var temporaryPath: String?
        private(set) var finalPath: String?

        init(directory: String?, path: String, connection: Int, request: Int, number: () -> Int) throws(Errno) {
            guard let directory else { return }
            let name = Self.fileName(forPath: path) ?? "upload-\(number())"
            let finalPath = directory.hasSuffix("/") ? directory + name : directory + "/" + name
            let temporaryPath = "\(directory)/.\(name).part-\(connection)-\(request)"
            let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw Errno(code: errno) }
            self.file = fd
            self.temporaryPath = temporaryPath
            self.finalPath = finalPath
        }

        /// The stored name for a request path: its last component, percent-decoded, with
        /// every byte outside `A-Z a-z 0-9 . _ -` replaced by `_` and a leading `.` too;
        /// nil when nothing is left.
        static func fileName(forPath path: String) -> String? {
            guard let last = path.split(separator: "/").last else { return nil }
            var decoded: [UInt8] = []
            var bytes = Array(last.utf8)[...]
            while let byte = bytes.popFirst() {
                if byte == UInt8(ascii: "%"), bytes.count >= 2,
                    let high = HTTPSyntax.hexValue(bytes[bytes.startIndex]),
                    let low = HTTPSyntax.hexValue(bytes[bytes.startIndex + 1])
                {
                    decoded.append(high << 4 | low)
                    bytes = bytes.dropFirst(2)
                } else {
                    decoded.append(byte)
                }
            }
            let safe = decoded.prefix(200).enumerated().map { index, byte -> UInt8 in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "-"):
                    return byte
                case UInt8(ascii: "."):
                    return index == 0 ? UInt8(ascii: "_") : byte
                default:
                    return UInt8(ascii: "_")
                }
            }
            return safe.isEmpty ? nil : String(decoding: safe, as: UTF8.self)
        }

        func write(_ chunk: UnsafeRawBufferPointer) throws(Errno) {
            digest.update(chunk)
            bytes += Int64(chunk.count)
            if file >= 0 { try Syscall.writeAll(file, chunk) }
        }

        /// Closes the file and gives it its final name.
        func commit() throws(Errno) {
            guard file >= 0, let temporaryPath, let finalPath else { return }
            let fd = file
            file = -1
            guard close(fd) == 0 else { throw Errno(code: errno) }
            guard rename(temporaryPath, finalPath) == 0 else { throw Errno(code: errno) }
            self.temporaryPath = nil
        }

        /// Closes and removes a partial file.
        func discard() {
            if file >= 0 { _ = close(file) }
            file = -1
            if let temporaryPath { _ = unlink(temporaryPath) }
            temporaryPath = nil
            finalPath = nil
        }
    }

    /// How reading one body ended.
    private enum BodyOutcome {
        case complete(trailers: [HTTPHeader])
        /// The connection ended or failed mid-body.
        case cut(reason: String)
        /// The body's framing was malformed: answer 400.
        case malformed(String)
        /// Storing failed: answer 500.
        case storeFailed(Errno)
    }

    /// Serves requests on one connection until it closes, fails, or a response says `close`.
    func serve(connection id: Int, fd: Int32) -> Closing {
        var buffer = ReceiveBuffer(capacity: Self.bufferSize)
        defer { buffer.deallocate() }
        var requestNumber = 0
        while true {
            // The head: up to the first empty line.
            var headLength: Int?
            var scanned = 0
            while headLength == nil {
                headLength = Self.headLength(buffer.unread, scannedAlready: &scanned)
                if headLength != nil { break }
                if buffer.count >= Self.maxHeadBytes {
                    ReceiverSocket.sendAll(fd, Self.errorResponse(status: 431, reason: "request head too large", head: nil))
                    log("connection \(id): request head larger than \(Self.maxHeadBytes) bytes")
                    return .lingering
                }
                switch buffer.fill(from: fd) {
                case .bytes:
                    continue
                case .closed, .timedOut, .failed:
                    if !buffer.isEmpty && !isStopping {
                        log("connection \(id): closed in the middle of a request head")
                    }
                    return .now
                }
            }
            requestNumber += 1
            let head: HTTPRequestHead
            let framing: HTTPRequestHead.Framing
            let expectsContinue: Bool
            do throws(HTTPRequestHead.Rejection) {
                head = try HTTPRequestHead.parse(UnsafeRawBufferPointer(rebasing: buffer.unread[..<headLength!]))
                framing = try head.framing()
                expectsContinue = try head.expectsContinue()
            } catch {
                ReceiverSocket.sendAll(fd, Self.errorResponse(status: error.status, reason: error.reason, head: nil))
                log("connection \(id): rejected request: \(error.status) \(error.reason)")
                return .lingering
            }
            buffer.start += headLength!

            let sink: BodySink
            do throws(Errno) {
                sink = try BodySink(
                    directory: storeDirectory, path: head.path, connection: id, request: requestNumber,
                    number: nextStoreNumber
                )
            } catch {
                ReceiverSocket.sendAll(fd, Self.errorResponse(status: 500, reason: "cannot store: errno \(error.code)", head: head))
                log("connection \(id): cannot create a file in \(storeDirectory ?? "-"): errno \(error.code)")
                return .lingering
            }
            var sentContinue = false
            if expectsContinue, framing != .none, framing != .length(0) {
                sentContinue = ReceiverSocket.sendAll(fd, Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
            }
            let outcome = readBody(framing, from: fd, buffer: &buffer, into: sink)
            let failure = { (reason: String) in
                let expected: Int64? = if case .length(let length) = framing { length } else { nil }
                self.record(
                    FailedUpload(
                        method: head.method, path: head.path, bytesReceived: sink.bytes,
                        expectedBytes: expected, reason: reason, connection: id
                    ))
            }
            let trailers: [HTTPHeader]
            switch outcome {
            case .complete(let fields):
                trailers = fields
            case .cut(let reason):
                sink.discard()
                failure(reason)
                return .now
            case .malformed(let reason):
                sink.discard()
                failure("malformed chunked body: \(reason)")
                ReceiverSocket.sendAll(fd, Self.errorResponse(status: 400, reason: reason, head: head))
                return .lingering
            case .storeFailed(let error):
                sink.discard()
                failure("cannot store the body: \(String(cString: strerror(error.code)))")
                ReceiverSocket.sendAll(fd, Self.errorResponse(status: 500, reason: "cannot store the body", head: head))
                return .lingering
            }
            do throws(Errno) {
                try sink.commit()
            } catch {
                sink.discard()
                failure("cannot store the body: \(String(cString: strerror(error.code)))")
                ReceiverSocket.sendAll(fd, Self.errorResponse(status: 500, reason: "cannot store the body", head: head))
                return .now
            }

            let keepAlive = head.keepAlive
            var upload = ReceivedUpload(
                method: head.method,
                target: head.target,
                path: head.path,
                bytes: sink.bytes,
                sha256: sink.digest.finalizeHex(),
                chunked: framing == .chunked,
                contentLength: { if case .length(let length) = framing { return length } else { return nil } }(),
                expectedContinue: sentContinue,
                headers: head.headers,
                trailers: trailers,
                storedPath: sink.finalPath,
                connection: id,
                requestOnConnection: requestNumber,
                json: ""
            )
            upload.json = Self.json(for: upload)
            record(upload)
            onUpload?(upload)
            let body = Array(upload.json.utf8)
            // The ETag is the body's SHA-256: what stores it proves, as S3's ETag does (S3
            // clients count a write only with one).
            var response = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: \"\(upload.sha256)\"\r\n"
            response += "Content-Length: \(body.count)\r\nConnection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
            var bytes = Array(response.utf8)
            if head.method != "HEAD" { bytes += body }
            guard ReceiverSocket.sendAll(fd, bytes), keepAlive else { return .now }
        }
    }

    /// Reads one body into `sink`, leaving any bytes after it in `buffer`.
    private func readBody(
        _ framing: HTTPRequestHead.Framing,
        from fd: Int32,
        buffer: inout ReceiveBuffer,
        into sink: BodySink
    ) -> BodyOutcome {
        func more() -> String? {
            switch buffer.fill(from: fd) {
            case .bytes: return nil
            case .closed: return isStopping ? "receiver stopped" : "connection closed by the client"
            case .timedOut: return "no data for \(idleTimeoutSeconds) s"
            case .failed(let code): return String(cString: strerror(code))
            }
        }
        do {
            switch framing {
            case .none:
                return .complete(trailers: [])
            case .length(let length):
                var remaining = length
                while remaining > 0 {
                    if buffer.isEmpty, let reason = more() { return .cut(reason: reason) }
                    let count = Int(min(remaining, Int64(buffer.count)))
                    try sink.write(UnsafeRawBufferPointer(rebasing: buffer.unread[..<count]))
                    buffer.start += count
                    remaining -= Int64(count)
                }
                return .complete(trailers: [])
            case .chunked:
                var decoder = ChunkedBodyDecoder()
                while !decoder.isFinished {
                    if buffer.isEmpty, let reason = more() { return .cut(reason: reason) }
                    do {
                        let consumed = try decoder.consume(buffer.unread) { try sink.write($0) }
                        buffer.start += consumed
                    } catch let failure as ChunkedBodyDecoder.Failure {
                        return .malformed(failure.description)
                    }
                }
                return .complete(trailers: decoder.trailers)
            }
        } catch let error as Errno {
            return .storeFailed(error)
        } catch {
            return .storeFailed(Errno(code: EIO))
        }
    }

    /// The length of the request head at the start of `bytes` (through its empty line), or
    /// nil when it is not complete yet. `scanned` carries how far earlier calls looked.
    ///
    /// A head ends at the first LF followed by CRLF or by a bare LF; the bare form is found so
    /// that the parser can reject it at once instead of waiting for a CRLF that never comes.
    static func headLength(_ bytes: UnsafeRawBufferPointer, scannedAlready scanned: inout Int) -> Int? {
        let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
        // Empty lines before the request line are allowed (RFC 9112 §2.2); skip them.
        var leading = 0
        while leading + 1 < bytes.count, bytes[leading] == cr, bytes[leading + 1] == lf { leading += 2 }
        var index = max(leading, scanned - 2)
        while index < bytes.count {
            if bytes[index] == lf {
                if index + 1 < bytes.count, bytes[index + 1] == lf { return index + 2 }
                if index + 2 < bytes.count, bytes[index + 1] == cr, bytes[index + 2] == lf { return index + 3 }
                if index + 2 >= bytes.count { break }
            }
            index += 1
        }
        scanned = index
        return nil
    }

    /// The `200` response's JSON body.
    static func json(for upload: ReceivedUpload) -> String {
        struct Answer: Encodable {
            var bytes: Int64
            var sha256: String
            var method: String
            var path: String
            var chunked: Bool
            var contentLength: Int64?
            var stored: String?

            enum CodingKeys: String, CodingKey {
                case bytes, sha256, method, path, chunked, stored
                case contentLength = "content_length"
            }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(bytes, forKey: .bytes)
                try container.encode(sha256, forKey: .sha256)
                try container.encode(method, forKey: .method)
                try container.encode(path, forKey: .path)
                try container.encode(chunked, forKey: .chunked)
                try container.encode(contentLength, forKey: .contentLength)  // null when absent
                try container.encodeIfPresent(stored, forKey: .stored)
            }
        }
        return encodeJSON(
            Answer(
                bytes: upload.bytes, sha256: upload.sha256, method: upload.method, path: upload.path,
                chunked: upload.chunked, contentLength: upload.contentLength, stored: upload.storedPath))
    }

    /// `value` as compact JSON.
    static func encodeJSON(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings, numbers and booleans always encode.
        return (try? String(decoding: encoder.encode(value), as: UTF8.self)) ?? "{}"
    }

    /// A complete error response that closes the connection.
    static func errorResponse(status: Int, reason: String, head: HTTPRequestHead?) -> [UInt8] {
        let phrases = [
            400: "Bad Request", 417: "Expectation Failed", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable",
            505: "HTTP Version Not Supported",
        ]
        struct Failure: Encodable { var error: String; var status: Int }
        let body = Array(encodeJSON(Failure(error: reason, status: status)).utf8)
        let text =
            "HTTP/1.1 \(status) \(phrases[status] ?? "Error")\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        return Array(text.utf8) + (head?.method == "HEAD" ? [] : body)
    }
}
