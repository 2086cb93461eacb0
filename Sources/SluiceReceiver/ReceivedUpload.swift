import Sluice
/// One request body the loopback receiver read to its end and answered with `200`.
public struct ReceivedUpload: Sendable, Equatable {
    /// The request method, e.g. `PUT`.
    public var method: String
    /// The request target as sent, query included.
    public var target: String
    /// The target's path, without query.
    public var path: String
    /// The body's length in bytes (decoded, for a chunked body).
    public var bytes: Int64
    /// Lowercase hex SHA-256 of the body.
    public var sha256: String
    /// True when the body was sent with `Transfer-Encoding: chunked`.
    public var chunked: Bool
    /// The `Content-Length` header's value; nil for chunked bodies and requests without a body.
    public var contentLength: Int64?
    /// True when the request carried `Expect: 100-continue` and was answered with `100 Continue`.
    public var expectedContinue: Bool
    /// The request's header fields, in order.
    public var headers: [HTTPHeader]
    /// The trailer fields of a chunked body.
    public var trailers: [HTTPHeader]
    /// Where the body was stored, when the receiver has a store directory.
    public var storedPath: String?
    /// The 1-based number of the TCP connection, in accept order.
    public var connection: Int
    /// The 1-based position of this request on its connection.
    public var requestOnConnection: Int
    /// The JSON body of the `200` response.
    public var json: String

    /// The value of the first header named `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        let name = name.lowercased()
        return headers.first { $0.name.lowercased() == name }?.value
    }
}

/// A request the loopback receiver could not read to its end: the client closed early, the
/// connection failed or timed out, or the receiver was stopped. It is never answered with `200`.
public struct FailedUpload: Sendable, Equatable, CustomStringConvertible {
    public var method: String
    public var path: String
    /// Body bytes received before the failure.
    public var bytesReceived: Int64
    /// The `Content-Length`, when the body had one.
    public var expectedBytes: Int64?
    /// What happened, for people.
    public var reason: String
    public var connection: Int

    public var description: String {
        let of = expectedBytes.map { " of \($0)" } ?? ""
        return "\(method) \(path): \(reason) after \(bytesReceived)\(of) body bytes"
    }
}
