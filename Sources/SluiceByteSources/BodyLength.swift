/// A body's length: known before the first byte is sent, or learned only at the end.
///
/// A struct with static members rather than an enum (as AsyncHTTPClient's
/// `HTTPClientRequest.Body.Length`), so that kinds of length can be added later without
/// breaking a caller's `switch`. Read it with `value`:
///
/// ```swift
/// if let count = body.length.value { print("\(count) bytes") } else { print("chunked") }
/// ```
public struct BodyLength: Sendable, Hashable, CustomStringConvertible {
    private enum Storage: Sendable, Hashable {
        case known(Int64)
        case unknown
    }

    private let storage: Storage

    private init(_ storage: Storage) { self.storage = storage }

    /// A length known up front: sent as `Content-Length`, and the body must hold exactly
    /// `count` bytes (fewer or more fails the upload).
    public static func known(_ count: Int64) -> BodyLength { BodyLength(.known(count)) }

    /// A length learned only at the end: sent chunked (HTTP/1.1) or framed by HTTP/2.
    public static let unknown = BodyLength(.unknown)

    /// The byte count when known.
    public var value: Int64? {
        if case .known(let count) = storage { return count }
        return nil
    }

    public var description: String {
        switch storage {
        case .known(let count): return "\(count)"
        case .unknown: return "unknown"
        }
    }
}
