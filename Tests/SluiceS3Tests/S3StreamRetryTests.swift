import Foundation
import Testing
@testable import Sluice
import SluiceTestSupport

/// A stream (stdin as the library sees it) whose parts are each reset mid-body once and
/// retried at once: the pooled part buffers are refilled while nothing reads them any more
/// (run under ThreadSanitizer by scripts/test.sh: a read-ahead left running by a failed
/// attempt, reading a buffer the pool refills, is a race it reports).
@Suite("S3 stream parts reset mid-body, retried with no delay", .serialized, .hangGuard)
struct S3StreamRetryTests {
    struct Stats: Decodable {
        var parts: [String: String]
        var attempts: [String: Int]
    }

    @Test(arguments: [1, 2])
    func resetPartsAreRetriedAndArriveWhole(concurrency: Int) async throws {
        let peer = try CurlSink(script: "s3_reset_server.py")
        defer { peer.stop() }
        var options = S3Options()
        options.partSize = 5 << 20
        options.equalParts = true
        options.concurrency = concurrency
        options.retries = 2
        options.retryDelay = .zero
        options.payloadSigning = .chunked
        let configuration = S3Configuration(
            credentials: S3Credentials(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret"),
            endpoint: URL(string: peer.url(""))!)
        let client = S3Client(configuration: configuration, options: options)
        // The last part above the curl transport's inline limit (64 KiB): a request that small
        // goes out in one write, and libcurl itself sends it again when a reused connection
        // dies before any answer, so sluice would not count that retry.
        let length: Int64 = 6 * (5 << 20) + 123_457
        let stream = SyntheticStream(length: length, seed: 8)
        let result = try await client.uploadStream(stream, to: S3Location(parsing: "s3://bucket/reset.bin"))
        #expect(result.partCount == 7 && result.length == length)
        #expect(result.retries == 7, "each part was reset once and retried once: \(result.retries)")

        let request = try UploadRequest(url: peer.url("/stats"), method: "GET")
        let answer = try await CurlTransport().send(request, body: .bytes(MemoryByteSource([UInt8]())), options: UploadOptions()) { _ in }
        let stats = try JSONDecoder().decode(Stats.self, from: answer.body)
        #expect(stats.attempts.count == 7 && stats.attempts.values.allSatisfy { $0 == 2 }, "\(stats.attempts)")
        for number in 1...7 {
            let offset = Int64(number - 1) * (5 << 20)
            let range = offset..<min(length, offset + (5 << 20))
            let expected = try Digest.sha256(of: SliceByteSource(stream.source, range: range))
            #expect(stats.parts["\(number)"] == expected, "part \(number) arrived with other bytes")
        }
    }
}
