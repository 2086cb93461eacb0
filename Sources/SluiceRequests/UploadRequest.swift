import Foundation

/// An HTTP header: a name and a value.
///
/// Made without checks; a transport refuses a request whose header could start another
/// header or break the request line (see `validate()`), before it sends a byte.
public struct HTTPHeader: Sendable, Hashable, CustomStringConvertible {
    /// The header's name, sent as given (names compare case-insensitively).
    public let name: String
    /// The header's value, sent as given.
    public let value: String

    /// A header `name: value`; a transport checks both before it sends a byte.
    ///
    /// - Parameters:
    ///   - name: An RFC 9110 token (checked when sent).
    ///   - value: Sent without its leading and trailing whitespace; no CR, LF or NUL (checked when sent).
    public init(name: String, value: String) {
        self.name = name
        self.value = Self.trimmed(value)
    }

    /// `value` without leading and trailing `.whitespaces` (Unicode Zs and tab). ASCII blanks
    /// are cut byte by byte; Foundation is asked only when a non-ASCII byte is at either end,
    /// where a Unicode space could be (a header is made for every request and every response
    /// line: Foundation's trim was 8 % of a job's CPU).
    package static func trimmed(_ value: String) -> String {
        let bytes = value.utf8
        guard let first = bytes.firstIndex(where: { !HTTPSyntax.isBlank($0) }) else { return "" }
        let last = bytes.lastIndex(where: { !HTTPSyntax.isBlank($0) })!
        guard bytes[first] < 0x80, bytes[last] < 0x80 else { return value.trimmingCharacters(in: .whitespaces) }
        if first == bytes.startIndex, last == bytes.index(before: bytes.endIndex) { return value }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }

    /// Checks that the header can be sent as it is.
    ///
    /// - Throws: `UploadError.invalidHeader` when the name is not an RFC 9110 token or the
    ///   value holds CR, LF or NUL.
    public func validate() throws(UploadError) {
        guard HTTPSyntax.isToken(name) else {
            throw UploadError.invalidHeader("header name '\(name.debugDescription.dropFirst().dropLast())' is not a valid token")
        }
        guard !HTTPSyntax.breaksFieldValue(value) else {
            throw UploadError.invalidHeader("header '\(name)' has a CR, LF or NUL in its value")
        }
    }

    public var description: String { "\(name): \(value)" }

    /// The value of the first of `headers` named `name` (in any case), or nil. Each header is
    /// looked at where it is, not copied out (a copy retained its name and value: a lookup a
    /// request's setup makes several times, issue 37.11).
    package static func value(of name: String, in headers: [HTTPHeader]) -> String? {
        headers.withUnsafeBufferPointer { headers in
            for index in headers.indices where HTTPSyntax.namesMatch(headers[index].name, name) { return headers[index].value }
            return nil
        }
    }
}

/// Where and how to send a body.
public struct UploadRequest: Sendable {
    /// Where the body goes: an http or https URL.
    public var url: URL
    /// The HTTP method (`POST`, `PUT`, `PATCH`, …).
    public var method: String
    /// Headers sent with the request, in order, besides the ones the transport adds (length, host).
    public var headers: [HTTPHeader]

    /// A request to `url`.
    ///
    /// - Throws: `UploadError.invalidURL` unless the URL is http or https with a host and a
    ///   port from 1 to 65535; `UploadError.invalidOption` for a method that is not a token.
    public init(url: URL, method: String = "POST", headers: [HTTPHeader] = []) throws(UploadError) {
        guard url.isHTTPWithHost else { throw UploadError.invalidURL(url.absoluteString) }
        if let port = url.port, !(1...65535).contains(port) {
            throw UploadError(.invalidURL, "invalid URL '\(url.absoluteString)': port \(port) is not from 1 to 65535")
        }
        guard HTTPSyntax.isToken(method) else {
            throw UploadError(.invalidOption, "method '\(method.debugDescription.dropFirst().dropLast())' is not a valid token (RFC 9110: letters, digits and !#$%&'*+-.^_`|~)")
        }
        self.url = url
        self.method = method
        self.headers = headers
    }

    /// Parses a URL string as given on a command line.
    ///
    /// - Throws: `UploadError.invalidURL` also for a space or a control character (CR, LF,
    ///   NUL ...) anywhere in `string`: they must be percent-encoded, never sent or fixed up.
    public init(url string: String, method: String = "POST", headers: [HTTPHeader] = []) throws(UploadError) {
        if string.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) {
            throw UploadError(.invalidURL, "invalid URL \(string.debugDescription): it holds a space or a control character (percent-encode it)")
        }
        guard let url = URL(string: string) else { throw UploadError.invalidURL(string) }
        try self.init(url: url, method: method, headers: headers)
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        HTTPHeader.value(of: name, in: headers)
    }

    /// Checks every header (transports call it before sending).
    ///
    /// - Throws: `UploadError.invalidHeader` for the first header that cannot be sent.
    public func validate() throws(UploadError) {
        for header in headers { try header.validate() }
    }
}

/// What the server answered.
public struct UploadResponse: Sendable {
    /// The HTTP status of the final answer (after redirects and 401 replays).
    public var status: Int
    /// The answer's headers, in the order received.
    public var headers: [HTTPHeader]
    /// The response body as kept by `UploadOptions.responseBody`: empty when it was streamed,
    /// at most the limit when collected (see `isBodyTruncated`).
    public var body: Data
    /// Body bytes sent in the request that got this response.
    public var bytesSent: Int64
    /// The URL that answered, after redirects.
    public var url: URL
    /// Bytes of response body the server sent, whether kept, streamed or dropped.
    public var bodyByteCount: Int64
    /// The body was longer than the collect limit: `body` holds only its first bytes.
    public var isBodyTruncated: Bool

    /// Creates a response; `bodyByteCount` defaults to the size of `body`.
    public init(
        status: Int, headers: [HTTPHeader], body: Data, bytesSent: Int64, url: URL,
        bodyByteCount: Int64? = nil, isBodyTruncated: Bool = false
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bytesSent = bytesSent
        self.url = url
        self.bodyByteCount = bodyByteCount ?? Int64(body.count)
        self.isBodyTruncated = isBodyTruncated
    }

    /// The first value of header `name`, compared case-insensitively.
    public func header(_ name: String) -> String? {
        HTTPHeader.value(of: name, in: headers)
    }

    /// Whether the status is 2xx.
    public var isSuccess: Bool { (200..<300).contains(status) }
}

/// How far an upload has come.
public struct UploadProgress: Sendable, Equatable {
    /// Body bytes handed to the connection in the current attempt, counted from byte 0 of the body.
    public var bytesSent: Int64
    /// The body's length, or `nil` when it is not known (stdin, a pipe).
    public var totalBytes: Int64?
    /// Smoothed rate over the last seconds.
    public var bytesPerSecond: Double
    /// Seconds since the upload started.
    public var elapsed: Double

    /// Creates a progress report.
    public init(bytesSent: Int64, totalBytes: Int64?, bytesPerSecond: Double, elapsed: Double) {
        self.bytesSent = bytesSent
        self.totalBytes = totalBytes
        self.bytesPerSecond = bytesPerSecond
        self.elapsed = elapsed
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
