import Foundation

// Sluice's one redirect policy for credentials, used by every transport.
extension UploadRequest {
    /// Header names that carry credentials, lowercased: sent only to the request's own origin.
    package static let credentialHeaderNames: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// Whether `other` has the same origin as the request's URL: scheme, host and port
    /// (the scheme's default port when none is written), compared case-insensitively.
    public func isSameOrigin(_ other: URL) -> Bool {
        // The request's own URL (every attempt but a redirect's) without parsing either.
        url == other || url.origin == other.origin
    }

    /// Whether credentials may go to `target`: the caller's credential headers,
    /// `options.credentials` and answers to its challenges.
    ///
    /// - Returns: true for the request's own origin, or anywhere when
    ///   `options.keepsCredentialsAcrossOrigins` is set.
    public func sendsCredentials(to target: URL, options: UploadOptions) -> Bool {
        options.keepsCredentialsAcrossOrigins || isSameOrigin(target)
    }

    /// The caller's headers for an attempt at `target` (the URL or a redirect's location):
    /// all of them at the request's origin, without `Authorization`, `Cookie` and
    /// `Proxy-Authorization` anywhere else unless `options.keepsCredentialsAcrossOrigins`.
    public func headers(for target: URL, options: UploadOptions) -> [HTTPHeader] {
        guard !sendsCredentials(to: target, options: options) else { return headers }
        return headers.filter { !Self.credentialHeaderNames.contains($0.name.lowercased()) }
    }

}

extension URL {
    /// Whether the URL is http or https with a host: what any request of Sluice's needs. One
    /// rule for requests, redirects and signed endpoints, read through `URLComponents`.
    package var isHTTPWithHost: Bool {
        guard let components = URLComponents(url: self, resolvingAgainstBaseURL: true),
            let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return false }
        return components.host?.isEmpty == false
    }

    /// The port a connection to this URL uses: the written one, else the scheme's default
    /// (80 for http, 443 for https); nil for other schemes without a port.
    package var effectivePort: Int? {
        port ?? schemeDefaultPort
    }

    /// Whether the URL writes no port or the scheme's default one (as `Host` omits it).
    package var hasDefaultPort: Bool {
        port == nil || port == schemeDefaultPort
    }

    /// 80 for http, 443 for https, nil for other schemes.
    private var schemeDefaultPort: Int? {
        switch scheme?.lowercased() {
        case "http": return 80
        case "https": return 443
        default: return nil
        }
    }

    /// `scheme://host:port`, lowercased, with the effective port: what decides whether
    /// credentials may follow a redirect, and which connections the engine may reuse.
    package var origin: String {
        "\(scheme?.lowercased() ?? "")://\(hostAndPort.lowercased())"
    }

    /// `host:port` with the effective port, for messages and connection keys (`?` for a
    /// missing part); an IPv6 literal in brackets, as in a URL (`[::1]:8080`).
    package var hostAndPort: String {
        "\(bracketedHost ?? "?"):\(effectivePort.map(String.init) ?? "?")"
    }

    /// The host as a URL writes it: an IPv6 literal in brackets (`[::1]`), any other as is.
    package var bracketedHost: String? {
        // By bytes: `String.contains(_:)` of a string goes through Foundation's search, once a request.
        host.map { $0.utf8.contains(UInt8(ascii: ":")) && !$0.hasPrefix("[") ? "[\($0)]" : $0 }
    }

    /// Whether the host is an IPv6 literal (`http://[::1]:8080/`).
    package var hasIPv6LiteralHost: Bool {
        host?.utf8.contains(UInt8(ascii: ":")) == true
    }
}
