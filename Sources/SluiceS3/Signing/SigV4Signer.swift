import Foundation
@_spi(Floors) import SluicePrimitives

/// AWS Signature Version 4: header-signed requests, presigned URLs and the chunk signatures of
/// aws-chunked bodies.
///
/// ```swift
/// let signer = SigV4Signer(credentials: credentials, region: "us-east-1")
/// let request = try SigV4Request(method: "PUT", endpoint: endpoint, path: "/bucket/key")
/// let signed = signer.sign(request, payload: .unsigned)
/// // send to request.url with signed.headers
/// ```
///
/// - Important: A value type of strings; `Sendable`, and every method is a pure function of
///   its inputs (the time is an input too).
public struct SigV4Signer: Sendable, Equatable {
    /// How a service canonicalises paths and payload hashes.
    public enum Rules: Sendable, Hashable {
        /// S3: the path is encoded once and never normalised (`a//b/../c` is signed as sent),
        /// and `x-amz-content-sha256` is always sent and signed.
        case s3
        /// Other services (the AWS test suite's `service`): dot segments and empty segments are
        /// removed from the path before it is encoded, and no `x-amz-content-sha256` is added.
        case normalizing
    }

    /// The keys the requests are signed with.
    public var credentials: S3Credentials
    /// The region in the credential scope (`us-east-1`, …).
    public var region: String
    /// The service in the credential scope (`s3`).
    public var service: String
    /// How paths and payload hashes are canonicalised.
    public var rules: Rules

    /// A signer for `service` in `region`.
    ///
    /// - Parameters:
    ///   - credentials: The keys to sign with.
    ///   - region: The region in the credential scope.
    ///   - service: `s3` for S3 and compatible stores.
    ///   - rules: `.s3` unless the service is not S3.
    public init(credentials: S3Credentials, region: String, service: String = "s3", rules: Rules = .s3) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.rules = rules
    }

    /// Headers never signed: proxies and clients change them.
    package static let unsignedHeaders: Set<String> = ["authorization", "user-agent", "expect", "transfer-encoding", "x-amzn-trace-id"]

    /// Signs `request` with an `Authorization` header.
    ///
    /// - Parameters:
    ///   - request: Method, host, decoded path and query, headers. An `Authorization`,
    ///     `X-Amz-Date`, `X-Amz-Security-Token` or `X-Amz-Content-SHA256` in it is replaced.
    ///   - payload: How the body is protected. With `.normalizing` rules, its hash is only used
    ///     in the canonical request, not sent as a header.
    ///   - timestamp: When; now by default.
    /// - Returns: The headers to send and the steps of the signature.
    public func sign(_ request: SigV4Request, payload: SigV4Payload, at timestamp: SigV4Timestamp = SigV4Timestamp()) -> SigV4Signature {
        var replaced: Set<String> = ["authorization", "x-amz-date"]
        if credentials.sessionToken != nil { replaced.insert("x-amz-security-token") }
        if rules == .s3 { replaced.insert("x-amz-content-sha256") }
        var headers = request.headers.filter { !replaced.contains($0.name.lowercased()) }
        if !headers.contains(where: { $0.name.lowercased() == "host" }) {
            headers.insert(SigV4Header("Host", request.host), at: 0)
        }
        headers.append(SigV4Header("X-Amz-Date", timestamp.amzDate))
        if let token = credentials.sessionToken { headers.append(SigV4Header("X-Amz-Security-Token", token)) }
        if rules == .s3 { headers.append(SigV4Header("X-Amz-Content-SHA256", payload.contentSHA256)) }

        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(headers)
        let canonicalRequest = [
            request.method,
            canonicalURI(request.path),
            Self.canonicalQuery(request.query),
            canonicalHeaders,
            signedHeaders,
            payload.contentSHA256,
        ].joined(separator: "\n")
        let scope = self.scope(timestamp)
        let stringToSign = "AWS4-HMAC-SHA256\n\(timestamp.amzDate)\n\(scope)\n\(SigningCrypto.sha256Hex(canonicalRequest))"
        let signature = SigningCrypto.hmacSHA256(key: signingKey(timestamp), stringToSign).hexString
        let authorization = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), Signature=\(signature)"
        headers.append(SigV4Header("Authorization", authorization))
        return SigV4Signature(
            headers: headers, canonicalRequest: canonicalRequest, stringToSign: stringToSign, signature: signature,
            signedHeaders: signedHeaders, authorization: authorization, timestamp: timestamp, scope: scope)
    }

    /// `DAY/REGION/SERVICE/aws4_request`.
    public func scope(_ timestamp: SigV4Timestamp) -> String {
        "\(timestamp.day)/\(region)/\(service)/aws4_request"
    }

    /// The signing key: HMAC chain of `AWS4`+secret over day, region, service, `aws4_request`.
    ///
    /// The same for a whole day: computed once per secret, day, region and service and kept
    /// (a few keys at most), as the AWS SDKs cache it; four HMACs fewer for every request.
    public func signingKey(_ timestamp: SigV4Timestamp) -> [UInt8] {
        let day = timestamp.day
        let cacheKey = SigningKeyCache.Key(secret: credentials.secretAccessKey, day: day, region: region, service: service)
        if let key = Self.signingKeys.withLock({ $0.keys[cacheKey] }) { return key }
        var key = SigningCrypto.hmacSHA256(key: Array("AWS4\(credentials.secretAccessKey)".utf8), day)
        key = SigningCrypto.hmacSHA256(key: key, region)
        key = SigningCrypto.hmacSHA256(key: key, service)
        key = SigningCrypto.hmacSHA256(key: key, "aws4_request")
        Self.signingKeys.withLock { cache in
            if cache.keys.count >= SigningKeyCache.capacity { cache.keys.removeAll() }
            cache.keys[cacheKey] = key
        }
        return key
    }

    private static let signingKeys = Lock(SigningKeyCache())
}

/// Signing keys already derived, by what they are derived from.
private struct SigningKeyCache: Sendable {
    package struct Key: Hashable, Sendable {
        package var secret: String
        package var day: String
        package var region: String
        package var service: String
    }

    /// More keys than a process signs with in a day (credentials rotate, a day ends): the
    /// cache is emptied when it is full.
    package static let capacity = 16
    package var keys: [Key: [UInt8]] = [:]
}
