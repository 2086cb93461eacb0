import Foundation
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport

/// The S3 reference's chunked-upload example, and the aws-chunked body's replay and framing.
@Suite struct AWSChunkedBodyTests {
    struct Example {
        let json: [String: Any]
        var signer: SigV4Signer
        var request: SigV4Request
        var timestamp: SigV4Timestamp
    }

    static func example() throws -> Example {
        let directory = try #require(sharedVectorsDirectory)
        let data = try Data(contentsOf: URL(fileURLWithPath: directory + "/s3-streaming-example.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let signer = SigV4Signer(
            credentials: S3Credentials(accessKeyID: json["access_key_id"] as! String, secretAccessKey: json["secret_access_key"] as! String),
            region: json["region"] as! String, service: json["service"] as! String)
        let requestJSON = json["request"] as! [String: Any]
        let headers = (requestJSON["headers"] as! [String: String]).map { SigV4Header($0.key, $0.value) }
            .filter { !["content-encoding", "content-length", "x-amz-decoded-content-length"].contains($0.name.lowercased()) }
        let request = SigV4Request(
            method: requestJSON["method"] as! String, scheme: "https", host: "s3.amazonaws.com",
            path: requestJSON["path"] as! String, headers: headers)
        return Example(json: json, signer: signer, request: request, timestamp: try #require(SigV4Timestamp(amzDate: json["amz_date"] as! String)))
    }

    @Test func theS3StreamingExample() throws {
        let example = try Self.example()
        let source = MemoryByteSource([UInt8](repeating: 0x61, count: 66560))
        let (signature, body) = try example.signer.signChunked(example.request, body: source, mode: .signed, chunkSize: 65536, at: example.timestamp)
        #expect(body.length == 66824)
        #expect(signature.header("Content-Length") == "66824")
        #expect(signature.header("x-amz-decoded-content-length") == "66560")
        #expect(signature.signature == example.json["seed_signature"] as? String)
        #expect(signature.authorization == example.json["expected_authorization"] as? String)
        let encoded = try body.bytes(in: 0..<body.length)
        let decoded = try DecodedChunks(encoded)
        let expected = example.json["chunk_signatures"] as! [[String: Any]]
        #expect(decoded.chunks.map(\.size) == expected.map { $0["size"] as! Int })
        #expect(decoded.chunks.map(\.signature) == expected.map { $0["signature"] as? String })
        #expect(decoded.chunks.flatMap(\.data) == [UInt8](repeating: 0x61, count: 66560))
        #expect(decoded.trailers.isEmpty)
        // Read in place (no read-ahead, a source not in memory) into one buffer: both
        // chunks hashed together, the same signatures.
        let inPlace = try example.signer.signChunked(
            example.request, body: ShortReadSource(base: source, chunk: 1 << 20), mode: .signed,
            chunkSize: 65536, readAhead: 0, at: example.timestamp
        ).body
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        let count = try buffer.withUnsafeMutableBytes { try inPlace.read(into: $0, at: 0) }
        #expect(count == 66824)
        #expect(inPlace.chunkBufferBytes == 0)
        #expect(Array(buffer[..<count]) == encoded)
    }

    /// Every read size, in order and from the middle: the same bytes, one pass when in order;
    /// with the read-ahead and without it. Without one (as many parts in flight as cores), a
    /// reader's buffer that holds a whole section gets it read there: header line, data read
    /// and hashed in place, CRLF, no copy through the chunk buffer; a read ends at a section's
    /// end rather than split the next one, and a buffer smaller than a section gets copies.
    @Test(arguments: [1, 7, 100, 1021 + 80 + 4, 3 * 1200 + 17, 4096, 70_000])
    func readsInAnySizeGiveTheSameBytes(_ readSize: Int) throws {
        let example = try Self.example()
        let source = SyntheticByteSource(length: 10_000, seed: 3)
        for mode in [AWSChunkedEncoding.Mode.signed, .signedWithTrailer(.crc32c), .unsignedWithTrailer(.sha256)] {
            let reference = try example.signer.signChunked(example.request, body: source, mode: mode, chunkSize: 1021, at: example.timestamp).body
            let whole = try reference.bytes(in: 0..<reference.length)
            #expect(Int64(whole.count) == reference.encoding.encodedLength)
            for readAhead in [AWSChunkedBody.defaultReadAhead, 0] {
                let body = try example.signer.signChunked(
                    example.request, body: ShortReadSource(base: source, chunk: 333), mode: mode,
                    chunkSize: 1021, readAhead: readAhead, at: example.timestamp
                ).body
                // Unsigned modes never read ahead.
                let ring = body.readAheadMemoryBytes > 0
                let inPlace = !ring && readSize >= Int(body.encoding.encodedChunkLength(1021))
                var collected: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: readSize)
                while Int64(collected.count) < body.length {
                    let count = try buffer.withUnsafeMutableBytes { try body.read(into: $0, at: Int64(collected.count)) }
                    #expect(count > 0)
                    collected += buffer[..<count]
                    if inPlace, Int64(collected.count) < body.length - body.encoding.finalSectionLength {
                        #expect(collected.count % Int(body.encoding.encodedChunkLength(1021)) == 0, "a read split a section: \(mode)")
                    }
                }
                #expect(collected == whole, "\(mode), read-ahead \(readAhead)")
                #expect(body.passCount == 1)
                #expect(body.bytesHashed == source.length)
                #expect(body.chunkBufferBytes == (ring || inPlace ? 0 : 1021), "\(mode), read-ahead \(readAhead)")
                let decoded = try DecodedChunks(collected)
                #expect(decoded.chunks.flatMap(\.data) == (try source.bytes(in: 0..<source.length)))
            }
        }
    }

    /// The read size a transport's buffer takes (`SectionedByteSource`): rounded up to whole
    /// sections when that adds little, so every fill takes its sections in place.
    @Test func readSizesHoldWholeSections() throws {
        let example = try Self.example()
        let source = SyntheticByteSource(length: 10 << 20, seed: 4)
        for mode in [AWSChunkedEncoding.Mode.signedWithTrailer(.crc32c), .signed, .unsignedWithTrailer(.crc32c)] {
            let body = try example.signer.signChunked(example.request, body: source, mode: mode, at: example.timestamp).body
            let section = Int(body.encoding.encodedChunkLength(64 << 10))
            #expect(body.readSize(near: 512 << 10) == 8 * section, "\(mode)")
            #expect(body.readSize(near: 256 << 10) == 4 * section, "\(mode)")
            #expect(body.readSize(near: 8 * section) == 8 * section, "\(mode)")
            // Rounding up would add more than a sixteenth: the size stays.
            #expect(body.readSize(near: 16 << 10) == 16 << 10, "\(mode)")
            #expect(body.readSize(near: 100 << 10) == 100 << 10, "\(mode)")
        }
        #expect(Int(try AWSChunkedEncoding(mode: .signedWithTrailer(.crc32c), decodedLength: 1 << 20).encodedChunkLength(64 << 10)) * 8 == 525_008)
    }

    /// A replay from 0 (and any read that goes back) restarts the chain and gives the same bytes.
    @Test func aReplayRecomputesTheSameSignatures() throws {
        let example = try Self.example()
        let source = SyntheticByteSource(length: 50_000, seed: 9)
        let body = try example.signer.signChunked(example.request, body: source, mode: .signedWithTrailer(.crc32c), chunkSize: 8192, at: example.timestamp).body
        let first = try body.bytes(in: 0..<body.length)
        #expect(body.passCount == 1)
        let again = try body.bytes(in: 0..<body.length)
        #expect(again == first)
        #expect(body.passCount == 2)
        let middle = try body.bytes(in: 20_000..<30_000)
        #expect(middle == Array(first[20_000..<30_000]))
        let tail = try body.bytes(in: body.length - 100..<body.length)
        #expect(tail == Array(first.suffix(100)))
        #expect(try body.trailerChecksum() == ChecksumHasher.checksum(.crc32c, of: source))
    }

    /// A part held in memory (stdin's S3 parts) is hashed and sent in place, with no read-ahead
    /// ring: the same bytes as from any other source, through a replay and a read from the middle.
    @Test func aResidentSourceGivesTheSameBytesWithoutAReadAheadCopy() throws {
        let example = try Self.example()
        let length: Int64 = 37 * 8192 + 77
        let part = S3PartBuffer(capacity: 1)
        #expect(try part.fill(from: SyntheticStream(length: length, seed: 12), size: Int(length) + 10) == Int(length))
        let reference = SyntheticByteSource(length: length, seed: 12)
        for mode in [AWSChunkedEncoding.Mode.signed, .signedWithTrailer(.crc32c), .unsignedWithTrailer(.crc32)] {
            let expected = try example.signer.signChunked(example.request, body: reference, mode: mode, chunkSize: 8192, at: example.timestamp).body
            let body = try example.signer.signChunked(example.request, body: part, mode: mode, chunkSize: 8192, at: example.timestamp).body
            #expect(expected.readAheadMemoryBytes == (expected.encoding.isSigned ? 16 * 8192 : 0))
            #expect(body.readAheadMemoryBytes == 0)
            let whole = try expected.bytes(in: 0..<expected.length)
            #expect(try body.bytes(in: 0..<body.length) == whole)
            #expect(try body.bytes(in: 100_000..<200_000) == Array(whole[100_000..<200_000]))
            #expect(try body.bytes(in: 0..<body.length) == whole)
            #expect(body.passCount == 3)
        }
    }

    /// The read-ahead ring is as large as asked (at most 16 chunks) and absent below two
    /// chunks; the bytes are the same whatever its size.
    @Test func theReadAheadRingFollowsItsLimit() throws {
        let example = try Self.example()
        let source = SyntheticByteSource(length: 40 * 8192 + 11, seed: 4)
        let whole = try example.signer.signChunked(example.request, body: source, mode: .signed, chunkSize: 8192, at: example.timestamp).body
        let expected = try whole.bytes(in: 0..<whole.length)
        for (limit, ring) in [(0, 0), (8191, 0), (16383, 0), (16384, 16384), (5 * 8192 + 1, 5 * 8192), (1 << 30, 16 * 8192)] {
            let body = try example.signer.signChunked(
                example.request, body: source, mode: .signed, chunkSize: 8192, readAhead: limit,
                at: example.timestamp
            ).body
            #expect(body.readAheadMemoryBytes == ring, "limit \(limit)")
            #expect(try body.bytes(in: 0..<body.length) == expected, "limit \(limit)")
        }
    }

    /// Content-Length is exact for every length around chunk boundaries, in every mode.
    @Test func theEncodedLengthIsExact() throws {
        let example = try Self.example()
        for mode in [AWSChunkedEncoding.Mode.signed, .signedWithTrailer(.crc32), .unsignedWithTrailer(.crc32c), .unsignedWithTrailer(.sha256)] {
            for length in [0, 1, 15, 16, 17, 255, 256, 257, 4095, 4096, 4097, 8191] {
                let body = try example.signer.signChunked(
                    example.request, body: SyntheticByteSource(length: Int64(length), seed: 1), mode: mode, chunkSize: 16 * (length % 3 + 1),
                    at: example.timestamp
                ).body
                let bytes = try body.bytes(in: 0..<body.length)
                #expect(Int64(bytes.count) == body.length)
                var probe = [UInt8](repeating: 0, count: 1)
                #expect(try probe.withUnsafeMutableBytes { try body.read(into: $0, at: body.length) } == 0)
                _ = try DecodedChunks(bytes)
            }
        }
    }

    /// The trailer: name and base64 value; signed, with a trailer signature chained from the
    /// final chunk's signature over `name:value\n`.
    @Test func trailersCarryTheChecksum() throws {
        let example = try Self.example()
        let source = SyntheticByteSource(length: 20_000, seed: 5)
        let (signature, body) = try example.signer.signChunked(
            example.request, body: source, mode: .signedWithTrailer(.crc32c), chunkSize: 8192, at: example.timestamp)
        #expect(signature.header("x-amz-trailer") == "x-amz-checksum-crc32c")
        #expect(signature.canonicalRequest.hasSuffix("\nSTREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"))
        let decoded = try DecodedChunks(try body.bytes(in: 0..<body.length))
        let crc = try ChecksumHasher.checksum(.crc32c, of: source)
        #expect(decoded.trailers.count == 2)
        #expect(decoded.trailers.first == "x-amz-checksum-crc32c:\(crc.base64)")
        let chunkSigner = AWSChunkSigner(signer: example.signer, signature: signature)
        let finalSignature = try #require(decoded.chunks.last?.signature)
        let expected = chunkSigner.trailerSignature(previous: finalSignature, trailer: "x-amz-checksum-crc32c:\(crc.base64)\n")
        #expect(decoded.trailers.last == "x-amz-trailer-signature:\(expected)")
        // Each chunk signature chains from the one before it.
        var previous = signature.signature
        for chunk in decoded.chunks {
            let hash = chunk.data.withUnsafeBytes { SigningCrypto.sha256($0) }
            #expect(chunk.signature == chunkSigner.chunkSignature(previous: previous, dataHash: hash))
            previous = chunk.signature ?? ""
        }

        let unsigned = try example.signer.signChunked(
            example.request, body: source, mode: .unsignedWithTrailer(.sha256), chunkSize: 8192, at: example.timestamp)
        let plain = try DecodedChunks(try unsigned.body.bytes(in: 0..<unsigned.body.length))
        #expect(plain.chunks.allSatisfy { $0.signature == nil })
        #expect(plain.trailers == ["x-amz-checksum-sha256:\(try ChecksumHasher.checksum(.sha256, of: source).base64)"])
        #expect(unsigned.signature.header("x-amz-content-sha256") == "STREAMING-UNSIGNED-PAYLOAD-TRAILER")
    }

    /// A source that fails once at one offset, then reads normally (a transient I/O error).
    final class FlakySource: ByteSource, @unchecked Sendable {
        // @unchecked: `failed` is only touched by the read-ahead producer, one read at a time.
        let base: SyntheticByteSource
        let failAt: Int64
        var failed = false
        init(base: SyntheticByteSource, failAt: Int64) { self.base = base; self.failAt = failAt }
        var length: Int64 { base.length }
        func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws -> Int {
            if !failed, offset <= failAt, failAt < offset + Int64(buffer.count) {
                failed = true
                throw FaultySource.Injected()
            }
            return try base.read(into: buffer, at: offset)
        }
    }

    /// Signed bodies hash ahead on another thread: an error there reaches the reader at the
    /// chunk it belongs to, and reading again gives the right bytes.
    @Test func aReadAheadErrorSurfacesAndARetryRecovers() throws {
        let example = try Self.example()
        let base = SyntheticByteSource(length: 40 * 8192 + 5, seed: 8)
        let reference = try example.signer.signChunked(example.request, body: base, mode: .signed, chunkSize: 8192, at: example.timestamp).body
        let expected = try reference.bytes(in: 0..<reference.length)
        let body = try example.signer.signChunked(
            example.request, body: FlakySource(base: base, failAt: 20 * 8192 + 3), mode: .signed, chunkSize: 8192, at: example.timestamp
        ).body
        #expect(throws: FaultySource.Injected.self) { _ = try body.bytes(in: 0..<body.length) }
        #expect(try body.bytes(in: 0..<body.length) == expected)
    }

    @Test func aShortSourceIsAnErrorNotOtherBytes() throws {
        let example = try Self.example()
        let faulty = FaultySource(base: SyntheticByteSource(length: 30_000, seed: 2), faultOffset: 17_000, fault: .endEarly)
        let body = try example.signer.signChunked(example.request, body: faulty, mode: .signed, chunkSize: 8192, at: example.timestamp).body
        #expect(throws: ByteSourceError.self) { _ = try body.bytes(in: 0..<body.length) }
        let inPlace = try example.signer.signChunked(
            example.request, body: faulty, mode: .signed, chunkSize: 8192, readAhead: 0,
            at: example.timestamp
        ).body
        #expect(throws: ByteSourceError.self) { _ = try inPlace.bytes(in: 0..<inPlace.length) }
        let failing = FaultySource(base: SyntheticByteSource(length: 30_000, seed: 2), faultOffset: 17_000, fault: .fail)
        let other = try example.signer.signChunked(example.request, body: failing, mode: .signed, chunkSize: 8192, at: example.timestamp).body
        #expect(throws: FaultySource.Injected.self) { _ = try other.bytes(in: 0..<other.length) }
        #expect(throws: SigV4Error.self) { _ = try AWSChunkedEncoding(mode: .signed, decodedLength: 10, chunkSize: 0) }
    }
}
