import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// S3 over `URLSessionTransport` (the only transport on Apple platforms) against SeaweedFS:
/// the same part scheduler as on libcurl, each object read back byte-exact.
@Suite(
    .seaweed, .serialized,
    .hangGuard)
struct S3URLSessionSeaweedTests {
    let peer = SeaweedPeer.current!

    func client(_ configure: (inout S3Options) -> Void = { _ in }) throws -> S3Client {
        try peer.client(state: "s3-urlsession-state", transport: URLSessionTransport()) {
            $0.retryDelay = .milliseconds(10)
            $0.partSize = 5 << 20
            configure(&$0)
        }
    }

    func location() throws -> S3Location { try peer.location("urlsession/") }

    @Test func aMultipartFileUploadIsByteExact() async throws {
        let source = SyntheticByteSource(length: 17 << 20 + 5, seed: 41)
        let client = try client { $0.concurrency = 3 }
        let target = try location()
        let reports = Lock<[UploadProgress]>([])
        let result = try await client.upload(
            S3Source(source, identity: "synthetic:41", fingerprint: S3SourceFingerprint(size: source.length)),
            to: target
        ) { progress in reports.withLock { $0.append(progress) } }
        #expect(result.partCount == 4)
        #expect(result.checksum != nil, "Complete's composite CRC32C was checked")
        let sent = reports.withLock { $0.map(\.bytesSent) }
        let drops = zip(sent, sent.dropFirst()).filter { $0.1 < $0.0 }.map { "\($0.0) -> \($0.1)" }
        #expect(sent.last == source.length && drops.isEmpty, "progress rises to the whole source: \(drops.prefix(5)) of \(sent.count)")
        let stored = try await peer.stored(key: target.key)
        #expect(stored.size == source.length)
        #expect(stored.sha256 == (try Digest.sha256(of: source)))
    }

    @Test func aStreamUploadIsByteExact() async throws {
        // 5 MiB parts doubling every 2 parts: 5, 5, then the rest (3 MiB + 7), read once.
        let length: Int64 = 13 << 20 + 7
        let client = try client {
            $0.streamStepParts = 2
            $0.concurrency = 2
        }
        let target = try location()
        let result = try await client.uploadStream(SyntheticStream(length: length, seed: 42), to: target)
        #expect(result.partCount == 3)
        #expect(result.length == length)
        let stored = try await peer.stored(key: target.key)
        #expect(stored.size == length)
        #expect(stored.sha256 == (try Digest.sha256(of: SyntheticByteSource(length: length, seed: 42))))
    }

    /// Without --part-size, parts are the largest whole MiB whose signed body fits the sized-body
    /// limit (7 MiB): an 8 MiB part's aws-chunked body is 8 MiB and some 12 KiB of signatures,
    /// which URLSession on Linux would send chunked (before: 403 SignatureDoesNotMatch at part 1).
    @Test func theDefaultPartSizeFitsTheLimit() async throws {
        let source = SyntheticByteSource(length: 20 << 20, seed: 44)
        var options = S3Options()
        options.stateDirectory = try s3TemporaryDirectory("s3-urlsession-state")
        let client = S3Client(
            configuration: peer.configuration,
            options: options, transport: URLSessionTransport())
        let target = try location()
        let result = try await client.upload(
            S3Source(source, identity: "synthetic:44", fingerprint: S3SourceFingerprint(size: source.length)),
            to: target)
        #expect(result.partCount == 3)
        let stored = try await peer.stored(key: target.key)
        #expect(stored.sha256 == (try Digest.sha256(of: source)))
        #expect(throws: S3Error.self, "an 8 MiB part is refused at once") { try client.checkSizedBody(8 << 20, "an 8 MiB part") }
        #expect(client.largestSizedBody.map { $0 >= 7 << 20 && $0 < 8 << 20 } == true, "\(String(describing: client.largestSizedBody))")
    }

    /// A part longer than `URLSessionTransport.sizedBodyLimit` would go chunked (no
    /// Content-Length) on Linux, and SeaweedFS refuses such a signed body (403
    /// SignatureDoesNotMatch): refused before any request, with the limit and what to do.
    @Test(arguments: [false, true])
    func partsAboveTheSizedBodyLimitAreRefusedBeforeAnyRequest(stream: Bool) async throws {
        let source = SyntheticByteSource(length: 9 << 20 + 3, seed: 43)
        let client = try client { $0.partSize = 9 << 20 }
        let target = try location()
        let error = await #expect(throws: S3Error.self) {
            if stream {
                _ = try await client.uploadStream(SyntheticStream(length: source.length, seed: 43), to: target)
            } else {
                _ = try await client.upload(
                    S3Source(source, identity: "synthetic:43", fingerprint: S3SourceFingerprint(size: source.length)),
                    to: target)
            }
        }
        #expect(error?.code == .invalidOption)
        #expect(error?.message.contains("up to \(URLSessionTransport.sizedBodyLimit) bytes as sent") == true, "\(String(describing: error))")
        #expect(error?.uploadID == nil, "no multipart upload was created")
        #expect(try await peer.stored(key: target.key).status == 404)
    }
}
