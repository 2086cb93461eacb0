import Foundation
import Synchronization
import Testing
@testable import Sluice
@testable import SluiceReceiver
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// `S3Client` in the library against the SeaweedFS scripts/test.sh starts, read back by boto3.
@Suite(
    .seaweed, .serialized,
    .hangGuard)
struct S3ClientSeaweedTests {
    let peer = SeaweedPeer.current!

    func client(_ configure: (inout S3Options) -> Void = { _ in }) throws -> S3Client {
        try peer.client(state: "s3-client-state") {
            $0.retryDelay = .milliseconds(10); configure(&$0)
        }
    }

    func location() throws -> S3Location { try peer.location("client/") }

    /// Over http, `.auto` signs an object body under `S3Client.headerSignedBodyLimit` in the
    /// header (its SHA-256, the CRC32C in `x-amz-checksum-crc32c`) and sends it plain; from the
    /// limit on, signed aws-chunked with the CRC32C in the trailer. SeaweedFS checks both
    /// signatures and checksums; every object is stored whole, and the checksum the server
    /// reports is the one Sluice computed. The request each went as is seen on its way to libcurl.
    @Test func smallBodiesAreSignedInTheHeaderLongerOnesInChunks() async throws {
        final class Recording: UploadTransport {
            let curl = CurlTransport()
            /// Body length -> (x-amz-content-sha256, x-amz-checksum-crc32c, Content-Encoding).
            let seen = Mutex<[Int64: (String?, String?, String?)]>([:])
            func send(
                _ request: UploadRequest, body: UploadBody, options: UploadOptions,
                progress: @escaping @Sendable (Int64) -> Void
            ) async throws -> UploadResponse {
                if request.method == "PUT" {
                    let decoded = request.header("x-amz-decoded-content-length").flatMap { Int64($0) } ?? body.length.value ?? -1
                    seen.withLock {
                        $0[decoded] = (
                            request.header("x-amz-content-sha256"), request.header("x-amz-checksum-crc32c"),
                            request.header("Content-Encoding")
                        )
                    }
                }
                return try await curl.send(request, body: body, options: options, progress: progress)
            }
        }
        let recording = Recording()
        var options = S3Options()
        options.stateDirectory = try s3TemporaryDirectory("s3-client-state")
        let client = S3Client(configuration: peer.configuration, options: options, transport: recording)
        let limit = S3Client.headerSignedBodyLimit
        for (index, length) in [0, 1, 16 << 10, limit - 1, limit, limit + 70_001].enumerated() {
            let source = SyntheticByteSource(length: length, seed: UInt64(40 + index))
            let target = try location()
            let result = try await client.upload(
                S3Source(source, identity: "mem:\(index)", fingerprint: S3SourceFingerprint(size: length)),
                to: target)
            let expectedCRC = try ChecksumHasher.checksum(.crc32c, of: source).base64
            // Typed: the algorithm, the value and its type; "CRC32C …" only as its description.
            #expect(result.checksum?.algorithm == .crc32c && result.checksum?.base64 == expectedCRC, "\(length) bytes")
            #expect(result.checksum?.type == .fullObject && result.checksum?.partCount == nil, "\(length) bytes")
            #expect(result.checksum?.description == "CRC32C \(expectedCRC)", "\(length) bytes")
            // The ETag of a PutObject is the hex MD5 of the bytes, without HTTP's quotes.
            var bytes = [UInt8](repeating: 0, count: Int(length))
            _ = try bytes.withUnsafeMutableBytes { try source.read(into: $0, at: 0) }
            let md5 = Digest(.md5)
            md5.update(bytes)
            #expect(result.eTag == md5.finalizeHex(), "\(length) bytes")
            #expect(result.quotedETag == "\"\(result.eTag)\"")
            let stored = try await peer.stored(key: target.key)
            let sha256 = try Digest.sha256(of: source)
            #expect(stored.size == length && stored.sha256 == sha256, "\(length) bytes")
            let (contentHash, crcHeader, encoding) = try #require(recording.seen.withLock { $0[length] }, "\(length) bytes")
            if length < limit {
                #expect(contentHash == sha256, "\(length) bytes")
                #expect(crcHeader == expectedCRC && encoding == nil, "\(length) bytes")
            } else {
                #expect(contentHash == "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER", "\(length) bytes")
                #expect(crcHeader == nil && encoding == "aws-chunked", "\(length) bytes")
            }
        }
    }

