import Foundation
@_spi(Floors) import SluicePrimitives
import SluiceRequests

/// One header as it goes into a signed request: name as given, value as given.
public struct SigV4Header: Sendable, Hashable, CustomStringConvertible {
    /// The header's name, as given (it is lowercased only in the canonical request).
    public var name: String
    /// The header's value, as given (trimmed and its spaces folded only in the canonical request).
    public var value: String

    /// A header `name: value`.
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }

    public var description: String { "\(name): \(value)" }
}

/// One query parameter, decoded (`a b+c`, not `a%20b%2Bc`).
public struct SigV4QueryItem: Sendable, Hashable {
    /// The parameter's name, decoded.
    public var name: String
    /// The parameter's value, decoded; empty for a bare name (`?uploads`).
    public var value: String

    /// A query parameter `name=value`, both decoded.
    public init(_ name: String, _ value: String = "") {
        self.name = name
        self.value = value
    }
}

/// A request to sign, kept decoded so that it is encoded exactly once, by the signer, the same
/// way on the wire and in the canonical request.
///
/// ```swift
/// let request = try SigV4Request(method: "PUT", endpoint: URL(string: "http://127.0.0.1:8333")!,
///                                path: "/bucket/a key/ü//x")
/// request.url  // http://127.0.0.1:8333/bucket/a%20key/%C3%BC//x
/// ```
public struct SigV4Request: Sendable, Hashable {
    /// The HTTP method (`PUT`, `POST`, …), signed as given.
    public var method: String
    /// `http` or `https`.
    public var scheme: String
    /// The `Host` header value: the host, with `:port` when the URL names one.
    public var host: String
    /// The decoded path, starting with `/`: an S3 key's bytes as they are, `//` and all.
    public var path: String
    /// The decoded query parameters, in any order, repeats allowed.
    public var query: [SigV4QueryItem]
    /// Headers to send and sign (besides the ones the signer adds).
    public var headers: [SigV4Header]

    /// A request to sign, from its endpoint and its decoded path.
    ///
    /// - Parameters:
    ///   - method: The HTTP method.
    ///   - endpoint: `scheme://host[:port]`; its path, if any, is put before `path`.
    ///   - path: The decoded path.
    ///   - query: The decoded query parameters.
    ///   - headers: Headers to send and sign.
    /// - Throws: `SigV4Error.invalidURL` unless the endpoint is http(s) with a host.
    public init(method: String, endpoint: URL, path: String, query: [SigV4QueryItem] = [], headers: [SigV4Header] = []) throws {
        let parsed = try Endpoint.parsed(endpoint)
        let tail = path.hasPrefix("/") ? path : "/" + path
        self.init(method: method, scheme: parsed.scheme, canonicalHost: parsed.host, path: parsed.base + tail, query: query, headers: headers)
    }

    /// What a request takes from its endpoint URL: the scheme, the `Host` value (IPv4 in the
    /// form libcurl sends) and the path before the request's own.
    package struct Endpoint: Sendable {
        package var scheme: String
        package var host: String
        package var base: String

        /// Kept by the endpoint's text: an S3 client signs every request for one endpoint,
        /// and reading it through Foundation's URL each time was 4 % of a small-file job.
        private static let cache = Lock<[String: Endpoint]>([:])

        package static func parsed(_ endpoint: URL) throws -> Endpoint {
            let key = endpoint.absoluteString
            if let known = cache.withLock({ $0[key] }) { return known }
            guard endpoint.isHTTPWithHost, let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host else {
                throw SigV4Error(.invalidURL, "'\(endpoint.absoluteString)' is not an http(s) URL with a host")
            }
            var hostHeader = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
            // The port as a client sends it in `Host`: omitted when it is the scheme's default.
            if let port = endpoint.port, !endpoint.hasDefaultPort { hostHeader += ":\(port)" }
            let prefix = endpoint.path  // already decoded
            var base = prefix.hasSuffix("/") ? String(prefix.dropLast()) : prefix
            if base == "/" { base = "" }
            let parsed = Endpoint(scheme: scheme, host: HTTPSyntax.canonicalIPv4(authority: hostHeader), base: base)
            cache.withLock { cache in
                // A few endpoints per process; virtual-hosted style makes one per bucket.
                if cache.count >= 64 { cache.removeAll() }
                cache[key] = parsed
            }
            return parsed
        }
    }

    /// A request from its parts; no checks. An IPv4 address in `host` is kept in the form
    /// libcurl sends (`127.1` is signed and sent as `127.0.0.1`): the host signed is the host sent.
    public init(method: String, scheme: String = "https", host: String, path: String, query: [SigV4QueryItem] = [], headers: [SigV4Header] = []) {
        self.init(method: method, scheme: scheme, canonicalHost: HTTPSyntax.canonicalIPv4(authority: host), path: path, query: query, headers: headers)
    }

    /// A request whose host is already in the form `canonicalIPv4(authority:)` gives.
    package init(method: String, scheme: String, canonicalHost: String, path: String, query: [SigV4QueryItem], headers: [SigV4Header]) {
        self.method = method
        self.scheme = scheme
        self.host = canonicalHost
        self.path = path.isEmpty ? "/" : path
        self.query = query
        self.headers = headers
    }

    /// Parses a full URL whose path and query are percent-encoded (`%20`, `%2B`; a `+` in the
    /// query is a plus sign, not a space).
    ///
    /// - Throws: `SigV4Error.invalidURL` for a non-http(s) URL or a malformed `%` escape.
    public init(method: String, url string: String, headers: [SigV4Header] = []) throws {
        guard let schemeEnd = string.range(of: "://") else {
            throw SigV4Error(.invalidURL, "'\(string)' is not an http(s) URL")
        }
        let scheme = string[..<schemeEnd.lowerBound].lowercased()
        let rest = string[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        let host = String(rest[..<authorityEnd])
        guard scheme == "http" || scheme == "https", !host.isEmpty, !host.contains("@") else {
            throw SigV4Error(.invalidURL, "'\(string)' is not an http(s) URL with a host")
        }
        var pathAndQuery = rest[authorityEnd...]
        if let hash = pathAndQuery.firstIndex(of: "#") { pathAndQuery = pathAndQuery[..<hash] }
        let queryStart = pathAndQuery.firstIndex(of: "?")
        let rawPath = queryStart.map { pathAndQuery[..<$0] } ?? pathAndQuery
        var query: [SigV4QueryItem] = []
        if let queryStart {
            query = try SigV4Encoding.parseQuery(String(pathAndQuery[pathAndQuery.index(after: queryStart)...]))
        }
        self.init(method: method, scheme: scheme, host: host, path: try SigV4Encoding.percentDecode(String(rawPath)), query: query, headers: headers)
    }

    /// The path as sent: each byte outside `A-Z a-z 0-9 - . _ ~ /` percent-encoded, once.
    public var encodedPath: String { SigV4Encoding.encode(path, keepSlash: true) }

    /// The query as sent: `name=value` pairs encoded as in the canonical request, in the given order.
    public var encodedQuery: String {
        query.map { SigV4Encoding.encode($0.name, keepSlash: false) + "=" + SigV4Encoding.encode($0.value, keepSlash: false) }
            .joined(separator: "&")
    }

    /// The URL to send the request to.
    public var url: URL {
        let text = "\(scheme)://\(host)\(encodedPath)" + (query.isEmpty ? "" : "?" + encodedQuery)
        return URL(string: text)!
    }
}
