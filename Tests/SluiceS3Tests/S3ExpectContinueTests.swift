import Foundation
import Synchronization
import Testing
@testable import Sluice
import SluiceTestSupport
@_spi(Floors) import SluicePrimitives

/// Which requests wait for `100 Continue`: a `PutObject` over 2 MiB and every part do (a
/// refusal saves the body; a reset part is retried, and counted, by the retry policy), a smaller
/// `PutObject` goes at once (the wait was a round trip per small object). A recording transport
/// only to see the options each request gets; the wire is libcurl's.
struct S3ExpectContinueTests {
    final class Recorder: UploadTransport {
        /// (method, is a part, body length, expects continue) per request.
        let seen = Mutex<[(String, Bool, Int64, Bool)]>([])
        /// (action by method and query, `answerKeepAlive`) per request.
        let keepAlive = Mutex<[(String, Duration?)]>([])

        func send(
            _ request: UploadRequest, body: UploadBody, options: UploadOptions,
            progress: @escaping @Sendable (Int64) -> Void
        ) async throws -> UploadResponse {
            let length = body.length.value ?? -1
            let part = (request.url.query ?? "").contains("partNumber=")
            seen.withLock { $0.append((request.method, part, length, options.expectsContinue)) }
            keepAlive.withLock { $0.append(("\(request.method) \(request.url.query ?? "")", options.answerKeepAlive)) }
            if case .random(let source, _) = body.storage, let chunked = source as? AWSChunkedBody { _ = try chunked.trailerChecksum() }
            let query = request.url.query ?? ""
            let xml: String
            if request.method == "POST", query.hasPrefix("uploads") {
                xml = "<InitiateMultipartUploadResult><UploadId>U</UploadId></InitiateMultipartUploadResult>"
            } else if request.method == "POST" {
                xml = "<CompleteMultipartUploadResult><ETag>\"e-2\"</ETag></CompleteMultipartUploadResult>"
            } else {
                xml = ""
            }
            return UploadResponse(
                status: 200, headers: [HTTPHeader(name: "ETag", value: "\"e\"")], body: Data(xml.utf8),
                bytesSent: length, url: request.url)
        }
    }

    @Test func onlyPartsAndObjectsOverTwoMiBWaitForContinue() async throws {
        let recorder = Recorder()
        var options = S3Options()
        options.partSize = 5 << 20
        options.stateDirectory = NSTemporaryDirectory() + "sluice-expect-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: options.stateDirectory!) }
        let client = S3Client(
            configuration: S3Configuration(
                credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"),
                endpoint: URL(string: "http://127.0.0.1:9")!),
            options: options, transport: recorder)
        let small = S3Source(SyntheticByteSource(length: 16 << 10, seed: 1), identity: "small", fingerprint: S3SourceFingerprint(size: 16 << 10))
        _ = try await client.upload(small, to: S3Location(parsing: "s3://bucket/small"))
        let large = S3Source(
            SyntheticByteSource(length: (5 << 20) + 123, seed: 2), identity: "large",
            fingerprint: S3SourceFingerprint(size: (5 << 20) + 123))
        _ = try await client.upload(large, to: S3Location(parsing: "s3://bucket/large"))
        let seen = recorder.seen.withLock { $0 }
        let puts = seen.filter { $0.0 == "PUT" }
        #expect(puts.count == 3)
        // The small object goes at once; both parts wait, the short last one too.
        #expect(puts.filter { !$0.1 }.map { $0.3 } == [false])
        #expect(puts.filter { $0.1 }.map { $0.3 } == [true, true])
        #expect(puts.contains { $0.1 && $0.2 < S3Client.expectContinueThreshold })
        // Only CompleteMultipartUpload's answer may be kept alive with whitespace (AnswerPace).
        let kept = recorder.keepAlive.withLock { $0 }.filter { $0.1 != nil }
        #expect(kept.count == 1 && kept.allSatisfy { $0.0.hasPrefix("POST uploadId=") && $0.1 == S3Client.completionKeepAlive }, "\(kept)")
    }
}