    @Test func streamPartsGrowAndTheObjectIsWhole() async throws {
        // 5 MiB parts doubling every 2 parts: 5, 5, 10, 10, 20, then the rest (7 MiB + 3).
        let length: Int64 = 57 << 20 + 3
        let client = try client {
            $0.partSize = 5 << 20
            $0.streamStepParts = 2
            $0.concurrency = 3
        }
        let target = try location()
        let result = try await client.uploadStream(SyntheticStream(length: length, seed: 21), to: target)
        #expect(result.partCount == 6)
        #expect(result.length == length)
        #expect(result.checksum?.algorithm == .crc32c, "Complete's CRC32C was checked")
        #expect(!result.eTag.hasPrefix("\"") && result.eTag.hasSuffix("-6"), "ETag \(result.eTag): unquoted, 6 parts")
        let stored = try await peer.stored(key: target.key)
        #expect(stored.size == length)
        #expect(stored.sha256 == (try Digest.sha256(of: SyntheticByteSource(length: length, seed: 21))))
    }

    @Test func aFailingStreamIsAbortedSoNothingIsLeftToBill() async throws {
        let client = try client { $0.partSize = 5 << 20 }
        struct Broken: Error {}
        final class FailingStream: SequentialByteSource, @unchecked Sendable {
            var sent: Int64 = 0
            let length = BodyLength.unknown
            func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
                if sent >= 11 << 20 { throw Broken() }
                let count = min(buffer.count, Int((11 << 20) - sent))
                memset(buffer.baseAddress!, 0x61, count)
                sent += Int64(count)
                return count
            }
        }
        let target = try location()
        do {
            _ = try await client.uploadStream(FailingStream(), to: target)
            Issue.record("a failing stream was reported as uploaded")
        } catch let error as S3Error {
            #expect(error.code == .source)
            #expect(error.message.contains("aborted"), "\(error.message)")
        }
        #expect(try await peer.stored(key: target.key).status == 404)
    }

    /// S3's 10,000 parts of at least 5 MiB are 50 GiB: the limit is lowered to 3 (a test-only
    /// knob) to reach it with 5 MiB parts against the real server.
    @Test func anEqualPartsStreamPastThePartLimitFailsNamingItAndIsAborted() async throws {
        let client = try client {
            $0.partSize = 5 << 20
            $0.equalParts = true
            $0.partLimit = 3
            $0.concurrency = 2
        }
        let target = try location()
        do {
            _ = try await client.uploadStream(SyntheticStream(length: 15 << 20 + 1, seed: 4), to: target)
            Issue.record("a stream past the part limit was reported as uploaded")
        } catch let error as S3Error {
            #expect(error.code == .tooManyParts)
            #expect(error.message.contains("the limit of 3 parts (15728640 bytes in equal parts of 5242880 bytes)"), "\(error.message)")
            #expect(error.message.contains("was aborted"), "\(error.message)")
            #expect(error.uploadID != nil)
        }
        #expect(try await client.listMultipartUploads(target).isEmpty, "nothing is left to bill")
        #expect(try await peer.stored(key: target.key).status == 404)
        // Exactly at the limit, the stream completes.
        let result = try await client.uploadStream(SyntheticStream(length: 15 << 20, seed: 4), to: target)
        #expect(result.partCount == 3)
        #expect(try await peer.stored(key: target.key).size == 15 << 20)
    }

    @Test func aFailingSourceKeepsTheStateAndTheSameSourceResumes() async throws {
        let length: Int64 = 23 << 20 + 5
        let good = SyntheticByteSource(length: length, seed: 8)
        let fingerprint = S3SourceFingerprint(size: length)
        let client = try client {
            $0.partSize = 5 << 20
            $0.concurrency = 1
            $0.retries = 0
        }
        let target = try location()
        let faulty = FaultySource(base: good, faultOffset: 12 << 20, fault: .fail)
        do {
            _ = try await client.upload(S3Source(faulty, identity: "synthetic-8", fingerprint: fingerprint), to: target)
            Issue.record("a failing source was reported as uploaded")
        } catch let error as S3Error {
            #expect(error.code == .source)
            #expect(error.uploadID != nil)
            #expect(error.message.contains("part 3"), "\(error.message)")
        }
        let store = S3StateStore(directory: client.options.stateDirectory)
        let record = try #require(
            try store.load(
                endpoint: client.configuration.endpointIdentity, bucket: target.bucket,
                key: target.key, source: "synthetic-8"))
        // Another source under the same identity is refused.
        await #expect(throws: S3Error.self) {
            _ = try await client.upload(
                S3Source(good, identity: "synthetic-8", fingerprint: S3SourceFingerprint(size: length, inode: 1)),
                to: target)
        }
        let result = try await client.upload(S3Source(good, identity: "synthetic-8", fingerprint: fingerprint), to: target)
        #expect(result.resumed && result.uploadID == record.uploadID)
        #expect(result.partsSkipped == 2)
        #expect(result.partCount == 5)
        #expect(result.bytesSent < length - (10 << 20) + (1 << 20), "the two parts at the server were not sent again")
        #expect(
            try store.load(
                endpoint: client.configuration.endpointIdentity, bucket: target.bucket, key: target.key,
                source: "synthetic-8") == nil)
        let stored = try await peer.stored(key: target.key)
        #expect(stored.sha256 == (try Digest.sha256(of: good)))
    }
}
