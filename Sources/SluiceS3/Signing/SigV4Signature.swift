/// A signed request: what to send, and every intermediate step (for tests and debugging).
public struct SigV4Signature: Sendable, Hashable {
    /// The headers to send: the request's, plus `X-Amz-Date`, `X-Amz-Content-SHA256`,
    /// `X-Amz-Security-Token` where they apply, and `Authorization`.
    public let headers: [SigV4Header]
    /// The canonical request that was hashed (for debugging a `SignatureDoesNotMatch`).
    public let canonicalRequest: String
    /// The string that was signed: algorithm, time, scope and the canonical request's hash.
    public let stringToSign: String
    /// Hex HMAC-SHA256: the seed signature of an aws-chunked body.
    public let signature: String
    /// `host;x-amz-date;...`
    public let signedHeaders: String
    /// The `Authorization` header value.
    public let authorization: String
    /// The time the signature is for.
    public let timestamp: SigV4Timestamp
    /// `20150830/us-east-1/service/aws4_request`
    public let scope: String

    /// The first value of header `name`, case-insensitively.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }
}
