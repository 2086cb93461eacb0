import Foundation
import SluiceRequests

/// How a `RemoteByteSource` asks for its bytes.
public struct RemoteSourceOptions: Sendable {
    /// Headers sent with every request to the source's own origin (a token): never to another
    /// origin a redirect leads to.
    public var headers: [HTTPHeader] = []
    /// When a failed range is asked for again (from the byte it reached, pinned as before).
    public var retry = RetryPolicy()
    /// A range that sends nothing for this long fails (and is retried).
    public var stallTimeout: Duration = .seconds(60)
    /// How long a connection may take to open.
    public var connectTimeout: Duration = .seconds(30)
    /// Redirects followed per request; credentials stay with the source's origin.
    public var maximumRedirects = 10
    /// Certificate authorities to trust (PEM file); nil for the system's.
    public var caFile: String?
    /// Skip TLS verification.
    public var insecure = false
    /// The bytes of one range held between its GET and its reader: the source's memory is
    /// this times the ranges read at once (a part each).
    public var bufferSize = 256 << 10
    /// The most bytes one GET asks for; ranges end at multiples of it, so parts that are
    /// multiples of it (S3's 8 and 16 MiB) start each with a GET of their own.
    public var window: Int64 = 8 << 20
    /// A cap on the bytes per second the source's GETs receive, drawn from by all of them
    /// together (`--limit-rate`: a cap of its own, of the run's value); nil for none.
    public var rateLimit: RateLimit?
    /// Signs each request to the source's own origin (an S3 object's SigV4), called for every
    /// attempt: given the method, the URL and the headers to send, returns the headers that go
    /// (those and its own). nil to send them as they are.
    public var authorize: (@Sendable (_ method: String, _ url: URL, _ headers: [HTTPHeader]) throws -> [HTTPHeader])?

    /// Options with every property at its default (given with each property): no header, no signer.
    public init() {}
}

/// What pins every range of a remote source to the version its first answer named.
public enum RemoteValidator: Sendable, Equatable, CustomStringConvertible {
    /// A strong `ETag`, sent as `If-Match`.
    case entityTag(String)
    /// `Last-Modified`, sent as `If-Unmodified-Since` (the source gave no strong `ETag`).
    case lastModified(String)

    /// The validator an answer's headers name: a strong `ETag`, else `Last-Modified`.
    package init?(fields: [String: String]) {
        if let tag = fields["etag"], !tag.isEmpty, !tag.hasPrefix("W/") {
            self = .entityTag(tag)
        } else if let date = fields["last-modified"], !date.isEmpty {
            self = .lastModified(date)
        } else {
            return nil
        }
    }

    /// The request header that pins a range to this version.
    package var condition: HTTPHeader {
        switch self {
        case .entityTag(let tag): return HTTPHeader(name: "If-Match", value: tag)
        case .lastModified(let date): return HTTPHeader(name: "If-Unmodified-Since", value: date)
        }
    }

    /// What an answer of another version says, or nil when `fields` agree (or say nothing).
    package func mismatch(in fields: [String: String]) -> String? {
        switch self {
        case .entityTag(let tag):
            guard let other = fields["etag"], other != tag else { return nil }
            return "its ETag is now \(other), was \(tag)"
        case .lastModified(let date):
            guard let other = fields["last-modified"], other != date else { return nil }
            return "its Last-Modified is now \(other), was \(date)"
        }
    }

    public var description: String {
        switch self {
        case .entityTag(let tag): return "ETag \(tag)"
        case .lastModified(let date): return "Last-Modified \(date)"
        }
    }
}
