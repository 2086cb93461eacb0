import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// Bytes of another source with one byte flipped at `offset`: a chunk corrupted on the wire.
struct CorruptedSource: ByteSource {
    let base: any ByteSource
    let offset: Int64
    var length: Int64 { base.length }

    func read(into buffer: UnsafeMutableRawBufferPointer, at position: Int64) throws -> Int {
        let count = try base.read(into: buffer, at: position)
        if position <= offset, offset < position + Int64(count) { buffer[Int(offset - position)] ^= 0x5A }
        return count
    }
}

/// Every payload mode against a real S3 implementation that verifies signatures and checksums.
@Suite(.seaweed, .serialized, .hangGuard)
struct SeaweedSigV4Tests {
    enum Mode: String, CaseIterable, CustomStringConvertible {
        case unsigned, sha256, streamingSigned
        case trailerCRC32C, trailerCRC32, trailerSHA256, signedTrailerCRC32C
        var description: String { rawValue }
    }

    /// Signs a PUT of `source` to `key` in `mode`; the body to send.
    static func signedPut(
        _ peer: SeaweedPeer, key: String, source: any ByteSource, mode: Mode, signer: SigV4Signer? = nil
    ) throws -> (UploadRequest, any ByteSource) {
        let signer = signer ?? peer.signer
        let request = try peer.request("PUT", key: key)
        let chunked: AWSChunkedEncoding.Mode
        switch mode {
        case .unsigned, .sha256:
            let payload: SigV4Payload = mode == .unsigned ? .unsigned : try .sha256(of: source)
            return (try signer.sign(request, payload: payload).uploadRequest(for: request), source)
        case .streamingSigned: chunked = .signed
        case .trailerCRC32C: chunked = .unsignedWithTrailer(.crc32c)
        case .trailerCRC32: chunked = .unsignedWithTrailer(.crc32)
        case .trailerSHA256: chunked = .unsignedWithTrailer(.sha256)
        case .signedTrailerCRC32C: chunked = .signedWithTrailer(.crc32c)
        }
        let (signature, body) = try signer.signChunked(request, body: source, mode: chunked, chunkSize: 64 << 10)
        return (try signature.uploadRequest(for: request), body)
    }

    static func send(_ request: UploadRequest, _ body: any ByteSource) async throws -> UploadResponse {
        try await Uploader(transport: .curl).upload(request, body: .bytes(body))
    }

    @Test(arguments: Mode.allCases)
    func aPutInEveryModeIsStoredByteExact(_ mode: Mode) async throws {
        let peer = try #require(SeaweedPeer.current)
        let source = SyntheticByteSource(length: 3 * (64 << 10) + 12_345, seed: UInt64(mode.rawValue.count))
        let key = "sigv4/\(mode)/a b+ü//obj.bin"
        let (request, body) = try Self.signedPut(peer, key: key, source: source, mode: mode)
        let response = try await Self.send(request, body)
        #expect(response.status == 200, "\(mode): \(String(decoding: response.body, as: UTF8.self))")
        let stored = try await peer.stored(key: key)
        #expect(stored.status == 200)
        #expect(stored.size == source.length)
        #expect(stored.sha256 == (try Digest.sha256(of: source)))
        if !mode.rawValue.contains("railer"), mode != .streamingSigned {
            // A presigned GET reads it too (aws-chunked objects come back from SeaweedFS with
            // `Content-Encoding: aws-chunked`, which no HTTP client decodes).
            let got = try await peer.presignedGet(key: key)
            #expect(got.status == 200)
            #expect(Array(got.body).withUnsafeBytes { SigningCrypto.sha256($0) }.hexString == stored.sha256)
        }
        if let chunked = body as? AWSChunkedBody, let checksum = try chunked.trailerChecksum() {
            #expect(checksum == (try ChecksumHasher.checksum(checksum.algorithm, of: source)))
        }
    }

    @Test(arguments: [Mode.unsigned, .streamingSigned, .trailerCRC32C])
    func aWrongSecretIsRefusedWith403(_ mode: Mode) async throws {
        let peer = try #require(SeaweedPeer.current)
        var wrong = peer.signer
        wrong.credentials.secretAccessKey += "x"
        let key = "sigv4/wrong-secret/\(mode)"
        let (request, body) = try Self.signedPut(peer, key: key, source: SyntheticByteSource(length: 100_000, seed: 1), mode: mode, signer: wrong)
        let response = try await Self.send(request, body)
        #expect(response.status == 403)
        #expect(String(decoding: response.body, as: UTF8.self).contains("SignatureDoesNotMatch"))
        #expect(try await peer.stored(key: key).status == 404)
    }

    /// One byte of the second chunk's data flipped after signing: the chunk signature (or the
    /// trailer checksum) no longer matches, and nothing is stored.
    @Test(arguments: [Mode.streamingSigned, .signedTrailerCRC32C, .trailerCRC32C, .trailerCRC32, .trailerSHA256])
    func aCorruptedChunkIsRefused(_ mode: Mode) async throws {
        let peer = try #require(SeaweedPeer.current)
        let key = "sigv4/corrupt/\(mode)"
        let (request, body) = try Self.signedPut(peer, key: key, source: SyntheticByteSource(length: 200_000, seed: 7), mode: mode)
        let encoding = try #require((body as? AWSChunkedBody)?.encoding)
        let secondChunkData = encoding.encodedChunkLength(encoding.chunkSize) + Int64(encoding.chunkHeaderLength(encoding.chunkSize)) + 10
        let response = try await Self.send(request, CorruptedSource(base: body, offset: secondChunkData))
        #expect(!response.isSuccess, "\(mode): a corrupted chunk was accepted")
        #expect([400, 403, 500].contains(response.status), "\(mode): \(response.status)")
        #expect(try await peer.stored(key: key).status == 404)
    }
}
