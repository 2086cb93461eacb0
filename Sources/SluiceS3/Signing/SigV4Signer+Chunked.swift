import SluiceByteSources

extension SigV4Signer {
    /// Signs a request whose body goes out `aws-chunked`, and wraps the body.
    ///
    /// The request gains `Content-Encoding: aws-chunked`, `Content-Length` (the encoded length),
    /// `x-amz-decoded-content-length` and, with a trailer, `x-amz-trailer`; all are signed.
    ///
    /// - Parameters:
    ///   - request: The request (S3 `PutObject`, `UploadPart`).
    ///   - body: The decoded bytes, e.g. a `SliceByteSource` of a file for one part.
    ///   - mode: Signed chunks, with or without a signed trailer, or unsigned with a trailer.
    ///   - chunkSize: Data bytes per chunk (S3 needs at least 8 KiB).
    ///   - readAhead: Memory for chunks hashed ahead on another thread (signed modes), in bytes.
    ///   - timestamp: The signing time; now by default.
    /// - Returns: The signature (headers to send) and the encoded body, whose `length` is the
    ///   `Content-Length`; after it was sent, `body.trailerChecksum()` is the part's checksum.
    /// - Throws: `SigV4Error` for a bad chunk size.
    public func signChunked(
        _ request: SigV4Request, body: any ByteSource, mode: AWSChunkedEncoding.Mode,
        chunkSize: Int = AWSChunkedEncoding.defaultChunkSize, readAhead: Int = AWSChunkedBody.defaultReadAhead,
        at timestamp: SigV4Timestamp = SigV4Timestamp()
    ) throws -> (signature: SigV4Signature, body: AWSChunkedBody) {
        let encoding = try AWSChunkedEncoding(mode: mode, decodedLength: body.length, chunkSize: chunkSize)
        var request = request
        let framing: Set<String> = ["content-encoding", "content-length", "x-amz-decoded-content-length", "x-amz-trailer"]
        request.headers.removeAll { framing.contains($0.name.lowercased()) }
        request.headers += encoding.headers
        let signature = sign(request, payload: encoding.payload, at: timestamp)
        let chunkSigner = encoding.isSigned ? AWSChunkSigner(signer: self, signature: signature) : nil
        return (signature, try AWSChunkedBody(body, encoding: encoding, signer: chunkSigner, readAhead: readAhead))
    }
}
