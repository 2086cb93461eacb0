import Foundation

// Sluice's one redirect policy for credentials, used by every transport.
extension UploadRequest {
    /// Header names that carry credentials, lowercased: sent only to the request's own origin.
    static let credentialHeaderNames: Set<String> = ["authorization", "cookie", "proxy-authorization"]

    /// Whether `other` has the same origin as the request's URL: scheme, host and port
    /// (the scheme's default port when none is written), compared case-insensitively.
    public func isSameOrigin(_ other: URL) -> Bool {
        Self.origin(of: url) == Self.origin(of: other)
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

    private static func origin(of url: URL) -> String {
        let scheme = url.scheme?.lowercased() ?? ""
        let port = url.port ?? (scheme == "https" ? 443 : scheme == "http" ? 80 : -1)
        return "\(scheme)://\(url.host?.lowercased() ?? ""):\(port)"
    }
}
