import Foundation

/// Why a remote source (`RemoteByteSource`) could not give its bytes.
///
/// A changed source is one of these, never a mixed object: every range is pinned to the
/// version the first answer named, and an answer of another version fails the read.
public struct RemoteSourceError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, to switch on.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The source is no longer the version its first answer named: 412 to the pinned
        /// range, another `ETag` or `Last-Modified`, another length, 416.
        public static let changed = Code("changed")
        /// It answered 200 (the whole object) where a 206 (the range) was asked for.
        public static let rangeIgnored = Code("rangeIgnored")
        /// It sent fewer bytes than the range asked for, or another range.
        public static let shortRange = Code("shortRange")
        /// It answered with a status that is not the object (403, 404, a 5xx after the retries).
        public static let status = Code("status")
        /// Its answer to the first request names no length.
        public static let noLength = Code("noLength")
        /// More redirects than allowed, or one without a usable `Location`.
        public static let redirect = Code("redirect")
        /// The connection failed (after the retries).
        public static let transport = Code("transport")
        /// Nothing came for the stall timeout.
        public static let stalled = Code("stalled")
        /// The source was closed while a read waited.
        public static let closed = Code("closed")
    }

    /// What went wrong.
    public var code: Code
    /// One line saying what happened, made from the fields when the error was made.
    public var message: String
    /// The source's URL (without its query, which may hold a signature).
    public var url: String
    /// The offset of the range that failed, when one did.
    public var offset: Int64?
    /// The HTTP status of the answer, when there was one.
    public var status: Int?
    /// The transport failure beneath, when there was one.
    public var underlying: (any Error)?

    package init(
        _ code: Code, _ message: String, url: URL, offset: Int64? = nil, status: Int? = nil, underlying: (any Error)? = nil
    ) {
        self.code = code
        self.url = RemoteSourceError.shown(url)
        self.message = "\(self.url): \(message)"
        self.offset = offset
        self.status = status
        self.underlying = underlying
    }

    public var description: String { message }

    /// `scheme://host:port/path`, without the query and fragment.
    package static func shown(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return url.absoluteString }
        components.query = nil
        components.fragment = nil
        components.user = nil
        components.password = nil
        return components.string ?? url.absoluteString
    }

    /// Whether a new attempt at the same pinned range may cure it: a connection failure, a
    /// stall, or a status that `RetryPolicy` counts as transient.
    package var isTransient: Bool {
        switch code {
        case .transport, .stalled: return true
        case .status: return status.map(RetryPolicy.isTransient(status:)) ?? false
        default: return false
        }
    }
}
