import SluicePrimitives

/// The chained signatures of an aws-chunked body: each chunk's signature covers the previous
/// one and the chunk's SHA-256, starting from the request's (seed) signature.
public struct AWSChunkSigner: Sendable, Equatable {
    package let signingKey: [UInt8]
    package let amzDate: String
    package let scope: String
    /// The request's signature, which the first chunk's chains from.
    public let seedSignature: String
    /// What every chunk's string to sign starts with (`AWS4-HMAC-SHA256-PAYLOAD`, date, scope),
    /// built once: a 5 GiB part has 81,920 chunks.
    private let chunkPrefix: [UInt8]

    /// The chunk signer for a request signed by `signer` as `signature`.
    public init(signer: SigV4Signer, signature: SigV4Signature) {
        signingKey = signer.signingKey(signature.timestamp)
        amzDate = signature.timestamp.amzDate
        scope = signature.scope
        seedSignature = signature.signature
        chunkPrefix = Array("AWS4-HMAC-SHA256-PAYLOAD\n\(amzDate)\n\(scope)\n".utf8)
    }

    /// The signature of a chunk whose data has SHA-256 `dataHash` (raw bytes).
    public func chunkSignature(previous: String, dataHash: [UInt8]) -> String {
        // previous, the empty string's SHA-256 (a chunk has no headers) and dataHash, in hex.
        var stringToSign = chunkPrefix
        stringToSign.reserveCapacity(chunkPrefix.count + 3 * 64 + 2)
        stringToSign.append(contentsOf: previous.utf8)
        stringToSign.append(0x0A)
        stringToSign.append(contentsOf: SigV4Payload.emptySHA256.utf8)
        stringToSign.append(0x0A)
        stringToSign.append(contentsOf: dataHash.hexString.utf8)
        return stringToSign.withUnsafeBytes { SigningCrypto.hmacSHA256(key: signingKey, $0) }.hexString
    }

    /// The signature of the trailer lines (each `name:value\n`), chained from the final chunk's.
    public func trailerSignature(previous: String, trailer: String) -> String {
        let stringToSign = "AWS4-HMAC-SHA256-TRAILER\n\(amzDate)\n\(scope)\n\(previous)\n\(SigningCrypto.sha256Hex(trailer))"
        return SigningCrypto.hmacSHA256(key: signingKey, stringToSign).hexString
    }
}
