import SluicePrimitives

extension SigV4Signer {
    /// The longest a presigned URL may live: 7 days.
    public static let maximumExpiry = 604_800

    /// A presigned URL: the request signed in its query string (`X-Amz-Signature`), valid for
    /// `expires` seconds from `timestamp`, usable by anyone who has it (curl, a browser).
    ///
    /// - Parameters:
    ///   - request: Method, host, path, query; its headers (besides `Host`) must then be sent
    ///     with the URL, as they are signed.
    ///   - expires: Seconds, 1 ... 604800.
    ///   - payload: `.unsigned` for S3 (the body is not known when the URL is made).
    ///   - timestamp: The signing time the expiry counts from; now by default.
    /// - Returns: The URL and the steps of the signature (`headers` are the ones to send).
    /// - Throws: `SigV4Error.invalidOption` for an expiry out of range.
    public func presign(
        _ request: SigV4Request, expires: Int, payload: SigV4Payload = .unsigned, at timestamp: SigV4Timestamp = SigV4Timestamp()
    ) throws -> (url: String, signature: SigV4Signature) {
        guard (1...Self.maximumExpiry).contains(expires) else {
            throw SigV4Error(.invalidOption, "expiry \(expires) s is outside 1 ... \(Self.maximumExpiry) s (7 days)")
        }
        var headers = request.headers.filter { !["authorization", "x-amz-date", "x-amz-security-token", "x-amz-content-sha256"].contains($0.name.lowercased()) }
        if !headers.contains(where: { $0.name.lowercased() == "host" }) {
            headers.insert(SigV4Header("Host", request.host), at: 0)
        }
        let (canonicalHeaders, signedHeaders) = Self.canonicalHeaders(headers)
        let scope = self.scope(timestamp)
        let reserved: Set<String> = [
            "x-amz-algorithm", "x-amz-credential", "x-amz-date", "x-amz-expires", "x-amz-signedheaders",
            "x-amz-security-token", "x-amz-signature",
        ]
        var query = request.query.filter { !reserved.contains($0.name.lowercased()) }
        query += [
            SigV4QueryItem("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            SigV4QueryItem("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope)"),
            SigV4QueryItem("X-Amz-Date", timestamp.amzDate),
            SigV4QueryItem("X-Amz-Expires", "\(expires)"),
            SigV4QueryItem("X-Amz-SignedHeaders", signedHeaders),
        ]
        if let token = credentials.sessionToken { query.append(SigV4QueryItem("X-Amz-Security-Token", token)) }
        let canonicalRequest = [
            request.method, canonicalURI(request.path), Self.canonicalQuery(query), canonicalHeaders, signedHeaders, payload.contentSHA256,
        ].joined(separator: "\n")
        let stringToSign = "AWS4-HMAC-SHA256\n\(timestamp.amzDate)\n\(scope)\n\(SigningCrypto.sha256Hex(canonicalRequest))"
        let signature = SigningCrypto.hmacSHA256(key: signingKey(timestamp), stringToSign).hexString
        var signed = request
        signed.query = query + [SigV4QueryItem("X-Amz-Signature", signature)]
        let url = "\(signed.scheme)://\(signed.host)\(signed.encodedPath)?\(signed.encodedQuery)"
        let result = SigV4Signature(
            headers: headers, canonicalRequest: canonicalRequest, stringToSign: stringToSign, signature: signature,
            signedHeaders: signedHeaders, authorization: "", timestamp: timestamp, scope: scope)
        return (url, result)
    }
}
